#include "db/verify_tenants.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace shoal::db {

absl::Status CheckTenantRows(storage::RecordStore* store, uint32_t cid,
                             const absl::flat_hash_map<uint64_t, Key>& records,
                             const ProblemFn& problem, TenantRowsView* view) {
  auto stored = store->LoadTenants(cid);
  if (!stored.ok()) {
    problem(absl::StrCat("tenant rows: ", stored.status().message()));
    return absl::OkStatus();
  }
  for (const storage::StoredTenant& t : stored->tenants) {
    if (!view->names.emplace(t.id, t.name).second) {
      problem(absl::StrCat("tenant '", t.name, "' shares id ", t.id, " with tenant '",
                           view->names[t.id], "'"));
    }
    if (t.id >= stored->next_tenant_id) {
      problem(absl::StrCat("tenant '", t.name, "' id ", t.id, " is at or above the counter"));
    }
  }
  auto check = [&](const char* what, tenants::TenantId t, uint64_t iid) {
    if (!view->names.contains(t)) {
      problem(absl::StrCat(what, " row of record ", iid, " names unknown tenant id ", t));
      return false;
    }
    if (!records.contains(iid)) {
      problem(
          absl::StrCat(what, " row of tenant '", view->names[t], "' names missing record ", iid));
      return false;
    }
    return true;
  };
  for (const auto& [t, iid] : stored->owners) {
    if (!check("owner", t, iid)) continue;
    if (!view->owner.emplace(iid, t).second) {
      problem(absl::StrCat("record ", iid, " has two owners: tenants '", view->names[t], "' and '",
                           view->names[view->owner[iid]], "'"));
    }
  }
  for (const auto& [t, iid] : stored->grants) {
    if (!check("grant", t, iid)) continue;
    const auto owner = view->owner.find(iid);
    if (owner != view->owner.end() && owner->second == t) {
      problem(absl::StrCat("record ", iid, " is granted to its owner '", view->names[t], "'"));
    }
    view->grants[iid].push_back(t);
  }
  return absl::OkStatus();
}

void CheckAccessTable(const tenants::AccessTable& access, const TenantRowsView& view,
                      const ProblemFn& problem) {
  size_t entries = 0;
  for (const auto& [iid, t] : view.owner) {
    if (access.OwnerOf(iid) != t) {
      problem(absl::StrCat("in memory: record ", iid, " is owned by tenant id ",
                           access.OwnerOf(iid), ", stored ", t));
    }
  }
  for (const auto& [iid, stored] : view.grants) {
    std::vector<tenants::TenantId> mem = access.GrantsOf(iid);
    std::vector<tenants::TenantId> want = stored;
    std::sort(mem.begin(), mem.end());
    std::sort(want.begin(), want.end());
    if (mem != want) {
      problem(absl::StrCat("in memory: record ", iid, " is granted to ", mem.size(),
                           " tenants, stored ", want.size()));
    }
  }
  access.ForEachId(
      [&](uint64_t iid, tenants::TenantId owner, std::span<const tenants::TenantId> grants) {
        ++entries;
        if (owner != tenants::kNoTenant && !view.owner.contains(iid)) {
          problem(absl::StrCat("in memory: record ", iid, " has an owner the rows do not record"));
        }
        if (!grants.empty() && !view.grants.contains(iid)) {
          problem(absl::StrCat("in memory: record ", iid, " has grants the rows do not record"));
        }
        for (tenants::TenantId t : grants) {
          if (!access.Visible(t, iid)) {
            problem(absl::StrCat("in memory: record ", iid, " granted to ", t,
                                 " is not visible to it"));
          }
        }
        if (owner != tenants::kNoTenant && !access.Visible(owner, iid)) {
          problem(absl::StrCat("in memory: record ", iid, " is not visible to its owner ", owner));
        }
      });
  for (const auto& [t, name] : view.names) {
    if (!access.HasTenant(t)) problem(absl::StrCat("in memory: tenant '", name, "' is missing"));
  }
}

void CheckTenantTree(const tenants::TenantTree& tree, const tenants::AccessTable& access,
                     const TenantRowsView& view, const ProblemFn& problem) {
  for (const auto& [t, name] : view.names) {
    // A lambda may not capture a structured binding before C++20's P1091 (clang-14: the ASan
    // build of scripts/sanitize): the lambdas capture a plain reference to the name.
    const std::string& tenant_name = name;
    std::vector<std::pair<uint64_t, uint32_t>> ids;
    for (const auto* set : {access.Owned(t), access.Granted(t)}) {
      if (set == nullptr) continue;
      set->ForEach([&](uint64_t iid) {
        const std::optional<uint32_t> leaf = tree.LeafOf(iid);
        if (!leaf.has_value()) {
          problem(absl::StrCat("in memory: tenant '", tenant_name, "' sees record ", iid,
                               ", which its tree does not hold (a false negative)"));
          return;
        }
        ids.emplace_back(iid, *leaf);
      });
    }
    tree.Check(t, ids,
               [&](std::string p) { problem(absl::StrCat("tenant '", tenant_name, "': ", p)); });
  }
}

}  // namespace shoal::db

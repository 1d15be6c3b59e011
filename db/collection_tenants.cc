// Collection's tenants (shoal/db.h "Tenants"): the catalog of tenants, the owner and grant rows
// written with each record (storage/records/record_store_tenants.cc) and the access table in RAM
// (tenants/access_table.h) that every tenant read checks.
#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/collection.h"
#include "db/validation.h"
#include "shoal/record_checks.h"

namespace shoal::db {

uint64_t Collection::RecordBytes(const Record& r) { return RecordQuotaBytes(r); }

absl::StatusOr<std::shared_ptr<TenantEntry>> Collection::FindTenant(std::string_view name) const {
  const auto it = state_.tenants.find(name);
  if (it == state_.tenants.end()) {
    SHOAL_RETURN_IF_ERROR(ValidateCollectionName(name, "tenant"));
    return absl::NotFoundError(absl::StrCat("tenant: '", std::string(name),
                                            "' not found in collection '", spec_.name, "'"));
  }
  return *it;
}

size_t Collection::TenantEntriesBytes() const {
  // A slot and a control byte per capacity in each map; an entry and its shared_ptr's control
  // block in one allocation (make_shared); a name past the string's inline capacity.
  size_t bytes =
      state_.tenants.capacity() * (sizeof(decltype(state_.tenants)::value_type) + 1) +
      state_.tenant_by_id.capacity() * (sizeof(decltype(state_.tenant_by_id)::value_type) + 1);
  constexpr size_t kControlBlock = 16;
  for (const auto& entry : state_.tenants) {
    bytes += sizeof(TenantEntry) + kControlBlock + entry->stats.HeapBytes();
    if (entry->meta.name.capacity() > std::string().capacity()) {
      bytes += entry->meta.name.capacity() + 1;
    }
  }
  return bytes;
}

// ---- Upsert, Delete ----

absl::Status Collection::PlanTenantRows(std::span<const Record> records,
                                        const std::vector<uint64_t>& ids,
                                        const std::vector<std::optional<uint64_t>>& old,
                                        storage::RecordStore::Batch* batch,
                                        TenantPlan* plan) const {
  const tenants::AccessTable& access = state_.access;
  if (plan->writer == tenants::kNoTenant && access.size() == 0) return absl::OkStatus();
  plan->owners.assign(records.size(), tenants::kNoTenant);
  plan->grants.assign(records.size(), {});
  plan->bytes.assign(records.size(), 0);
  for (size_t i = 0; i < records.size(); ++i) {
    tenants::TenantId owner = plan->writer;
    uint64_t old_bytes = 0;
    if (old[i].has_value()) {
      const tenants::TenantId was = access.OwnerOf(*old[i]);
      if (plan->writer != tenants::kNoTenant && was != plan->writer) {
        return absl::PermissionDeniedError(
            absl::StrCat("records[", i, "].key: ", KeyDebugString(records[i].key),
                         " exists and is not owned by the writing tenant"));
      }
      if (plan->writer == tenants::kNoTenant) owner = was;  // an untenanted rewrite keeps it
      old_bytes = access.BytesOf(*old[i]);
      if (was != tenants::kNoTenant) batch->DeleteOwner(id_, was, *old[i]);
      for (tenants::TenantId g : access.GrantsOf(*old[i])) {
        batch->DeleteGrant(id_, g, *old[i]);
        batch->PutGrant(id_, g, ids[i]);
        plan->grants[i].push_back(g);
      }
    }
    plan->owners[i] = owner;
    if (owner == tenants::kNoTenant) continue;
    plan->bytes[i] = RecordBytes(records[i]);
    batch->PutOwner(id_, owner, ids[i]);
    if (owner == plan->writer) {
      plan->added_vectors += old[i].has_value() ? 0 : 1;
      plan->added_bytes += static_cast<int64_t>(plan->bytes[i]) - static_cast<int64_t>(old_bytes);
    }
  }
  return absl::OkStatus();
}

absl::Status Collection::ReserveQuota(const TenantEntry& writer, const TenantPlan& plan) {
  const TenantQuotas& q = writer.meta.quotas;
  Reserved& r = reserved_[writer.meta.id];
  const uint64_t vectors = state_.access.OwnedCount(writer.meta.id) + r.vectors;
  const int64_t bytes = static_cast<int64_t>(state_.access.OwnedBytes(writer.meta.id)) + r.bytes;
  if (q.max_vectors != 0 && plan.added_vectors > 0 &&
      vectors + plan.added_vectors > q.max_vectors) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "quota max_vectors of tenant '", writer.meta.name, "' (", q.max_vectors,
        ") would be exceeded: it owns ", vectors, " and the upsert adds ", plan.added_vectors));
  }
  if (q.max_bytes != 0 && plan.added_bytes > 0 &&
      bytes + plan.added_bytes > static_cast<int64_t>(q.max_bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "quota max_bytes of tenant '", writer.meta.name, "' (", q.max_bytes,
        ") would be exceeded: it owns ", bytes, " bytes and the upsert adds ", plan.added_bytes));
  }
  r.vectors += plan.added_vectors;
  r.bytes += plan.added_bytes;
  return absl::OkStatus();
}

void Collection::ReleaseQuota(const TenantPlan& plan) {
  if (plan.writer == tenants::kNoTenant) return;
  absl::MutexLock lock(&write_mu_);
  auto it = reserved_.find(plan.writer);
  if (it == reserved_.end()) return;
  it->second.vectors -= plan.added_vectors;
  it->second.bytes -= plan.added_bytes;
  if (it->second.vectors == 0 && it->second.bytes == 0) reserved_.erase(it);
}

void Collection::ApplyTenantRows(const TenantPlan& plan, const std::vector<uint64_t>& ids,
                                 const std::vector<std::optional<uint64_t>>& old,
                                 const std::vector<uint32_t>& leaves) {
  tenants::AccessTable& access = state_.access;
  for (size_t i = 0; i < old.size(); ++i) {
    if (!old[i].has_value()) continue;
    DetachFromTenantTree(*old[i]);
    access.Remove(*old[i]);
  }
  if (plan.owners.empty()) return;
  tenants::TenantTree& tree = state_.tenant_tree;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (plan.owners[i] != tenants::kNoTenant) {
      access.SetOwner(ids[i], plan.owners[i], plan.bytes[i]);
      tree.Attach(plan.owners[i], ids[i], leaves[i]);
    }
    for (tenants::TenantId g : plan.grants[i]) {
      if (access.Grant(ids[i], g)) tree.Attach(g, ids[i], leaves[i]);
    }
  }
}

void Collection::DetachFromTenantTree(uint64_t iid) {
  const tenants::TenantId owner = state_.access.OwnerOf(iid);
  if (owner != tenants::kNoTenant) state_.tenant_tree.Detach(owner, iid);
  for (tenants::TenantId g : state_.access.GrantsOf(iid)) state_.tenant_tree.Detach(g, iid);
  state_.tenant_tree.Forget(iid);
}

std::vector<uint32_t> Collection::TenantTreeLeaves(std::span<const uint64_t> iids) const {
  std::vector<uint32_t> leaves(iids.size(), 0);
  std::vector<size_t> unknown;  // indexes into iids
  for (size_t i = 0; i < iids.size(); ++i) {
    if (std::optional<uint32_t> leaf = state_.tenant_tree.LeafOf(iids[i])) {
      leaves[i] = *leaf;
    } else if (state_.spann != nullptr) {
      unknown.push_back(i);
    }
  }
  // Ids no tenant saw yet (an unowned record's first grant; every id at a rebuild): their vectors
  // from the store, one multi-get per 1,024 records. A failed read leaves an id on leaf 0:
  // searches then reach it through the exact fallback only.
  constexpr size_t kChunk = 1024;
  std::vector<uint64_t> ids;
  std::vector<float> scratch;
  for (size_t first = 0; first < unknown.size(); first += kChunk) {
    const size_t n = std::min(kChunk, unknown.size() - first);
    ids.clear();
    for (size_t j = 0; j < n; ++j) ids.push_back(iids[unknown[first + j]]);
    absl::StatusOr<std::vector<std::optional<Record>>> records = store_->GetRecords(id_, ids);
    if (!records.ok()) continue;
    for (size_t j = 0; j < n; ++j) {
      const std::optional<Record>& r = (*records)[j];
      if (!r.has_value()) continue;
      leaves[unknown[first + j]] =
          WriteBuffer::LeafOf(*state_.spann, IndexForm(r->vector, &scratch));
    }
  }
  return leaves;
}

void Collection::RebuildTenantTree() {
  const uint32_t cap = options_.tenant_shortlist_cap;
  const tenants::AccessTable* access = &state_.access;
  state_.tenant_tree = state_.spann != nullptr
                           ? tenants::TenantTree(state_.spann->tree(), access, cap)
                           : tenants::TenantTree(access, cap);
  std::vector<uint64_t> ids;
  state_.access.ForEachId([&](uint64_t iid, tenants::TenantId, std::span<const tenants::TenantId>) {
    ids.push_back(iid);
  });
  state_.tenant_tree.Rebuild(ids, TenantTreeLeaves(ids));
}

void Collection::AddDeleteRows(uint64_t iid, const Key& key,
                               storage::RecordStore::Batch* batch) const {
  batch->DeleteRecord(id_, iid, key);
  // Tombstoned even while only the buffer holds it: a drain may be writing it to postings.
  if (state_.spann != nullptr) batch->MarkStale(id_, iid);
  const tenants::TenantId owner = state_.access.OwnerOf(iid);
  if (owner != tenants::kNoTenant) batch->DeleteOwner(id_, owner, iid);
  for (tenants::TenantId g : state_.access.GrantsOf(iid)) batch->DeleteGrant(id_, g, iid);
}

void Collection::ApplyDeletes(const std::vector<uint64_t>& ids) {
  for (uint64_t iid : ids) {
    state_.buffer.Remove(iid);
    state_.attrs.Remove(iid);
    DetachFromTenantTree(iid);
    state_.access.Remove(iid);
    if (state_.spann != nullptr) state_.MarkStale(iid);
    state_.id_of.Erase(state_.key_of.At(iid));
    state_.key_of.Erase(iid);
  }
}

void Collection::AddTenantEntry(storage::StoredTenant t) {
  auto entry = std::make_shared<TenantEntry>();
  entry->meta = std::move(t);
  state_.access.AddTenant(entry->meta.id);
  state_.tenant_by_id[entry->meta.id] = entry.get();
  state_.tenants.insert(std::move(entry));
}

// ---- Open ----

absl::Status Collection::LoadTenants() {
  SHOAL_ASSIGN_OR_RETURN(storage::StoredTenants stored, store_->LoadTenants(id_));
  state_.next_tenant_id = stored.next_tenant_id;
  for (storage::StoredTenant& t : stored.tenants) AddTenantEntry(std::move(t));
  // Rows of unknown tenants cannot exist (a drop removes them in its batch); Verify reports
  // them if they do, and they are ignored here.
  for (const auto& [t, iid] : stored.owners) {
    if (state_.access.HasTenant(t)) state_.access.SetOwner(iid, t, 0);
  }
  for (const auto& [t, iid] : stored.grants) {
    if (state_.access.HasTenant(t)) state_.access.Grant(iid, t);
  }
  return absl::OkStatus();
}

void Collection::ForgetDeadTenantRows() {
  std::vector<uint64_t> dead;
  state_.access.ForEachId([&](uint64_t iid, tenants::TenantId, std::span<const tenants::TenantId>)
                              ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                if (state_.key_of.Find(iid) == nullptr) dead.push_back(iid);
                              });
  for (uint64_t iid : dead) state_.access.Remove(iid);
}

}  // namespace shoal::db

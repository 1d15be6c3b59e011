// Collection's tenant administration: create, drop, list, describe, quotas, state, grants,
// counts and deletes by tenant. Tenant rows change in synced batches; grants and deletes at
// the caller's sync level, in the same batch as the rows they describe.
#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/collection.h"
#include "db/collection_key_claim.h"
#include "db/validation.h"

namespace shoal::db {
namespace {

constexpr uint32_t kMaxTenantPage = 10000;
// A Grant or Revoke of at most this many keys asks for their access lines first.
constexpr size_t kPrefetchKeys = 8;

TenantInfo InfoOf(const TenantEntry& t, const tenants::AccessTable& access) {
  TenantInfo info;
  info.name = t.meta.name;
  info.state = t.meta.state;
  info.quotas = t.meta.quotas;
  info.vectors_owned = access.OwnedCount(t.meta.id);
  info.vectors_visible = access.VisibleCount(t.meta.id);
  info.bytes_owned = access.OwnedBytes(t.meta.id);
  t.stats.Fill(&info);
  return info;
}

}  // namespace

absl::Status Collection::CreateTenant(const TenantSpec& spec) {
  SHOAL_RETURN_IF_ERROR(ValidateCollectionName(spec.name, "spec.name"));
  SHOAL_RETURN_IF_ERROR(ValidateTenantQuotas(spec.quotas));
  absl::MutexLock write_lock(&write_mu_);
  SHOAL_RETURN_IF_ERROR(CheckNotDropped());
  storage::StoredTenant t;
  t.name = spec.name;
  t.quotas = spec.quotas;
  {
    absl::MutexLock lock(&state_.mu);
    if (state_.tenants.contains(spec.name)) {
      return absl::AlreadyExistsError(absl::StrCat(
          "spec.name: tenant '", spec.name, "' already exists in collection '", spec_.name, "'"));
    }
    // Taken even if the commit fails: its outcome is unknown until a reopen.
    t.id = state_.next_tenant_id++;
  }
  auto batch = store_->NewBatch();
  batch.PutTenant(id_, t);
  SHOAL_RETURN_IF_ERROR(store_->Commit(batch, /*sync=*/true));
  absl::MutexLock lock(&state_.mu);
  AddTenantEntry(std::move(t));
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Collection::DropTenant(std::string_view tenant,
                                                const WriteOptions& options) {
  return DeleteOwned(tenant, options, /*drop=*/true);
}

absl::StatusOr<uint64_t> Collection::DeleteByTenant(std::string_view tenant,
                                                    const WriteOptions& options) {
  return DeleteOwned(tenant, options, /*drop=*/false);
}

absl::StatusOr<uint64_t> Collection::DeleteOwned(std::string_view tenant,
                                                 const WriteOptions& options, bool drop) {
  auto idle = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return in_flight_.empty(); };
  absl::MutexLock write_lock(&write_mu_, absl::Condition(&idle));
  SHOAL_RETURN_IF_ERROR(CheckNotDropped());
  std::shared_ptr<TenantEntry> t;
  std::vector<uint64_t> ids;
  auto batch = store_->NewBatch();
  {
    absl::ReaderMutexLock lock(&state_.mu);
    SHOAL_ASSIGN_OR_RETURN(t, FindTenant(tenant));
    // The tenant's own ids only: never a scan of the collection.
    if (const auto* owned = state_.access.Owned(t->meta.id)) ids = owned->ToVector();  // sorted
    for (uint64_t iid : ids) AddDeleteRows(iid, state_.key_of.At(iid), &batch);
    if (drop) batch.DeleteTenant(id_, t->meta);
  }
  if (ids.empty() && !drop) {
    SHOAL_RETURN_IF_ERROR(SyncIfAsked(options));
    return 0;
  }
  SHOAL_RETURN_IF_ERROR(store_->Commit(batch, options.sync || drop));
  absl::MutexLock lock(&state_.mu);
  ApplyDeletes(ids);
  if (drop) {
    state_.tenant_tree.DropTenant(t->meta.id);
    state_.access.RemoveTenant(t->meta.id);
    state_.tenant_by_id.erase(t->meta.id);
    state_.tenants.erase(t);
  }
  return ids.size();
}

absl::StatusOr<TenantPage> Collection::ListTenants(uint32_t page_size,
                                                   std::string_view page_token) const {
  if (page_size == 0 || page_size > kMaxTenantPage) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size: ", page_size, " is not in 1..", kMaxTenantPage));
  }
  absl::ReaderMutexLock lock(&state_.mu);
  std::vector<const TenantEntry*> after;
  for (const auto& t : state_.tenants) {
    if (t->meta.name > page_token) after.push_back(t.get());
  }
  auto by_name = [](const TenantEntry* a, const TenantEntry* b) {
    return a->meta.name < b->meta.name;
  };
  TenantPage page;
  const size_t n = std::min<size_t>(page_size, after.size());
  std::partial_sort(after.begin(), after.begin() + n, after.end(), by_name);
  for (size_t i = 0; i < n; ++i) page.tenants.push_back(InfoOf(*after[i], state_.access));
  if (n < after.size()) page.next_page_token = page.tenants.back().name;
  return page;
}

absl::StatusOr<TenantInfo> Collection::DescribeTenant(std::string_view tenant) const {
  absl::ReaderMutexLock lock(&state_.mu);
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<TenantEntry> t, FindTenant(tenant));
  return InfoOf(*t, state_.access);
}

absl::Status Collection::SetTenantQuotas(std::string_view tenant, const TenantQuotas& quotas) {
  SHOAL_RETURN_IF_ERROR(ValidateTenantQuotas(quotas));
  absl::MutexLock write_lock(&write_mu_);
  SHOAL_RETURN_IF_ERROR(CheckNotDropped());
  std::shared_ptr<TenantEntry> t;
  storage::StoredTenant meta;
  {
    absl::ReaderMutexLock lock(&state_.mu);
    SHOAL_ASSIGN_OR_RETURN(t, FindTenant(tenant));
    meta = t->meta;
  }
  meta.quotas = quotas;
  auto batch = store_->NewBatch();
  batch.PutTenant(id_, meta);
  SHOAL_RETURN_IF_ERROR(store_->Commit(batch, /*sync=*/true));
  absl::MutexLock lock(&state_.mu);
  t->meta.quotas = quotas;
  return absl::OkStatus();
}

absl::Status Collection::SetTenantState(std::string_view tenant, TenantState state) {
  if (state != TenantState::kActive && state != TenantState::kInactive &&
      state != TenantState::kOffloaded) {
    return absl::InvalidArgumentError(
        absl::StrCat("state: ", static_cast<int>(state), " is not a TenantState"));
  }
  absl::MutexLock write_lock(&write_mu_);
  SHOAL_RETURN_IF_ERROR(CheckNotDropped());
  std::shared_ptr<TenantEntry> t;
  storage::StoredTenant meta;
  {
    absl::ReaderMutexLock lock(&state_.mu);
    SHOAL_ASSIGN_OR_RETURN(t, FindTenant(tenant));
    meta = t->meta;
  }
  if (meta.state == state) return absl::OkStatus();
  meta.state = state;
  auto batch = store_->NewBatch();
  batch.PutTenant(id_, meta);
  SHOAL_RETURN_IF_ERROR(store_->Commit(batch, /*sync=*/true));
  absl::MutexLock lock(&state_.mu);
  t->meta.state = state;
  return absl::OkStatus();
}

void Collection::PrefetchAccess(std::span<const Key> keys, tenants::TenantId t) const {
  for (const Key& key : keys) {
    const uint64_t* iid = state_.id_of.Find(key);
    if (iid == nullptr) continue;
    state_.access.Prefetch(*iid, t);
    state_.tenant_tree.PrefetchLeaf(*iid);
  }
}

absl::Status Collection::SetAccess(std::string_view tenant, std::span<const Key> keys,
                                   const WriteOptions& options, bool grant) {
  SHOAL_RETURN_IF_ERROR(ValidateKeys(keys, options_));
  std::vector<Key> unique_keys(keys.begin(), keys.end());
  if (unique_keys.size() > 1) {
    std::sort(unique_keys.begin(), unique_keys.end());
    unique_keys.erase(std::unique(unique_keys.begin(), unique_keys.end()), unique_keys.end());
  }
  KeyClaim claim(this, std::move(unique_keys));
  SHOAL_RETURN_IF_ERROR(CheckNotDropped());
  tenants::TenantId tid;
  std::vector<uint64_t> changed;
  changed.reserve(keys.size());
  std::vector<uint32_t> leaves;  // of `changed`, for the tenant tree (grants)
  // One owner or grant row is ~40 bytes of WriteBatch (header 12).
  auto batch = store_->NewBatch(16 + 40 * keys.size());
  {
    absl::ReaderMutexLock lock(&state_.mu);
    // A few keys' lines asked for at once: their ids' while the tenant is looked up, then the
    // lines the checks and the tree read.
    const bool prefetch = keys.size() <= kPrefetchKeys;
    for (size_t i = 0; prefetch && i < keys.size(); ++i) state_.id_of.Prefetch(keys[i]);
    SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<TenantEntry> t, FindTenant(tenant));
    tid = t->meta.id;
    if (prefetch) PrefetchAccess(keys, tid);
    // The tenant's two id sets once, not a lookup of the tenant per key (Visible, OwnerOf).
    const tenants::AccessTable::IdSet* owned = state_.access.Owned(tid);
    const tenants::AccessTable::IdSet* was_granted = state_.access.Granted(tid);
    absl::flat_hash_set<uint64_t> seen;
    for (size_t i = 0; i < keys.size(); ++i) {
      const uint64_t* iid = state_.id_of.Find(keys[i]);
      if (iid == nullptr) {
        return absl::NotFoundError(
            absl::StrCat("keys[", i, "]: ", KeyDebugString(keys[i]), " not found"));
      }
      const bool owner = owned != nullptr && owned->contains(*iid);
      if (!grant && owner) {
        return absl::FailedPreconditionError(
            absl::StrCat("keys[", i, "]: ", KeyDebugString(keys[i]), " is owned by tenant '",
                         std::string(tenant), "'; an owner cannot be revoked"));
      }
      const bool granted = !owner && was_granted != nullptr && was_granted->contains(*iid);
      if (owner || granted == grant) continue;
      if (keys.size() > 1 && !seen.insert(*iid).second) continue;  // a key named twice
      if (grant) {
        batch.PutGrant(id_, tid, *iid);
      } else {
        batch.DeleteGrant(id_, tid, *iid);
      }
      changed.push_back(*iid);
    }
    if (grant) leaves = TenantTreeLeaves(changed);
    for (size_t i = 0; prefetch && i < changed.size(); ++i) {
      state_.access.PrefetchGrantees(changed[i]);  // the slot's start has arrived
    }
  }
  if (changed.empty()) return SyncIfAsked(options);
  claim.Unlock();
  SHOAL_RETURN_IF_ERROR(store_->Commit(batch, options.sync));
  absl::MutexLock lock(&state_.mu);
  // The access table id by id, then the tenant's tree once for the ids that changed (one pass
  // for a large batch, tenants/tenant_tree.h).
  size_t applied = 0;
  for (size_t i = 0; i < changed.size(); ++i) {
    if (grant ? !state_.access.Grant(changed[i], tid) : !state_.access.Revoke(changed[i], tid)) {
      continue;
    }
    changed[applied] = changed[i];
    if (grant) leaves[applied] = leaves[i];
    ++applied;
  }
  const std::span<const uint64_t> ids(changed.data(), applied);
  if (grant) {
    state_.tenant_tree.Attach(tid, ids, std::span<const uint32_t>(leaves.data(), applied));
  } else {
    state_.tenant_tree.Detach(tid, ids);
  }
  return absl::OkStatus();
}

absl::StatusOr<KeyTenants> Collection::DescribeKeyTenants(const Key& key) const {
  SHOAL_RETURN_IF_ERROR(ValidateKey(key, "key"));
  absl::ReaderMutexLock lock(&state_.mu);
  const uint64_t* iid = state_.id_of.Find(key);
  if (iid == nullptr) {
    return absl::NotFoundError(absl::StrCat("key: ", KeyDebugString(key), " not found"));
  }
  KeyTenants out;
  auto name_of = [&](tenants::TenantId t) ABSL_NO_THREAD_SAFETY_ANALYSIS -> const std::string* {
    const auto it = state_.tenant_by_id.find(t);
    return it == state_.tenant_by_id.end() ? nullptr : &it->second->meta.name;
  };
  if (const std::string* owner = name_of(state_.access.OwnerOf(*iid))) out.owner = *owner;
  for (tenants::TenantId g : state_.access.GrantsOf(*iid)) {
    if (const std::string* name = name_of(g)) out.grantees.push_back(*name);
  }
  std::sort(out.grantees.begin(), out.grantees.end());
  return out;
}

absl::StatusOr<std::vector<std::string>> Collection::ListKeyTenants(const Key& key) const {
  SHOAL_ASSIGN_OR_RETURN(KeyTenants tenants, DescribeKeyTenants(key));
  std::vector<std::string> out;
  if (!tenants.owner.empty()) out.push_back(std::move(tenants.owner));
  for (std::string& grantee : tenants.grantees) out.push_back(std::move(grantee));
  return out;
}

absl::StatusOr<uint64_t> Collection::CountByTenant(std::string_view tenant, bool owned_only) const {
  absl::ReaderMutexLock lock(&state_.mu);
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<TenantEntry> t, FindTenant(tenant));
  return owned_only ? state_.access.OwnedCount(t->meta.id) : state_.access.VisibleCount(t->meta.id);
}

}  // namespace shoal::db

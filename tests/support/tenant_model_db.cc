#include "tests/support/tenant_model_db.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace shoal::testing {

std::vector<std::string> TenantModelDB::tenants_seen() const {
  absl::MutexLock lock(&mu_);
  return tenants_seen_;
}

void TenantModelDB::Seen(std::string_view tenant) { tenants_seen_.emplace_back(tenant); }

bool TenantModelDB::Visible(const Owned& owned, std::string_view tenant) {
  if (tenant.empty()) return true;
  return owned.owner == tenant || owned.grantees.contains(std::string(tenant));
}

absl::StatusOr<TenantModelDB::Collection*> TenantModelDB::Find(std::string_view collection) {
  absl::StatusOr<CollectionInfo> info = base_->DescribeCollection(collection);
  if (!info.ok()) return info.status();
  return &collections_[info->spec.name];
}

absl::StatusOr<TenantInfo*> TenantModelDB::FindTenant(std::string_view collection,
                                                      std::string_view tenant) {
  absl::StatusOr<Collection*> c = Find(collection);
  if (!c.ok()) return c.status();
  auto it = (*c)->tenants.find(std::string(tenant));
  if (it == (*c)->tenants.end()) {
    return absl::NotFoundError(absl::StrCat("tenant: '", std::string(tenant), "' not found"));
  }
  return &it->second;
}

// ---- Forwarded as they are ----
absl::Status TenantModelDB::CreateCollection(const CollectionSpec& spec) {
  return base_->CreateCollection(spec);
}
absl::StatusOr<std::vector<CollectionInfo>> TenantModelDB::ListCollections() {
  return base_->ListCollections();
}
absl::StatusOr<CollectionInfo> TenantModelDB::DescribeCollection(std::string_view name) {
  return base_->DescribeCollection(name);
}
absl::Status TenantModelDB::DropCollection(std::string_view name) {
  absl::MutexLock lock(&mu_);
  absl::Status s = base_->DropCollection(name);
  if (s.ok()) collections_.erase(std::string(name));
  return s;
}
absl::Status TenantModelDB::CreateAlias(std::string_view alias, std::string_view collection) {
  return base_->CreateAlias(alias, collection);
}
absl::Status TenantModelDB::AlterAlias(std::string_view alias, std::string_view collection) {
  return base_->AlterAlias(alias, collection);
}
absl::Status TenantModelDB::DropAlias(std::string_view alias) { return base_->DropAlias(alias); }
absl::StatusOr<std::vector<AliasInfo>> TenantModelDB::ListAliases() { return base_->ListAliases(); }
absl::Status TenantModelDB::BuildIndex(std::string_view collection, std::string_view spec,
                                       const IndexBuildProgressFn& progress) {
  return base_->BuildIndex(collection, spec, progress);
}
absl::Status TenantModelDB::FlushIndexUpdates(std::string_view collection) {
  return base_->FlushIndexUpdates(collection);
}

absl::Status TenantModelDB::DrainIndexUpdates(std::string_view collection) {
  return base_->DrainIndexUpdates(collection);
}
absl::Status TenantModelDB::Compact(std::string_view collection) {
  return base_->Compact(collection);
}
absl::Status TenantModelDB::Snapshot(const std::string& dir) { return base_->Snapshot(dir); }
absl::Status TenantModelDB::Verify(std::string_view collection, VerifyReport* report) {
  return base_->Verify(collection, report);
}

// ---- Records, with the model's owners and grants ----
absl::Status TenantModelDB::Upsert(std::string_view collection, std::span<const Record> records,
                                   const WriteOptions& options) {
  absl::MutexLock lock(&mu_);
  Seen(options.tenant);
  absl::StatusOr<Collection*> c = Find(collection);
  if (!c.ok()) return c.status();
  if (!options.tenant.empty()) {
    absl::StatusOr<TenantInfo*> tenant = FindTenant(collection, options.tenant);
    if (!tenant.ok()) return tenant.status();
    uint64_t owned = 0;
    for (const auto& [key, record] : (*c)->records) owned += record.owner == options.tenant;
    const uint64_t limit = (*tenant)->quotas.max_vectors;
    if (limit != 0 && owned + records.size() > limit) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "quota max_vectors of tenant '", options.tenant, "' (", limit, ") would be exceeded"));
    }
  }
  WriteOptions base_options = options;
  base_options.tenant.clear();
  if (absl::Status s = base_->Upsert(collection, records, base_options); !s.ok()) return s;
  for (const Record& record : records) (*c)->records[record.key] = Owned{options.tenant, {}};
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::optional<Record>>> TenantModelDB::Get(std::string_view collection,
                                                                      std::span<const Key> keys,
                                                                      const ReadOptions& options) {
  absl::MutexLock lock(&mu_);
  Seen(options.tenant);
  absl::StatusOr<Collection*> c = Find(collection);
  if (!c.ok()) return c.status();
  absl::StatusOr<std::vector<std::optional<Record>>> got = base_->Get(collection, keys);
  if (!got.ok()) return got.status();
  for (std::optional<Record>& record : *got) {
    if (!record.has_value()) continue;
    auto it = (*c)->records.find(record->key);
    if (it == (*c)->records.end() || !Visible(it->second, options.tenant)) record.reset();
  }
  return got;
}

absl::StatusOr<uint64_t> TenantModelDB::Delete(std::string_view collection,
                                               std::span<const Key> keys,
                                               const WriteOptions& options) {
  absl::MutexLock lock(&mu_);
  Seen(options.tenant);
  absl::StatusOr<Collection*> c = Find(collection);
  if (!c.ok()) return c.status();
  std::vector<Key> doomed;
  for (const Key& key : keys) {
    auto it = (*c)->records.find(key);
    if (it == (*c)->records.end() || !Visible(it->second, options.tenant)) continue;
    if (!options.tenant.empty() && it->second.owner != options.tenant) {
      return absl::PermissionDeniedError(
          absl::StrCat("keys: a record tenant '", options.tenant, "' sees but does not own"));
    }
    doomed.push_back(key);
  }
  if (doomed.empty()) return 0;
  WriteOptions base_options = options;
  base_options.tenant.clear();
  absl::StatusOr<uint64_t> deleted = base_->Delete(collection, doomed, base_options);
  if (!deleted.ok()) return deleted.status();
  for (const Key& key : doomed) (*c)->records.erase(key);
  return deleted;
}

absl::StatusOr<std::vector<std::vector<Hit>>> TenantModelDB::Search(std::string_view collection,
                                                                    std::span<const float> queries,
                                                                    const SearchParams& params) {
  absl::MutexLock lock(&mu_);
  Seen(params.tenant);
  if (params.tenant.empty()) return base_->Search(collection, queries, params);
  absl::StatusOr<TenantInfo*> tenant = FindTenant(collection, params.tenant);
  if (!tenant.ok()) return tenant.status();
  absl::StatusOr<Collection*> c = Find(collection);
  if (!c.ok()) return c.status();
  // Every record, then only the visible ones: exact and small.
  SearchParams all = params;
  all.tenant.clear();
  all.k = static_cast<uint32_t>(std::clamp<size_t>((*c)->records.size(), 1, 10000));
  absl::StatusOr<std::vector<std::vector<Hit>>> results = base_->Search(collection, queries, all);
  if (!results.ok()) return results.status();
  for (std::vector<Hit>& hits : *results) {
    std::erase_if(hits, [&](const Hit& hit) {
      auto it = (*c)->records.find(hit.key);
      return it == (*c)->records.end() || !Visible(it->second, params.tenant);
    });
    if (hits.size() > params.k) hits.resize(params.k);
  }
  return results;
}

// ---- Records by filter ----
absl::StatusOr<std::vector<Key>> TenantModelDB::MatchingKeys(std::string_view collection,
                                                             const Filter* filter,
                                                             std::string_view tenant,
                                                             bool owned_only) {
  absl::StatusOr<Collection*> c = Find(collection);
  if (!c.ok()) return c.status();
  std::vector<Key> keys;
  ScrollOptions scroll{.limit = kMaxScrollLimit, .with_attributes = false};
  do {
    absl::StatusOr<ScrollPage> page = base_->Scroll(collection, filter, scroll, ReadOptions{});
    if (!page.ok()) return page.status();
    for (Record& r : page->records) {
      auto it = (*c)->records.find(r.key);
      if (it == (*c)->records.end() || !Visible(it->second, tenant)) continue;
      if (owned_only && !tenant.empty() && it->second.owner != tenant) continue;
      keys.push_back(std::move(r.key));
    }
    scroll.page_token = page->next_page_token;
  } while (!scroll.page_token.empty());
  return keys;
}

absl::StatusOr<uint64_t> TenantModelDB::Count(std::string_view collection, const Filter* filter,
                                              const ReadOptions& options) {
  absl::MutexLock lock(&mu_);
  Seen(options.tenant);
  if (options.tenant.empty()) return base_->Count(collection, filter, options);
  if (absl::StatusOr<TenantInfo*> t = FindTenant(collection, options.tenant); !t.ok()) {
    return t.status();
  }
  absl::StatusOr<std::vector<Key>> keys = MatchingKeys(collection, filter, options.tenant, false);
  if (!keys.ok()) return keys.status();
  return keys->size();
}

absl::StatusOr<ScrollPage> TenantModelDB::Scroll(std::string_view collection, const Filter* filter,
                                                 const ScrollOptions& scroll,
                                                 const ReadOptions& options) {
  absl::MutexLock lock(&mu_);
  Seen(options.tenant);
  if (options.tenant.empty()) return base_->Scroll(collection, filter, scroll, options);
  if (absl::StatusOr<TenantInfo*> t = FindTenant(collection, options.tenant); !t.ok()) {
    return t.status();
  }
  absl::StatusOr<Collection*> c = Find(collection);
  if (!c.ok()) return c.status();
  absl::StatusOr<ScrollPage> page = base_->Scroll(collection, filter, scroll, ReadOptions{});
  if (!page.ok()) return page.status();
  std::erase_if(page->records, [&](const Record& r) {
    auto it = (*c)->records.find(r.key);
    return it == (*c)->records.end() || !Visible(it->second, options.tenant);
  });
  return page;
}

absl::StatusOr<uint64_t> TenantModelDB::DeleteByFilter(std::string_view collection,
                                                       const Filter* filter,
                                                       const WriteOptions& options) {
  absl::MutexLock lock(&mu_);
  Seen(options.tenant);
  if (!options.tenant.empty()) {
    if (absl::StatusOr<TenantInfo*> t = FindTenant(collection, options.tenant); !t.ok()) {
      return t.status();
    }
  }
  absl::StatusOr<std::vector<Key>> doomed = MatchingKeys(collection, filter, options.tenant, true);
  if (!doomed.ok()) return doomed.status();
  if (doomed->empty()) return 0;
  WriteOptions base_options = options;
  base_options.tenant.clear();
  absl::StatusOr<uint64_t> deleted = base_->Delete(collection, *doomed, base_options);
  if (!deleted.ok()) return deleted.status();
  absl::StatusOr<Collection*> c = Find(collection);
  if (c.ok()) {
    for (const Key& key : *doomed) (*c)->records.erase(key);
  }
  return deleted;
}

// ---- Tenants ----
absl::Status TenantModelDB::CreateTenant(std::string_view collection, const TenantSpec& spec) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Collection*> c = Find(collection);
  if (!c.ok()) return c.status();
  if (spec.name.empty()) return absl::InvalidArgumentError("name: empty");
  if ((*c)->tenants.contains(spec.name)) {
    return absl::AlreadyExistsError(absl::StrCat("tenant: '", spec.name, "' exists"));
  }
  (*c)->tenants[spec.name] = TenantInfo{.name = spec.name, .quotas = spec.quotas};
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> TenantModelDB::DropTenant(std::string_view collection,
                                                   std::string_view tenant,
                                                   const WriteOptions& options) {
  absl::StatusOr<uint64_t> deleted = DeleteByTenant(collection, tenant, options);
  if (!deleted.ok()) return deleted.status();
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Collection*> c = Find(collection);
  if (!c.ok()) return c.status();
  (*c)->tenants.erase(std::string(tenant));
  for (auto& [key, record] : (*c)->records) record.grantees.erase(std::string(tenant));
  return deleted;
}

absl::StatusOr<TenantPage> TenantModelDB::ListTenants(std::string_view collection,
                                                      uint32_t page_size,
                                                      std::string_view page_token) {
  absl::MutexLock lock(&mu_);
  if (page_size == 0 || page_size > 10000) {
    return absl::InvalidArgumentError(absl::StrCat("page_size: ", page_size, " not in 1..10000"));
  }
  absl::StatusOr<Collection*> c = Find(collection);
  if (!c.ok()) return c.status();
  TenantPage page;
  // The token is the last name of the previous page.
  auto it = page_token.empty() ? (*c)->tenants.begin()
                               : (*c)->tenants.upper_bound(std::string(page_token));
  for (; it != (*c)->tenants.end() && page.tenants.size() < page_size; ++it) {
    page.tenants.push_back(it->second);
  }
  if (it != (*c)->tenants.end()) page.next_page_token = page.tenants.back().name;
  return page;
}

absl::StatusOr<TenantInfo> TenantModelDB::DescribeTenant(std::string_view collection,
                                                         std::string_view tenant) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<TenantInfo*> info = FindTenant(collection, tenant);
  if (!info.ok()) return info.status();
  TenantInfo out = **info;
  Collection& c = *Find(collection).value();
  for (const auto& [key, record] : c.records) {
    out.vectors_owned += record.owner == tenant;
    out.vectors_visible += Visible(record, tenant);
  }
  return out;
}

absl::Status TenantModelDB::SetTenantQuotas(std::string_view collection, std::string_view tenant,
                                            const TenantQuotas& quotas) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<TenantInfo*> info = FindTenant(collection, tenant);
  if (!info.ok()) return info.status();
  (*info)->quotas = quotas;
  return absl::OkStatus();
}

absl::Status TenantModelDB::SetTenantState(std::string_view collection, std::string_view tenant,
                                           TenantState state) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<TenantInfo*> info = FindTenant(collection, tenant);
  if (!info.ok()) return info.status();
  (*info)->state = state;
  return absl::OkStatus();
}

absl::Status TenantModelDB::Grant(std::string_view collection, std::string_view tenant,
                                  std::span<const Key> keys, const WriteOptions& /*options*/) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<TenantInfo*> info = FindTenant(collection, tenant);
  if (!info.ok()) return info.status();
  Collection& c = *Find(collection).value();
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!c.records.contains(keys[i])) {
      return absl::NotFoundError(absl::StrCat("keys[", i, "]: not found"));
    }
  }
  for (const Key& key : keys) {
    Owned& record = c.records[key];
    if (record.owner != tenant) record.grantees.insert(std::string(tenant));
  }
  return absl::OkStatus();
}

absl::Status TenantModelDB::Revoke(std::string_view collection, std::string_view tenant,
                                   std::span<const Key> keys, const WriteOptions& /*options*/) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<TenantInfo*> info = FindTenant(collection, tenant);
  if (!info.ok()) return info.status();
  Collection& c = *Find(collection).value();
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = c.records.find(keys[i]);
    if (it == c.records.end()) return absl::NotFoundError(absl::StrCat("keys[", i, "]: not found"));
    if (it->second.owner == tenant) {
      return absl::FailedPreconditionError(
          absl::StrCat("keys[", i, "]: owned by '", std::string(tenant), "'"));
    }
  }
  for (const Key& key : keys) c.records[key].grantees.erase(std::string(tenant));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> TenantModelDB::ListKeyTenants(std::string_view collection,
                                                                       const Key& key) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Collection*> c = Find(collection);
  if (!c.ok()) return c.status();
  auto it = (*c)->records.find(key);
  if (it == (*c)->records.end()) return absl::NotFoundError("key: not found");
  std::vector<std::string> out;
  if (!it->second.owner.empty()) out.push_back(it->second.owner);
  out.insert(out.end(), it->second.grantees.begin(), it->second.grantees.end());
  return out;
}

absl::StatusOr<uint64_t> TenantModelDB::CountByTenant(std::string_view collection,
                                                      std::string_view tenant, bool owned_only) {
  absl::StatusOr<TenantInfo> info = DescribeTenant(collection, tenant);
  if (!info.ok()) return info.status();
  return owned_only ? info->vectors_owned : info->vectors_visible;
}

absl::StatusOr<uint64_t> TenantModelDB::DeleteByTenant(std::string_view collection,
                                                       std::string_view tenant,
                                                       const WriteOptions& options) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<TenantInfo*> info = FindTenant(collection, tenant);
  if (!info.ok()) return info.status();
  Collection& c = *Find(collection).value();
  std::vector<Key> owned;
  for (const auto& [key, record] : c.records) {
    if (record.owner == tenant) owned.push_back(key);
  }
  if (owned.empty()) return 0;
  WriteOptions base_options = options;
  base_options.tenant.clear();
  absl::StatusOr<uint64_t> deleted = base_->Delete(collection, owned, base_options);
  if (!deleted.ok()) return deleted.status();
  for (const Key& key : owned) c.records.erase(key);
  return deleted;
}

}  // namespace shoal::testing

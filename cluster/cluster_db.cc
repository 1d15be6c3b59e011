#include "cluster/cluster_db.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace shoal::cluster {

ClusterDB::ClusterDB(std::unique_ptr<DB> local, ClusterNode* node)
    : local_(std::move(local)), node_(node) {}

bool ClusterDB::IsSharded(std::string_view collection) const {
  return node_->FindShardMap(collection).has_value();
}

absl::Status ClusterDB::NotYetSharded(std::string_view call, std::string_view collection) const {
  return absl::UnimplementedError(absl::StrCat("collection: '", std::string(collection),
                                               "' is sharded over the cluster; ", std::string(call),
                                               " of a sharded collection is not supported yet"));
}

absl::Status ClusterDB::CreateCollection(const CollectionSpec& spec) {
  if (spec.shards != 0 || spec.replication != 0) return node_->CreateShardedCollection(spec);
  if (spec.name.find('@') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.name: '", spec.name, "': '@' names a node's copy of a shard"));
  }
  if (IsSharded(spec.name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("spec.name: collection '", spec.name, "' already exists (sharded)"));
  }
  return local_->CreateCollection(spec);
}

absl::StatusOr<std::vector<CollectionInfo>> ClusterDB::ListCollections() {
  absl::StatusOr<std::vector<CollectionInfo>> local = local_->ListCollections();
  if (!local.ok()) return local.status();
  std::vector<CollectionInfo> out;
  for (CollectionInfo& info : *local) {  // shard copies are listed through their collection
    if (info.spec.name.find('@') == std::string::npos) out.push_back(std::move(info));
  }
  for (const auto& [name, map] : node_->View().collections) {
    absl::StatusOr<CollectionInfo> info = DescribeSharded(map);
    out.push_back(info.ok() ? *info : CollectionInfo{.spec = map.spec});
  }
  std::sort(out.begin(), out.end(), [](const CollectionInfo& a, const CollectionInfo& b) {
    return a.spec.name < b.spec.name;
  });
  return out;
}

absl::StatusOr<CollectionInfo> ClusterDB::DescribeCollection(std::string_view name) {
  if (std::optional<ShardMap> map = node_->FindShardMap(name, /*fresh=*/true)) {
    return DescribeSharded(*map);
  }
  return local_->DescribeCollection(name);
}

// The sum over one live replica per shard; a shard no replica answers for counts as 0.
absl::StatusOr<CollectionInfo> ClusterDB::DescribeSharded(const ShardMap& map) const {
  CollectionInfo info{.spec = map.spec};
  for (const auto& [alias, target] : node_->View().aliases) {
    if (target == map.spec.name) info.aliases.push_back(alias);  // sorted: the view's order
  }
  for (uint32_t shard = 0; shard < map.spec.shards; ++shard) {
    const std::string local_name = ShardCollectionName(map.spec.name, shard);
    for (const Replica& replica : node_->Replicas(map, shard)) {
      absl::StatusOr<CollectionInfo> part = absl::UnavailableError("");
      if (replica.local) {
        part = local_->DescribeCollection(local_name);
      } else if (absl::StatusOr<std::shared_ptr<client::Client>> peer =
                     node_->Peer(replica.address);
                 peer.ok()) {
        part = (*peer)->DescribeCollection(local_name);
      }
      if (!part.ok()) continue;
      if (shard == 0) info.index = part->index;  // every copy is built alike (BuildIndex)
      info.num_vectors += part->num_vectors;
      info.unindexed_vectors += part->unindexed_vectors;
      break;
    }
  }
  return info;
}

absl::Status ClusterDB::DropCollection(std::string_view name) {
  // By its own name only (not through an alias), as DB::DropCollection.
  if (node_->View().collections.contains(std::string(name))) {
    return node_->DropShardedCollection(std::string(name));
  }
  return local_->DropCollection(name);
}

absl::Status ClusterDB::BuildIndex(std::string_view collection, std::string_view spec,
                                   const IndexBuildProgressFn& progress) {
  if (std::optional<ShardMap> map = node_->FindShardMap(collection)) {
    return BuildShardedIndex(*map, spec);  // no progress reports: the builds run on many nodes
  }
  return local_->BuildIndex(collection, spec, progress);
}

absl::Status ClusterDB::FlushIndexUpdates(std::string_view collection) {
  if (IsSharded(collection)) return NotYetSharded("FlushIndexUpdates", collection);
  return local_->FlushIndexUpdates(collection);
}

absl::Status ClusterDB::DrainIndexUpdates(std::string_view collection) {
  if (IsSharded(collection)) return NotYetSharded("DrainIndexUpdates", collection);
  return local_->DrainIndexUpdates(collection);
}

absl::Status ClusterDB::Compact(std::string_view collection) {
  if (std::optional<ShardMap> map = node_->FindShardMap(collection)) return CompactSharded(*map);
  return local_->Compact(collection);
}

absl::Status ClusterDB::Snapshot(const std::string& dir) { return local_->Snapshot(dir); }

absl::Status ClusterDB::CreateTenant(std::string_view collection, const TenantSpec& spec) {
  if (std::optional<ShardMap> map = node_->FindShardMap(collection)) {
    return CreateShardedTenant(*map, spec);
  }
  return local_->CreateTenant(collection, spec);
}

absl::StatusOr<uint64_t> ClusterDB::DropTenant(std::string_view collection, std::string_view tenant,
                                               const WriteOptions& options) {
  if (std::optional<ShardMap> map = node_->FindShardMap(collection)) {
    return DeleteShardedTenantRecords(*map, tenant, TenantOpCall::Kind::kDrop);
  }
  return local_->DropTenant(collection, tenant, options);
}

absl::StatusOr<TenantPage> ClusterDB::ListTenants(std::string_view collection, uint32_t page_size,
                                                  std::string_view page_token) {
  if (std::optional<ShardMap> map = node_->FindShardMap(collection)) {
    return ListShardedTenants(*map, page_size, page_token);
  }
  return local_->ListTenants(collection, page_size, page_token);
}

absl::StatusOr<TenantInfo> ClusterDB::DescribeTenant(std::string_view collection,
                                                     std::string_view tenant) {
  if (std::optional<ShardMap> map = node_->FindShardMap(collection)) {
    return DescribeShardedTenant(*map, tenant);
  }
  return local_->DescribeTenant(collection, tenant);
}

absl::Status ClusterDB::SetTenantQuotas(std::string_view collection, std::string_view tenant,
                                        const TenantQuotas& quotas) {
  if (std::optional<ShardMap> map = node_->FindShardMap(collection)) {
    return SetShardedTenant(*map, tenant,
                            {.kind = TenantOpCall::Kind::kSetQuotas, .quotas = quotas});
  }
  return local_->SetTenantQuotas(collection, tenant, quotas);
}

absl::Status ClusterDB::SetTenantState(std::string_view collection, std::string_view tenant,
                                       TenantState state) {
  if (std::optional<ShardMap> map = node_->FindShardMap(collection)) {
    return SetShardedTenant(*map, tenant, {.kind = TenantOpCall::Kind::kSetState, .state = state});
  }
  return local_->SetTenantState(collection, tenant, state);
}

absl::Status ClusterDB::Grant(std::string_view collection, std::string_view tenant,
                              std::span<const Key> keys, const WriteOptions& options) {
  if (std::optional<ShardMap> map = node_->FindShardMap(collection)) {
    return GrantSharded(*map, tenant, keys, TenantOpCall::Kind::kGrant);
  }
  return local_->Grant(collection, tenant, keys, options);
}

absl::Status ClusterDB::Revoke(std::string_view collection, std::string_view tenant,
                               std::span<const Key> keys, const WriteOptions& options) {
  if (std::optional<ShardMap> map = node_->FindShardMap(collection)) {
    return GrantSharded(*map, tenant, keys, TenantOpCall::Kind::kRevoke);
  }
  return local_->Revoke(collection, tenant, keys, options);
}

absl::StatusOr<KeyTenants> ClusterDB::DescribeKeyTenants(std::string_view collection,
                                                         const Key& key) {
  if (std::optional<ShardMap> map = node_->FindShardMap(collection)) {
    return DescribeShardedKeyTenants(*map, key);
  }
  return local_->DescribeKeyTenants(collection, key);
}

absl::StatusOr<std::vector<std::string>> ClusterDB::ListKeyTenants(std::string_view collection,
                                                                   const Key& key) {
  if (std::optional<ShardMap> map = node_->FindShardMap(collection)) {
    return ListShardedKeyTenants(*map, key);
  }
  return local_->ListKeyTenants(collection, key);
}

absl::StatusOr<uint64_t> ClusterDB::CountByTenant(std::string_view collection,
                                                  std::string_view tenant, bool owned_only) {
  if (std::optional<ShardMap> map = node_->FindShardMap(collection)) {
    return CountShardedByTenant(*map, tenant, owned_only);
  }
  return local_->CountByTenant(collection, tenant, owned_only);
}

absl::StatusOr<uint64_t> ClusterDB::DeleteByTenant(std::string_view collection,
                                                   std::string_view tenant,
                                                   const WriteOptions& options) {
  if (std::optional<ShardMap> map = node_->FindShardMap(collection)) {
    return DeleteShardedTenantRecords(*map, tenant, TenantOpCall::Kind::kDeleteRecords);
  }
  return local_->DeleteByTenant(collection, tenant, options);
}

absl::StatusOr<uint64_t> ClusterDB::Count(std::string_view collection, const Filter* filter,
                                          const ReadOptions& options) {
  if (IsSharded(collection)) return NotYetSharded("Count", collection);
  return local_->Count(collection, filter, options);
}

absl::StatusOr<ScrollPage> ClusterDB::Scroll(std::string_view collection, const Filter* filter,
                                             const ScrollOptions& scroll,
                                             const ReadOptions& options) {
  if (IsSharded(collection)) return NotYetSharded("Scroll", collection);
  return local_->Scroll(collection, filter, scroll, options);
}

absl::StatusOr<uint64_t> ClusterDB::DeleteByFilter(std::string_view collection,
                                                   const Filter* filter,
                                                   const WriteOptions& options) {
  if (IsSharded(collection)) return NotYetSharded("DeleteByFilter", collection);
  return local_->DeleteByFilter(collection, filter, options);
}

absl::Status ClusterDB::CreateCache(const CacheSpec& spec) { return local_->CreateCache(spec); }

absl::Status ClusterDB::DropCache(std::string_view cache) { return local_->DropCache(cache); }

absl::StatusOr<std::vector<CacheInfo>> ClusterDB::ListCaches() { return local_->ListCaches(); }

absl::Status ClusterDB::SetCachePolicy(std::string_view cache, std::string_view category,
                                       const CachePolicy& policy) {
  return local_->SetCachePolicy(cache, category, policy);
}

absl::StatusOr<CachePolicy> ClusterDB::GetCachePolicy(std::string_view cache,
                                                      std::string_view category) {
  return local_->GetCachePolicy(cache, category);
}

absl::StatusOr<CacheLookupResult> ClusterDB::CacheLookup(std::string_view cache,
                                                         const CacheLookupRequest& request) {
  return local_->CacheLookup(cache, request);
}

absl::StatusOr<uint64_t> ClusterDB::CacheStore(std::string_view cache,
                                               const CacheStoreRequest& request,
                                               const WriteOptions& options) {
  return local_->CacheStore(cache, request, options);
}

absl::StatusOr<uint64_t> ClusterDB::CacheInvalidate(std::string_view cache,
                                                    const CacheInvalidation& which) {
  return local_->CacheInvalidate(cache, which);
}

absl::Status ClusterDB::CacheFeedback(std::string_view cache, const CacheFeedbackReport& feedback) {
  return local_->CacheFeedback(cache, feedback);
}

absl::StatusOr<CacheStats> ClusterDB::GetCacheStats(std::string_view cache) {
  return local_->GetCacheStats(cache);
}

absl::Status ClusterDB::ReportModelLoad(std::string_view model, double load) {
  return local_->ReportModelLoad(model, load);
}

absl::Status ClusterDB::Verify(std::string_view collection, VerifyReport* report) {
  if (IsSharded(collection)) return NotYetSharded("Verify", collection);
  return local_->Verify(collection, report);
}
}  // namespace shoal::cluster

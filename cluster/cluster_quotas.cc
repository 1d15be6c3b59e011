// Vector and byte quotas of a sharded collection's tenants. A quota is cluster-wide: the
// tenant's records over every shard count against it. Where it lives: etcd
// (/shoal/tenant-quotas/<collection>/<tenant>, written by the node that takes the create or
// SetTenantQuotas call, before the tenant's log entry), read by every node from its view;
// the shard copies keep 0 for both (a copy's own DB never refuses an acknowledged write at
// apply: a per-copy limit would). max_searches_per_second is not cluster-wide: it applies on
// each copy, as before.
//
// How it is enforced: the node that takes an upsert for a tenant with a quota, holding its
// quota lock (one quota'd write at a time on this node), reads the tenant's owned vectors
// and bytes from one replica per shard after each has applied its stream's last entry
// (every acknowledged write counts), and refuses the write (RESOURCE_EXHAUSTED, the single
// node's message) when it would take the tenant over; it publishes under the same lock.
// Races allowed: writes for the same tenant through *different* nodes at the same moment
// each pass the check against the counts before the other's, so the tenant may go over by
// the writes in flight at once on the other nodes (a soft limit, as with any quota checked
// before a replicated log); a quota set on one node applies on another once its etcd watch
// delivers it (normally milliseconds). Lowering a quota below what the tenant owns keeps its
// records and refuses further growth.
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "cluster/cluster_db.h"
#include "shoal/record_checks.h"

namespace shoal::cluster {

absl::Status ClusterNode::PutTenantQuotas(const std::string& collection, const std::string& tenant,
                                          const ShardedTenantQuotas& quotas) {
  const std::string key = absl::StrCat(kTenantQuotasPrefix, collection, "/", tenant);
  absl::Status s;
  if (quotas.max_vectors == 0 && quotas.max_bytes == 0) {
    s = etcd_.Delete(key);
  } else {
    const nlohmann::json value = {{"incarnation", quotas.incarnation},
                                  {"max_vectors", quotas.max_vectors},
                                  {"max_bytes", quotas.max_bytes}};
    s = etcd_.Put(key, value.dump());
  }
  if (!s.ok()) return s;
  membership()->Refresh();  // this node's next call sees it
  return absl::OkStatus();
}

ShardedTenantQuotas ClusterDB::TenantQuotasOf(const ShardMap& map, std::string_view tenant) const {
  const ClusterView view = node_->View();
  auto it = view.tenant_quotas.find({map.spec.name, std::string(tenant)});
  // Quotas of an earlier collection of this name mean nothing now.
  if (it == view.tenant_quotas.end() || it->second.incarnation != map.incarnation) return {};
  return it->second;
}

void ClusterDB::OverlayQuotas(const ShardMap& map, TenantInfo* info) const {
  const ShardedTenantQuotas quotas = TenantQuotasOf(map, info->name);
  info->quotas.max_vectors = quotas.max_vectors;
  info->quotas.max_bytes = quotas.max_bytes;
}

absl::Status ClusterDB::PutShardedQuotas(const ShardMap& map, std::string_view tenant,
                                         const TenantQuotas& quotas) {
  return node_->PutTenantQuotas(map.spec.name, std::string(tenant),
                                {.incarnation = map.incarnation,
                                 .max_vectors = quotas.max_vectors,
                                 .max_bytes = quotas.max_bytes});
}

TenantQuotas ClusterDB::CopyQuotas(const TenantQuotas& quotas) {
  return {.max_searches_per_second = quotas.max_searches_per_second};
}

absl::Status ClusterDB::CheckShardedQuota(const ShardMap& map, std::string_view tenant,
                                          const ShardedTenantQuotas& quotas,
                                          std::span<const Record> records,
                                          const std::vector<std::optional<Record>>& existing) {
  uint64_t added_vectors = 0;
  int64_t added_bytes = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    added_bytes += static_cast<int64_t>(RecordQuotaBytes(records[i]));
    if (i < existing.size() && existing[i].has_value()) {
      added_bytes -= static_cast<int64_t>(RecordQuotaBytes(*existing[i]));
    } else {
      ++added_vectors;
    }
  }
  const bool vectors_grow = quotas.max_vectors != 0 && added_vectors > 0;
  const bool bytes_grow = quotas.max_bytes != 0 && added_bytes > 0;
  if (!vectors_grow && !bytes_grow) return absl::OkStatus();
  absl::StatusOr<TenantInfo> owned = DescribeShardedTenant(map, tenant);
  if (!owned.ok()) return owned.status();
  if (vectors_grow && owned->vectors_owned + added_vectors > quotas.max_vectors) {
    return absl::ResourceExhaustedError(
        absl::StrCat("quota max_vectors of tenant '", std::string(tenant), "' (",
                     quotas.max_vectors, ") would be exceeded: it owns ", owned->vectors_owned,
                     " and the upsert adds ", added_vectors));
  }
  const int64_t bytes = static_cast<int64_t>(owned->bytes_owned);
  if (bytes_grow && bytes + added_bytes > static_cast<int64_t>(quotas.max_bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "quota max_bytes of tenant '", std::string(tenant), "' (", quotas.max_bytes,
        ") would be exceeded: it owns ", bytes, " bytes and the upsert adds ", added_bytes));
  }
  return absl::OkStatus();
}

}  // namespace shoal::cluster

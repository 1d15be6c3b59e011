// ClusterDB: the shoal::DB a cluster-mode shoald serves. Collections created with
// spec.shards > 0 are sharded over the cluster (cluster_node.h); every other call, and every
// call on a collection that is not sharded, goes to this node's local DB exactly as a single
// node would serve it. Any node accepts any request:
//   - Upsert / Delete of a sharded collection: the records are grouped by ShardOfKey and each
//     group is appended to its shard's JetStream stream; the call returns once JetStream has
//     acknowledged every group (cluster_writes.cc). A batch spanning shards is not atomic: on
//     UNAVAILABLE some groups may be written (retrying the same batch is safe: idempotent).
//   - Search: fans out to one live replica per shard (this node's own copy first), with the
//     next replica tried when one fails, and merges the top k (cluster_reads.cc). Get routes
//     each key to its shard the same way.
//   - ReadConsistency::read_your_writes: before reading a shard, the stream's last sequence is
//     read from JetStream and the chosen replica waits until it has applied it.
//   - "<collection>@<shard>" names a node's local copy of a shard: calls on it (from other
//     nodes' fan-outs) go to the local DB, after waiting for min_applied_sequence.
//   - BuildIndex and Compact of a sharded collection: every live replica of every shard builds
//     the index over (or compacts) its own copy, the nodes side by side (cluster_admin.cc); no
//     progress reports; the first error names shard and node. A copy made later (a move, a
//     re-replication) starts without the index (exact search) until BuildIndex runs again.
//   - DropCollection of a sharded collection: the coordinator deletes its shard map, streams
//     and applied sequences; every node drops its copies as it sees the map gone
//     (cluster_drop.cc).
//   - Tenants of a sharded collection (cluster_tenants.cc): every copy keeps every tenant;
//     tenant changes are log entries applied in order with the writes, and a change answers
//     once one replica per shard has applied it; tenant reads wait for the replica they read
//     to apply its stream's last entry (read your writes). A write for a tenant is checked first
//     (the tenant exists, existing keys are its own). Vector and byte quotas are cluster-wide, kept
//     in etcd and checked by the node that takes a write (cluster_quotas.cc).
// Aliases of a sharded collection are UNIMPLEMENTED for now.
//
// Errors: as DB, plus UNAVAILABLE when NATS, etcd or every replica of a shard is away (naming
// the shard), UNIMPLEMENTED for calls sharded collections do not support yet.
//
// Thread safety: as DB (every method may be called concurrently).
#ifndef SHOAL_CLUSTER_CLUSTER_DB_H_
#define SHOAL_CLUSTER_CLUSTER_DB_H_

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "cluster/cluster_node.h"
#include "cluster/shard_apply.h"
#include "shoal/db.h"

namespace shoal::cluster {

class ClusterDB : public DB {
 public:
  // Takes `local` (the node's own DB); `node` is not owned and must outlive this object, and
  // must have been created over `local`.
  ClusterDB(std::unique_ptr<DB> local, ClusterNode* node);
  ~ClusterDB() override = default;

  absl::Status CreateCollection(const CollectionSpec& spec) override;
  absl::StatusOr<std::vector<CollectionInfo>> ListCollections() override;
  absl::StatusOr<CollectionInfo> DescribeCollection(std::string_view name) override;
  absl::Status DropCollection(std::string_view name) override;
  absl::Status CreateAlias(std::string_view alias, std::string_view collection) override;
  absl::Status AlterAlias(std::string_view alias, std::string_view collection) override;
  absl::Status DropAlias(std::string_view alias) override;
  absl::StatusOr<std::vector<AliasInfo>> ListAliases() override;
  absl::Status Upsert(std::string_view collection, std::span<const Record> records,
                      const WriteOptions& options) override;
  absl::StatusOr<std::vector<std::optional<Record>>> Get(std::string_view collection,
                                                         std::span<const Key> keys,
                                                         const ReadOptions& options) override;
  // Count, Scroll and DeleteByFilter: the local collection; on a sharded one, UNIMPLEMENTED.
  absl::StatusOr<uint64_t> Count(std::string_view collection, const Filter* filter,
                                 const ReadOptions& options) override;
  absl::StatusOr<ScrollPage> Scroll(std::string_view collection, const Filter* filter,
                                    const ScrollOptions& scroll,
                                    const ReadOptions& options) override;
  absl::StatusOr<uint64_t> DeleteByFilter(std::string_view collection, const Filter* filter,
                                          const WriteOptions& options) override;
  absl::StatusOr<uint64_t> Delete(std::string_view collection, std::span<const Key> keys,
                                  const WriteOptions& options) override;
  absl::Status BuildIndex(std::string_view collection, std::string_view spec,
                          const IndexBuildProgressFn& progress) override;
  absl::Status FlushIndexUpdates(std::string_view collection) override;
  absl::Status DrainIndexUpdates(std::string_view collection) override;
  absl::Status Compact(std::string_view collection) override;
  absl::Status SyncWrites() override { return local_->SyncWrites(); }
  absl::Status Snapshot(const std::string& dir) override;
  absl::StatusOr<std::vector<std::vector<Hit>>> Search(std::string_view collection,
                                                       std::span<const float> queries,
                                                       const SearchParams& params) override;
  absl::Status CreateTenant(std::string_view collection, const TenantSpec& spec) override;
  absl::StatusOr<uint64_t> DropTenant(std::string_view collection, std::string_view tenant,
                                      const WriteOptions& options) override;
  absl::StatusOr<TenantPage> ListTenants(std::string_view collection, uint32_t page_size,
                                         std::string_view page_token) override;
  absl::StatusOr<TenantInfo> DescribeTenant(std::string_view collection,
                                            std::string_view tenant) override;
  absl::Status SetTenantQuotas(std::string_view collection, std::string_view tenant,
                               const TenantQuotas& quotas) override;
  absl::Status SetTenantState(std::string_view collection, std::string_view tenant,
                              TenantState state) override;
  absl::Status Grant(std::string_view collection, std::string_view tenant,
                     std::span<const Key> keys, const WriteOptions& options) override;
  absl::Status Revoke(std::string_view collection, std::string_view tenant,
                      std::span<const Key> keys, const WriteOptions& options) override;
  absl::StatusOr<KeyTenants> DescribeKeyTenants(std::string_view collection,
                                                const Key& key) override;
  absl::StatusOr<std::vector<std::string>> ListKeyTenants(std::string_view collection,
                                                          const Key& key) override;
  absl::StatusOr<uint64_t> CountByTenant(std::string_view collection, std::string_view tenant,
                                         bool owned_only) override;
  absl::StatusOr<uint64_t> DeleteByTenant(std::string_view collection, std::string_view tenant,
                                          const WriteOptions& options) override;
  absl::Status CreateCache(const CacheSpec& spec) override;
  absl::Status DropCache(std::string_view cache) override;
  absl::StatusOr<std::vector<CacheInfo>> ListCaches() override;
  absl::Status SetCachePolicy(std::string_view cache, std::string_view category,
                              const CachePolicy& policy) override;
  absl::StatusOr<CachePolicy> GetCachePolicy(std::string_view cache,
                                             std::string_view category) override;
  absl::StatusOr<CacheLookupResult> CacheLookup(std::string_view cache,
                                                const CacheLookupRequest& request) override;
  absl::StatusOr<uint64_t> CacheStore(std::string_view cache, const CacheStoreRequest& request,
                                      const WriteOptions& options) override;
  absl::StatusOr<uint64_t> CacheInvalidate(std::string_view cache,
                                           const CacheInvalidation& which) override;
  absl::Status CacheFeedback(std::string_view cache, const CacheFeedbackReport& feedback) override;
  absl::StatusOr<CacheStats> GetCacheStats(std::string_view cache) override;
  absl::Status ReportModelLoad(std::string_view model, double load) override;
  absl::Status Verify(std::string_view collection, VerifyReport* report) override;

 private:
  bool IsSharded(std::string_view collection) const;
  absl::Status NotYetSharded(std::string_view call, std::string_view collection) const;
  // How long a replica may take to reach a read's sequence before the next one is tried.
  static constexpr absl::Duration kApplyWait = absl::Seconds(3);
  // Waits until this node's copy of the shard named `local_name` ("c@s") has applied
  // `sequence` (0: no wait). UNAVAILABLE when it does not in time or is not a copy kept here.
  absl::Status WaitLocalApplied(std::string_view local_name, uint64_t sequence) const;
  // A read of a collection that is not sharded here: for a shard copy ("c@s"), waits as
  // `consistency` asks (read_your_writes: the stream's last sequence); otherwise OK at once.
  absl::Status WaitShardCopy(std::string_view name, const ReadConsistency& consistency) const;
  // The sequence a read of the shard must see: the stream's last one with read_your_writes,
  // else 0.
  absl::StatusOr<uint64_t> ReadSequence(const ShardMap& map, uint32_t shard,
                                        const ReadConsistency& consistency) const;
  // etcd's map of `map`'s collection when it is newer than `map` (a move or a failover this
  // node's view has not seen yet), else nullopt. A shard's read that no replica answered asks it
  // and reads again with the newer map.
  std::optional<ShardMap> NewerShardMap(const ShardMap& map) const;
  absl::StatusOr<std::vector<std::vector<Hit>>> SearchShard(const ShardMap& map, uint32_t shard,
                                                            std::span<const float> queries,
                                                            const SearchParams& params) const;
  absl::StatusOr<std::vector<std::optional<Record>>> GetShard(const ShardMap& map, uint32_t shard,
                                                              std::span<const Key> keys,
                                                              const ReadOptions& options) const;
  absl::Status CheckRecords(const ShardMap& map, std::span<const Record> records) const;
  absl::StatusOr<CollectionInfo> DescribeSharded(const ShardMap& map) const;
  absl::Status BuildShardedIndex(const ShardMap& map, std::string_view spec);
  absl::Status CompactSharded(const ShardMap& map);
  // Calls `call` for every copy of every shard: with a client of the copy's node, or nullptr
  // for this node's own; the nodes side by side. The first error names shard and node.
  using CopyCall = std::function<absl::Status(const std::string& name, client::Client* peer)>;
  absl::Status OnEveryCopy(const ShardMap& map, const CopyCall& call);

  // Tenants of a sharded collection (cluster_tenants.cc).
  // Calls `call` on one live replica of the shard (this node's copy first, then the next
  // when TryAnotherReplica); a tenant's NOT_FOUND is the answer. When none answers, once more
  // with etcd's map if it is newer (NewerShardMap), as SearchShard and GetShard do; then
  // UNAVAILABLE naming the shard.
  absl::Status OnOneReplica(const ShardMap& map, uint32_t shard, const CopyCall& call) const;
  // OnOneReplica on a copy that has first applied the stream's last entry (read your writes).
  absl::Status OnOneFreshReplica(const ShardMap& map, uint32_t shard, const CopyCall& call) const;
  // Waits until the copy `name` (this node's: peer nullptr) has applied `sequence` (0: no
  // wait).
  absl::Status WaitCopyApplied(const std::string& name, client::Client* peer,
                               uint64_t sequence) const;
  // Appends each (shard, op) to its shard's stream and waits until one replica of each
  // shard has applied it.
  absl::Status PublishTenantOp(const ShardMap& map, const std::string& tenant,
                               const std::vector<std::pair<uint32_t, TenantOpCall>>& ops);
  absl::Status PublishToEveryShard(const ShardMap& map, const std::string& tenant,
                                   const TenantOpCall& op);
  // Tenant reads (describe, list, and the existence checks of tenant changes) are fresh: each
  // shard's replica first applies its stream's last entry, so every change and write
  // acknowledged before the call counts, whichever node took it (read your writes).
  absl::StatusOr<TenantInfo> DescribeShardedTenant(const ShardMap& map,
                                                   std::string_view tenant) const;
  // NOT_FOUND unless the tenant exists (remembered per node once seen; a fresh read else).
  absl::Status CheckTenantExists(const ShardMap& map, std::string_view tenant);
  void ForgetTenant(const ShardMap& map, std::string_view tenant);
  // *found (when given): what the keys hold now (read-your-writes), nullopt where absent.
  absl::Status CheckTenantWrite(const ShardMap& map, std::string_view tenant,
                                std::span<const Key> keys, bool upsert,
                                std::vector<std::optional<Record>>* found = nullptr);
  // Quotas of a sharded collection's tenants (cluster_quotas.cc: where they live, how they
  // are enforced). The tenant's cluster-wide quotas from this node's view (0s: none).
  ShardedTenantQuotas TenantQuotasOf(const ShardMap& map, std::string_view tenant) const;
  // Puts the cluster-wide quotas in place of a copy's (which keeps 0 for both).
  void OverlayQuotas(const ShardMap& map, TenantInfo* info) const;
  absl::Status PutShardedQuotas(const ShardMap& map, std::string_view tenant,
                                const TenantQuotas& quotas);
  // What a shard copy keeps of `quotas`: max_searches_per_second only.
  static TenantQuotas CopyQuotas(const TenantQuotas& quotas);
  // RESOURCE_EXHAUSTED (naming the quota) when upserting `records` for `tenant` (existing[i]:
  // what records[i] replaces) would take it over `quotas`, counted over every shard.
  absl::Status CheckShardedQuota(const ShardMap& map, std::string_view tenant,
                                 const ShardedTenantQuotas& quotas, std::span<const Record> records,
                                 const std::vector<std::optional<Record>>& existing);
  // Appends each shard's entry of upserting `records` for `tenant`.
  absl::Status PublishUpserts(const ShardMap& map, std::span<const Record> records,
                              const std::string& tenant);
  absl::Status CreateShardedTenant(const ShardMap& map, const TenantSpec& spec);
  absl::StatusOr<uint64_t> DeleteShardedTenantRecords(const ShardMap& map, std::string_view tenant,
                                                      TenantOpCall::Kind kind);
  absl::Status SetShardedTenant(const ShardMap& map, std::string_view tenant,
                                const TenantOpCall& op);
  absl::Status GrantSharded(const ShardMap& map, std::string_view tenant, std::span<const Key> keys,
                            TenantOpCall::Kind kind);
  absl::StatusOr<TenantPage> ListShardedTenants(const ShardMap& map, uint32_t page_size,
                                                std::string_view page_token) const;
  absl::StatusOr<uint64_t> CountShardedByTenant(const ShardMap& map, std::string_view tenant,
                                                bool owned_only) const;
  absl::StatusOr<std::vector<std::string>> ListShardedKeyTenants(const ShardMap& map,
                                                                 const Key& key) const;
  absl::StatusOr<KeyTenants> DescribeShardedKeyTenants(const ShardMap& map, const Key& key) const;

  std::unique_ptr<DB> local_;
  ClusterNode* const node_;
  absl::Mutex tenants_mu_;
  // "<collection>/<incarnation>/<tenant>" of tenants seen to exist (CheckTenantExists).
  absl::flat_hash_set<std::string> known_tenants_ ABSL_GUARDED_BY(tenants_mu_);
  // Held across a quota'd upsert's check and publish: one at a time on this node.
  absl::Mutex quota_mu_;
};

// Errors after which another replica of a shard may answer: the node or its copy is away or
// behind.
bool TryAnotherReplica(const absl::Status& status);
// UNAVAILABLE naming the collection and shard that no replica answered, and the last error.
absl::Status NoReplica(const ShardMap& map, uint32_t shard, const absl::Status& last);

}  // namespace shoal::cluster

#endif  // SHOAL_CLUSTER_CLUSTER_DB_H_

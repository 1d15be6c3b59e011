// DBImpl: the implementation of shoal::DB (include/shoal/db.h). Holds the RecordStore, the
// open collections by name and the aliases; each call resolves its name (collection or alias),
// finds its Collection and delegates. Snapshots and restores live in db/snapshot.cc.
//
// Thread safety: as shoal::DB. mu_ guards the name -> collection and alias maps and serialises
// create/drop; a Collection stays alive (shared_ptr) while a call that found it is still
// running. Every call that changes durable state (writes, builds, compaction, create/drop,
// aliases) holds change_mu_ shared; Snapshot holds it exclusively, so a snapshot sees no
// half-applied change and no index files being written.
#ifndef SHOAL_DB_DB_IMPL_H_
#define SHOAL_DB_DB_IMPL_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "cache/cache_catalog.h"
#include "cache/clock.h"
#include "db/collection.h"
#include "shoal/db.h"
#include "storage/io/file_system.h"
#include "storage/records/record_store.h"

namespace rocksdb {
class Env;
}  // namespace rocksdb

namespace shoal::db {

// Where a DB's files go: test seams, not part of the public API. Both must outlive the DB.
struct StorageHooks {
  storage::FileSystem* fs = nullptr;          // Shoal's own files; nullptr = POSIX
  rocksdb::Env* rocksdb_env = nullptr;        // RocksDB's files; nullptr = RocksDB's default
  const cache::Clock* cache_clock = nullptr;  // semantic caches' time; nullptr = wall clock
  double cache_sweep_seconds = 30;            // semantic caches' background expiry sweep; 0 = none
  // Run by a collection's index maintenance thread before each round of work (tests hold it
  // there); empty = none. MaintenanceBudget's `before_slot`.
  std::function<void()> before_maintenance_round;
};

class DBImpl final : public DB {
 public:
  static absl::StatusOr<std::unique_ptr<DB>> Open(const std::string& path, const Options& options,
                                                  const StorageHooks& hooks = {});
  ~DBImpl() override;

  absl::Status CreateCollection(const CollectionSpec& spec) override;
  absl::StatusOr<std::vector<CollectionInfo>> ListCollections() override;
  absl::StatusOr<CollectionInfo> DescribeCollection(std::string_view name) override;
  bool HasCollection(std::string_view name) override;
  absl::Status DropCollection(std::string_view name) override;
  absl::Status CreateAlias(std::string_view alias, std::string_view collection) override;
  absl::Status AlterAlias(std::string_view alias, std::string_view collection) override;
  absl::Status DropAlias(std::string_view alias) override;
  absl::StatusOr<std::vector<AliasInfo>> ListAliases() override;
  absl::Status Compact(std::string_view collection) override;
  absl::Status SyncWrites() override;
  absl::Status Snapshot(const std::string& dir) override;

  absl::Status Upsert(std::string_view collection, std::span<const Record> records,
                      const WriteOptions& options) override;
  using DB::Get;
  absl::StatusOr<std::vector<std::optional<Record>>> Get(std::string_view collection,
                                                         std::span<const Key> keys,
                                                         const ReadOptions& options) override;
  absl::StatusOr<uint64_t> Delete(std::string_view collection, std::span<const Key> keys,
                                  const WriteOptions& options) override;
  // Records by filter: db/db_scan.cc.
  absl::StatusOr<uint64_t> Count(std::string_view collection, const Filter* filter,
                                 const ReadOptions& options) override;
  absl::StatusOr<ScrollPage> Scroll(std::string_view collection, const Filter* filter,
                                    const ScrollOptions& scroll,
                                    const ReadOptions& options) override;
  absl::StatusOr<uint64_t> DeleteByFilter(std::string_view collection, const Filter* filter,
                                          const WriteOptions& options) override;
  using DB::BuildIndex;
  absl::Status BuildIndex(std::string_view collection, std::string_view spec,
                          const IndexBuildProgressFn& progress) override;
  absl::Status FlushIndexUpdates(std::string_view collection) override;
  absl::Status DrainIndexUpdates(std::string_view collection) override;
  absl::StatusOr<std::vector<std::vector<Hit>>> Search(std::string_view collection,
                                                       std::span<const float> queries,
                                                       const SearchParams& params) override;
  absl::Status Verify(std::string_view collection, VerifyReport* report) override;

  // Tenants: db/db_tenants.cc.
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

  // Semantic caches: db/db_caches.cc.
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

 private:
  DBImpl(const Options& options, storage::FileSystem* fs) : options_(options), fs_(fs) {}
  // Resolves a collection name or alias; errors name `field`.
  absl::StatusOr<std::shared_ptr<Collection>> Find(std::string_view name,
                                                   std::string_view field = "collection");
  // The collection's info with its aliases filled in.
  CollectionInfo InfoWithAliases(const Collection& c) ABSL_LOCKS_EXCLUDED(mu_);
  // Create / alter an alias (`create` selects which must hold: absent or present).
  absl::Status SetAlias(std::string_view alias, std::string_view collection, bool create);
  // Removes index directories no collection's manifest names (leftovers of crashed or failed
  // builds and drops).
  void RemoveUnreferencedIndexDirs() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Snapshot's work in its temporary directory `tmp`: checkpoint, index copy, marker.
  absl::Status SnapshotInto(const std::string& tmp);

  const Options options_;
  storage::FileSystem* const fs_;
  std::string index_root_;  // DIR/index: SSD index files, one directory per build
  // Bounds background index maintenance over all collections (Options::index_update_threads).
  std::unique_ptr<MaintenanceBudget> budget_;
  std::unique_ptr<storage::RecordStore> store_;  // declared first: destroyed last
  std::unique_ptr<cache::CacheCatalog> caches_;  // the semantic caches (rows in store_)
  absl::Mutex change_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Collection>> collections_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::string> aliases_ ABSL_GUARDED_BY(mu_);  // alias -> name
  // Collections that failed to load at Open (a damaged index file, a missing index directory, a
  // record that does not decode): kept out of collections_ so that the others serve. Describe
  // and List report them; Drop removes them; BuildIndex clears the index and loads them again.
  struct Quarantined {
    storage::StoredCollection meta;
    absl::Status why;
  };
  absl::flat_hash_map<std::string, Quarantined> quarantined_ ABSL_GUARDED_BY(mu_);
  // Drops, or reloads without its index (for BuildIndex), a quarantined collection.
  absl::Status DropQuarantined(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::shared_ptr<Collection>> ReloadQuarantined(const std::string& name)
      ABSL_LOCKS_EXCLUDED(mu_);
};

}  // namespace shoal::db

#endif  // SHOAL_DB_DB_IMPL_H_

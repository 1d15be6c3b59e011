// Shoal's embedded API: open a database directory, manage collections of vectors, write and
// search them.
//
//   shoal::Options options;
//   SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<shoal::DB> db, shoal::DB::Open("/data/shoal", options));
//   db->CreateCollection({.name = "docs", .dimension = 768, .metric = shoal::Metric::kCosine});
//   db->Upsert("docs", records, {.sync = true});
//   auto hits = db->Search("docs", query, {.k = 10});
//
// Ownership: the caller owns the DB; destroying it closes the directory (all acknowledged writes
// are already durable at the level they asked for). Only one DB may have a directory open at a
// time (a second Open gets Unavailable).
//
// Thread safety: every method may be called concurrently from any number of threads. Writes to
// one collection are applied in a single order; a search sees a write either whole or not at all.
//
// Errors (absl canonical codes; the message names the offending field, e.g. "records[3].vector"):
//   InvalidArgument    bad name, dimension, NaN/Inf, empty batch, k out of range, bad key
//   NotFound           unknown collection
//   AlreadyExists      CreateCollection / CreateAlias of a name already used
//   FailedPrecondition DropCollection of a collection that aliases point to
//   ResourceExhausted  a batch larger than the configured limit
//   Unavailable        the directory is locked by another process
//   DataLoss           a stored record fails to decode (corruption)
//   Internal / IO errors from the storage engine
#ifndef SHOAL_DB_H_
#define SHOAL_DB_H_

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shoal/cache.h"
#include "shoal/options.h"
#include "shoal/tenants.h"
#include "shoal/types.h"
#include "shoal/verify.h"

namespace shoal {

class DB {
 public:
  // Opens (or with options.create_if_missing creates) the database in directory `path`.
  static absl::StatusOr<std::unique_ptr<DB>> Open(const std::string& path, const Options& options);

  virtual ~DB() = default;
  DB(const DB&) = delete;
  DB& operator=(const DB&) = delete;

  // ---- Collections ----
  // Every method below that takes a collection name also accepts an alias (see CreateAlias),
  // except DropCollection.
  virtual absl::Status CreateCollection(const CollectionSpec& spec) = 0;
  virtual absl::StatusOr<std::vector<CollectionInfo>> ListCollections() = 0;
  virtual absl::StatusOr<CollectionInfo> DescribeCollection(std::string_view name) = 0;
  // Whether `name` is a collection or an alias of one here (a quarantined one counts), without
  // computing its CollectionInfo.
  virtual bool HasCollection(std::string_view name) { return DescribeCollection(name).ok(); }
  // Removes the collection and every record in it. FailedPrecondition while aliases point to it.
  virtual absl::Status DropCollection(std::string_view name) = 0;

  // ---- Aliases ----
  // A second, durable name for a collection. Aliases and collections share one namespace
  // (AlreadyExists on a clash); an alias points at a collection's real name, never at another
  // alias. AlterAlias switches the target atomically.
  virtual absl::Status CreateAlias(std::string_view alias, std::string_view collection) = 0;
  virtual absl::Status AlterAlias(std::string_view alias, std::string_view collection) = 0;
  virtual absl::Status DropAlias(std::string_view alias) = 0;
  // Every alias, ordered by alias.
  virtual absl::StatusOr<std::vector<AliasInfo>> ListAliases() = 0;

  // ---- Records ----
  // Inserts or replaces records, all or nothing: on error nothing of the batch is written.
  // A key may appear at most once per batch.
  virtual absl::Status Upsert(std::string_view collection, std::span<const Record> records,
                              const WriteOptions& options) = 0;
  // One entry per key, in order; nullopt where the key does not exist (or, with
  // options.tenant, is not visible to that tenant).
  virtual absl::StatusOr<std::vector<std::optional<Record>>> Get(std::string_view collection,
                                                                 std::span<const Key> keys,
                                                                 const ReadOptions& options) = 0;
  absl::StatusOr<std::vector<std::optional<Record>>> Get(std::string_view collection,
                                                         std::span<const Key> keys) {
    return Get(collection, keys, ReadOptions{});
  }
  // Deletes the keys that exist (all or nothing) and returns how many did.
  virtual absl::StatusOr<uint64_t> Delete(std::string_view collection, std::span<const Key> keys,
                                          const WriteOptions& options) = 0;

  // ---- Records by filter (shoal/filter.h) ----
  // `filter` is not owned; nullptr = every record. With options.tenant only the records that
  // tenant sees count, are returned or (DeleteByFilter) the ones it owns are deleted (records it
  // was only granted are left alone). Errors: InvalidArgument naming the field ("filter.and[1]",
  // "limit", "page_token"), NotFound (collection, tenant), DataLoss (a quarantined collection).
  //
  // How many live records pass `filter`. Answered from RAM (the attribute index).
  virtual absl::StatusOr<uint64_t> Count(std::string_view collection, const Filter* filter,
                                         const ReadOptions& options) = 0;
  // One page of the records that pass `filter`, in key order, read by iterating the key map
  // (never the whole collection in RAM). The token names the last key examined, not an offset:
  // a scroll resumed with it continues after that key whatever was written meanwhile. A record
  // that exists from the first page to the last is returned exactly once; one written or deleted
  // meanwhile may or may not be. Each page reads at most ~64k key rows (a selective filter may
  // return a short page with a token). InvalidArgument: limit outside 1..kMaxScrollLimit, a
  // token this call did not make.
  virtual absl::StatusOr<ScrollPage> Scroll(std::string_view collection, const Filter* filter,
                                            const ScrollOptions& scroll,
                                            const ReadOptions& options) = 0;
  // Deletes the records that pass `filter` when it starts and returns how many. Durable like
  // Delete (options.sync), applied in batches of kDeleteByFilterBatch records, each one atomic
  // RocksDB batch; writers wait for each batch, not for the whole call. A record rewritten
  // after the call started is a newer record and survives. If a batch fails (or the process
  // dies) midway, the batches already committed stay deleted, the rest stay whole (no record is
  // half deleted, nothing acknowledged is lost) and the error says how many were deleted;
  // running it again finishes the work.
  virtual absl::StatusOr<uint64_t> DeleteByFilter(std::string_view collection, const Filter* filter,
                                                  const WriteOptions& options) = 0;

  // Makes every write this DB has acknowledged so far durable, as WriteOptions::sync would
  // have (one fsync of the WAL, shared with concurrent synced writes). For callers that write
  // unsynced and record elsewhere what they applied (a cluster replica's applied sequence).
  // Errors: I/O errors of the sync; Unimplemented for a DB that cannot sync.
  virtual absl::Status SyncWrites() { return absl::UnimplementedError("SyncWrites"); }

  // ---- Index ----
  // Builds the collection's approximate index from a spec string and makes it serve searches;
  // blocks until done. Records written afterwards are searchable at once (searched exactly
  // beside the index until background maintenance moves them into its posting lists; see
  // Options::index_update_threads). "flat" returns to exact search.
  //   "spann:centroid_ratio=0.02,replicas=4,posting_cap=256,seed=1"
  // "" or "auto" chooses the spec from the data (count, dimension, metric and
  // Options::index_ram_bytes_limit; index/spann/spann_auto.h); "spann:auto,key=value" overrides
  // some of the choice. Every SSD build then calibrates SearchParams::target_recall on sampled
  // vectors, for unrestricted searches and for searches restricted to random parts of the
  // vectors (what a tenant's search reads at its density; spec calibration_queries=0 skips both).
  // Errors: InvalidArgument (bad spec, naming the key), ResourceExhausted (over
  // Options::index_ram_bytes_limit), NotFound.
  // `progress`, when set, is called on the building thread as phases start and advance.
  virtual absl::Status BuildIndex(std::string_view collection, std::string_view spec,
                                  const IndexBuildProgressFn& progress) = 0;
  absl::Status BuildIndex(std::string_view collection, std::string_view spec) {
    return BuildIndex(collection, spec, nullptr);
  }
  // Blocks until every write acknowledged so far is in the SSD index's posting lists and
  // deleted vectors are swept out of them (CollectionInfo::tombstones is then 0 unless deletes
  // came meanwhile). Background maintenance does both by itself, but sweeps lazily (below); this
  // is for tests, benchmarks and before a backup. The maintenance thread does the work, at its
  // low priority; the caller waits. OK at once without an SSD index or with
  // Options::index_update_threads = 0. Errors: I/O errors of the index files, NotFound,
  // Unavailable when the database closes meanwhile.
  virtual absl::Status FlushIndexUpdates(std::string_view collection) = 0;
  // Blocks until every write acknowledged so far is in the SSD index's posting lists, as
  // FlushIndexUpdates, but garbage-collects deleted vectors only as background maintenance
  // would have: a posting keeps a few deleted entries (skipped by searches, dropped by its next
  // rewrite) until tombstones build up. What a search sees is the same after either call. For
  // measuring sustained ingest without forcing a full sweep per call. Same errors; a DB that
  // cannot tell the two apart runs FlushIndexUpdates.
  virtual absl::Status DrainIndexUpdates(std::string_view collection) {
    return FlushIndexUpdates(collection);
  }

  // ---- Maintenance ----
  // Compacts the storage of one collection (or, with an empty name, of the whole database),
  // reclaiming the space of deleted and overwritten records. Blocks until done.
  virtual absl::Status Compact(std::string_view collection) = 0;
  // Writes a consistent copy of the whole database (storage checkpoint + index files) into the
  // new directory `dir` (its parent must exist; `dir` must not: AlreadyExists). Writes, index
  // builds and collection changes wait while it runs; reads continue. The copy is complete
  // only once this returns OK (a crash leaves "<dir>.tmp" behind, never a partial `dir`; a
  // failure removes it). Errors: AlreadyExists, ResourceExhausted (a disk full), Internal (I/O).
  virtual absl::Status Snapshot(const std::string& dir) = 0;
  // Replaces the database in directory `path` with the snapshot in `snapshot_dir` (made by
  // Snapshot). No DB may have `path` open. Crash-safe: the new contents are staged beside the
  // old ones and swapped in; an Open after a crash mid-swap finishes the swap.
  // Errors: NotFound / DataLoss (not a complete snapshot), IO errors.
  static absl::Status RestoreSnapshot(const std::string& snapshot_dir, const std::string& path);
  // The snapshot in `snapshot_dir` (NotFound unless it is complete), and every complete
  // snapshot directly under `root`, by name. Read-only; no DB needs to be open.
  static absl::StatusOr<SnapshotInfo> DescribeSnapshot(const std::string& snapshot_dir);
  static absl::StatusOr<std::vector<SnapshotInfo>> ListSnapshots(const std::string& root);

  // ---- Search ----
  // `queries` holds n * dimension floats (n >= 1) row-major; returns n lists of at most k hits,
  // closest first (ties broken by the older record first).
  virtual absl::StatusOr<std::vector<std::vector<Hit>>> Search(std::string_view collection,
                                                               std::span<const float> queries,
                                                               const SearchParams& params) = 0;

  // ---- Tenants (shoal/tenants.h) ----
  // Tenants live inside a collection; thousands per collection are cheap (no file, thread or
  // column family each). Errors: InvalidArgument (bad name or quota, naming the field),
  // AlreadyExists, NotFound (unknown collection or tenant, naming it).
  virtual absl::Status CreateTenant(std::string_view collection, const TenantSpec& spec) = 0;
  // Removes the tenant, its grants, and the records it owns (for every tenant they were
  // granted to); returns how many records were deleted.
  virtual absl::StatusOr<uint64_t> DropTenant(std::string_view collection, std::string_view tenant,
                                              const WriteOptions& options) = 0;
  // Tenants ordered by name, at most page_size (1..10000) from page_token ("" = the first).
  virtual absl::StatusOr<TenantPage> ListTenants(std::string_view collection, uint32_t page_size,
                                                 std::string_view page_token) = 0;
  virtual absl::StatusOr<TenantInfo> DescribeTenant(std::string_view collection,
                                                    std::string_view tenant) = 0;
  virtual absl::Status SetTenantQuotas(std::string_view collection, std::string_view tenant,
                                       const TenantQuotas& quotas) = 0;
  // Loads (kActive) or unloads (kInactive / kOffloaded) the tenant's structures; searches and
  // writes load an inactive tenant by themselves.
  virtual absl::Status SetTenantState(std::string_view collection, std::string_view tenant,
                                      TenantState state) = 0;
  // Makes existing records visible to (Grant) or hides them from (Revoke) `tenant` without
  // copying them, all or nothing. Granting to the owner, or twice, changes nothing; revoking
  // from the owner is FailedPrecondition. NotFound names the first key that does not exist.
  virtual absl::Status Grant(std::string_view collection, std::string_view tenant,
                             std::span<const Key> keys, const WriteOptions& options) = 0;
  virtual absl::Status Revoke(std::string_view collection, std::string_view tenant,
                              std::span<const Key> keys, const WriteOptions& options) = 0;
  // The tenants that see `key`: its owner first, then the grantees by name. NotFound when the
  // key does not exist.
  virtual absl::StatusOr<std::vector<std::string>> ListKeyTenants(std::string_view collection,
                                                                  const Key& key) = 0;
  // The same with the owner told apart from the grantees (ListKeyTenants cannot show whether
  // its first name owns the record or is a grantee of one without an owner). NotFound when
  // the key does not exist; Unimplemented where a DB does not tell.
  virtual absl::StatusOr<KeyTenants> DescribeKeyTenants(std::string_view collection,
                                                        const Key& key) {
    return absl::UnimplementedError("DescribeKeyTenants");
  }
  // Records `tenant` owns (`owned_only`) or sees.
  virtual absl::StatusOr<uint64_t> CountByTenant(std::string_view collection,
                                                 std::string_view tenant, bool owned_only) = 0;
  // Deletes every record `tenant` owns (for every tenant); returns how many.
  virtual absl::StatusOr<uint64_t> DeleteByTenant(std::string_view collection,
                                                  std::string_view tenant,
                                                  const WriteOptions& options) = 0;

  // ---- Semantic caches (shoal/cache.h) ----
  // Named caches of (prompt embedding -> response) for LLM serving, beside the collections
  // (their own namespace). Hard partitions, per-category policies, an exact-match shortcut on
  // the prompt, TTLs, quotas, learned and load-adaptive thresholds. Entries' vectors are held
  // in RAM, responses and metadata in RocksDB: an acknowledged CacheStore survives a crash
  // (sync as in WriteOptions) and an entry expired at reopen is never served.
  // Errors: InvalidArgument (naming the field: "embedding", "policy.threshold", ...), NotFound
  // (unknown cache, naming it; unknown entry id), AlreadyExists (CreateCache).
  virtual absl::Status CreateCache(const CacheSpec& spec) = 0;
  // Removes the cache and every entry, durably.
  virtual absl::Status DropCache(std::string_view cache) = 0;
  virtual absl::StatusOr<std::vector<CacheInfo>> ListCaches() = 0;  // by name
  // `category` "" sets the default policy (categories without their own use it).
  virtual absl::Status SetCachePolicy(std::string_view cache, std::string_view category,
                                      const CachePolicy& policy) = 0;
  // The category's own policy, or the default one when it has none.
  virtual absl::StatusOr<CachePolicy> GetCachePolicy(std::string_view cache,
                                                     std::string_view category) = 0;
  // Exact-match shortcut first (same partition and category), then the nearest entry of the
  // partition and category; never an expired entry.
  virtual absl::StatusOr<CacheLookupResult> CacheLookup(std::string_view cache,
                                                        const CacheLookupRequest& request) = 0;
  // Stores an entry and returns its id (0 when the category is disabled: nothing stored). The
  // same exact prompt in the same partition and category replaces the older entry. May evict
  // this category's entries to keep its quota.
  virtual absl::StatusOr<uint64_t> CacheStore(std::string_view cache,
                                              const CacheStoreRequest& request,
                                              const WriteOptions& options) = 0;
  // Removes the matching entries (or with dry_run only counts them); returns how many.
  virtual absl::StatusOr<uint64_t> CacheInvalidate(std::string_view cache,
                                                   const CacheInvalidation& which) = 0;
  // Reports whether a hit was right; wrong answers tighten the entry's and the category's
  // thresholds (a wrong exact hit removes the entry, and the entries near it in its partition
  // and category holding the same answer: its stale copies). NotFound for an unknown entry.
  virtual absl::Status CacheFeedback(std::string_view cache,
                                     const CacheFeedbackReport& feedback) = 0;
  virtual absl::StatusOr<CacheStats> GetCacheStats(std::string_view cache) = 0;
  // The current load of `model` in [0, 1] (e.g. queue depth / capacity), for the
  // load-adaptive band of every cache (CachePolicy::load_high). Not durable: 0 after open.
  virtual absl::Status ReportModelLoad(std::string_view model, double load) = 0;

  // ---- Integrity ----
  // Checks every invariant of `collection` ("" = all collections; see shoal/verify.h) and fills
  // *report (counts, and one line per problem). Reads every record, key row, posting page and
  // indexed vector: O(data size). Writes to a collection wait while it is checked; searches
  // go on. Errors: DataLoss when any invariant is broken (the first problem and how many);
  // NotFound (unknown collection); I/O errors that stopped the check.
  virtual absl::Status Verify(std::string_view collection, VerifyReport* report) = 0;

 protected:
  DB() = default;
};

}  // namespace shoal

#endif  // SHOAL_DB_H_

// RecordStore: the durable half of a Shoal database, in RocksDB (with its WAL):
// the collection catalog, each collection's records (key, vector, attributes, tags) by internal
// id, and the external key -> internal id map.
//
//   SHOAL_ASSIGN_OR_RETURN(auto store, RecordStore::Open(dir + "/rocksdb", {}));
//   RecordStore::Batch batch = store->NewBatch();
//   batch.PutRecord(cid, iid, record, /*new_key=*/true);
//   SHOAL_RETURN_IF_ERROR(store->Commit(batch, /*sync=*/true));
//
// Column families: "default" (catalog: collection rows, id counters, tenant rows), "records"
// (cid|iid -> encoded record), "keys" (cid|key -> iid), "index" (cid|'M' -> index manifest,
// cid|'P'|posting -> posting directory row, cid|'S'|iid -> tombstone, cid|'W' -> indexed-below
// watermark of online updates). A Batch commits atomically.
//
// Thread safety: all methods may be called concurrently (RocksDB is thread-safe); ordering of
// batches for one collection is the caller's business. A Batch is not thread-safe.
//
// Errors: Unavailable (directory locked by another process), DataLoss (corruption, names the
// key; a damaged WAL at Open, see StoreOptions::salvage_damaged_wal), Internal/IOError mapped to
// canonical codes by FromRocks (ENOSPC: ResourceExhausted).
//
// Write failures: when a WAL write or sync fails RocksDB stops accepting writes (a "background
// error"); reads go on. The next write first asks RocksDB to resume (storage/records/rocksdb_env.h:
// flush the memtables, start a fresh WAL); while it cannot (the fault persists) writes fail with
// Unavailable (ResourceExhausted when the disk is full), and they succeed again once the fault
// clears — except when the failed write found every memtable empty (the first write after a
// flush of all of them): RocksDB 7.8 cannot then replace its WAL writer, and writes stay
// Unavailable until a reopen. A write that failed may or may not be found after a reopen (it
// was never acknowledged).
//
// Durability: Commit(sync=true) returns after the WAL is fsynced, and with it every write
// committed before (the WAL is one sequence). Concurrent committers share fsyncs (RocksDB's
// group commit: the leader of a write group syncs for all of it). SyncWal() is that fsync
// without a write, for a synced call that turns out to change nothing.
#ifndef SHOAL_STORAGE_RECORDS_RECORD_STORE_H_
#define SHOAL_STORAGE_RECORDS_RECORD_STORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "shoal/tenants.h"
#include "shoal/types.h"
#include "storage/records/write_batch_pool.h"

namespace rocksdb {
class DB;
class Env;
class FileLock;
class ColumnFamilyHandle;
class WriteBatch;
class Status;
class SliceTransform;
struct ColumnFamilyOptions;
}  // namespace rocksdb

namespace shoal::storage {

struct StoreOptions {
  bool create_if_missing = true;
  // Opens without writing anything in `dir` (no WAL, MANIFEST, OPTIONS or info log; no obsolete
  // file deleted): for tools that inspect a directory. Every write is FailedPrecondition.
  bool read_only = false;
  // WAL recovery. By default a damaged WAL record (checksum mismatch, bad length) fails Open with
  // DataLoss, so that acknowledged writes after the damage are never dropped silently; only a
  // torn last record (a crash mid-append, never acknowledged) is tolerated. With
  // salvage_damaged_wal the WAL files are first copied to `<dir>.quarantine/<unix time>/` and
  // replay stops before the first damaged record, keeping everything before it.
  bool salvage_damaged_wal = false;
  size_t block_cache_bytes = 256u << 20;
  // RocksDB's Env (not owned); nullptr = the default. Tests pass a fault-injecting one
  // (storage/io/fault_injection.h).
  rocksdb::Env* env = nullptr;
};

// A collection as the catalog records it.
struct StoredCollection {
  uint32_t id = 0;
  CollectionSpec spec;
  uint64_t next_internal_id = 0;  // ids below this may have been used
};

// One posting list's row in the posting directory: where its pages are and how many entries.
struct PostingRow {
  uint32_t posting = 0;
  uint64_t first_page = 0;
  uint32_t num_pages = 0;
  uint32_t bytes = 0;
  uint32_t count = 0;
  // Postings made or re-centred by online updates (splits) also record the build-time tree leaf
  // they descend from and their own centroid; UINT32_MAX / empty: tree leaf `posting` and its
  // centroid.
  uint32_t origin = UINT32_MAX;
  std::vector<float> centroid;
};

// A collection's built index as the "index" column family records it.
struct StoredIndex {
  std::string manifest;              // the index's own description (opaque here)
  std::vector<PostingRow> postings;  // the posting directory, by posting id
  std::vector<uint64_t> stale_ids;   // tombstones: internal ids deleted or replaced since the build
  // Internal ids below this are in the posting lists (or tombstoned); 0 = the manifest's
  // indexed_below (no update applied yet).
  uint64_t indexed_below = 0;
};

// A change of a built index's directory made by online updates, committed as one batch.
struct IndexChange {
  std::vector<PostingRow> put;             // new or rewritten postings
  std::vector<uint32_t> removed;           // merged-away postings
  uint64_t indexed_below = 0;              // 0 = unchanged
  std::vector<uint64_t> erase_tombstones;  // ids no posting holds any more
};

// A tenant of a collection as the catalog records it (record_store_tenants.cc).
struct StoredTenant {
  uint32_t id = 0;  // 1, 2, ... per collection, never reused (rows of a dropped tenant never
                    // name a later one)
  std::string name;
  TenantState state = TenantState::kActive;
  TenantQuotas quotas;
};

// Everything the catalog holds about a collection's tenants: the tenants, who owns which
// internal id, and which ids were granted to which tenants.
struct StoredTenants {
  std::vector<StoredTenant> tenants;                  // by name
  std::vector<std::pair<uint32_t, uint64_t>> owners;  // (tenant id, internal id), by tenant
  std::vector<std::pair<uint32_t, uint64_t>> grants;  // (tenant id, internal id), by tenant
  uint32_t next_tenant_id = 1;
};

// Converts a RocksDB status to a canonical absl::Status, prefixing `context`.
absl::Status FromRocks(const rocksdb::Status& s, std::string_view context);

// The catalog family's memtable insert hint (record_store_tenants.cc): owner and grant rows are
// grouped by (collection, kind, tenant), so that a row is inserted from where its tenant's last
// row went instead of from the top of a skip list that holds every membership.
std::shared_ptr<const rocksdb::SliceTransform> NewTenantIdRowHint();
// The index family's (record_store_index.cc): posting rows and tombstone rows, each group by
// collection; IndexFamilyOptions is `base` with it.
std::shared_ptr<const rocksdb::SliceTransform> NewIndexRowHint();
rocksdb::ColumnFamilyOptions IndexFamilyOptions(const rocksdb::ColumnFamilyOptions& base);

class RecordStore {
 public:
  // A set of writes applied atomically by Commit. Made by NewBatch; must not outlive the store.
  class Batch {
   public:
    Batch(Batch&&) noexcept;
    ~Batch();
    // Writes the record under `internal_id`; with new_key also the key -> id mapping.
    void PutRecord(uint32_t collection_id, uint64_t internal_id, const Record& record,
                   bool new_key);
    void DeleteRecord(uint32_t collection_id, uint64_t internal_id, const Key& key);
    // Deletes only the record row (the key now maps to a newer internal id).
    void DeleteRecordRow(uint32_t collection_id, uint64_t internal_id);
    // Raises the collection's id counter to `next` (never lowers it: concurrent batches may
    // commit in any order).
    void SetNextInternalId(uint32_t collection_id, uint64_t next);
    // Records that the index's copy of `internal_id` is out of date (rewritten or deleted).
    void MarkStale(uint32_t collection_id, uint64_t internal_id);
    // ---- Tenant rows (record_store_tenants.cc), in the catalog family ----
    // The tenant's row (name -> id, state, quotas); raises the collection's tenant id counter.
    void PutTenant(uint32_t collection_id, const StoredTenant& tenant);
    // Removes the tenant's row and every owner and grant row of its id.
    void DeleteTenant(uint32_t collection_id, const StoredTenant& tenant);
    // `tenant_id` owns / was granted `internal_id` (the row is keyed tenant first, so that the
    // ids of one tenant are one range).
    void PutOwner(uint32_t collection_id, uint32_t tenant_id, uint64_t internal_id);
    void DeleteOwner(uint32_t collection_id, uint32_t tenant_id, uint64_t internal_id);
    void PutGrant(uint32_t collection_id, uint32_t tenant_id, uint64_t internal_id);
    void DeleteGrant(uint32_t collection_id, uint32_t tenant_id, uint64_t internal_id);
    size_t Count() const;

   private:
    friend class RecordStore;
    Batch(const RecordStore* store, size_t reserved_bytes);
    const RecordStore* store_;
    WriteBatchPool::Ptr batch_;  // from the store's pool, given back when the Batch goes
    std::string scratch_;        // PutRecord's encoded record (one buffer for the whole batch)
    // A point row (put, delete or merge) of the catalog family is in the batch: once committed
    // it keeps the catalog memtable non-empty, so Commit adds no marker row (see Write).
    bool catalog_row_ = false;
  };

  static absl::StatusOr<std::unique_ptr<RecordStore>> Open(const std::string& dir,
                                                           const StoreOptions& options);
  ~RecordStore();

  absl::StatusOr<std::vector<StoredCollection>> LoadCatalog();
  // Records a new collection (synced) and returns it with its fresh id.
  absl::StatusOr<StoredCollection> CreateCollection(const CollectionSpec& spec);
  // Removes the collection's catalog row, records and keys in one synced batch.
  absl::Status DropCollection(const StoredCollection& collection);

  // `reserved_bytes`: the batch's buffer sized up front (a single-key grant: ~64 bytes; a batch
  // of upserts: RecordRowsBytesBound of each record, so that the buffer is never regrown).
  Batch NewBatch(size_t reserved_bytes = 0) const { return Batch(this, reserved_bytes); }
  absl::Status Commit(Batch& batch, bool sync);
  // Makes every write committed so far durable (an fsync of the WAL); fails as Commit does.
  absl::Status SyncWal();

  absl::StatusOr<std::optional<Record>> GetRecord(uint32_t collection_id, uint64_t internal_id);
  // Many records in one batched read (RocksDB MultiGet); nullopt where a record is absent.
  absl::StatusOr<std::vector<std::optional<Record>>> GetRecords(
      uint32_t collection_id, std::span<const uint64_t> internal_ids);
  absl::StatusOr<std::optional<uint64_t>> LookupKey(uint32_t collection_id, const Key& key);
  // Calls `fn` for every record of the collection in internal-id order; stops at the first error.
  absl::Status ScanRecords(uint32_t collection_id,
                           const std::function<absl::Status(uint64_t, Record&&)>& fn,
                           uint64_t first_internal_id = 0);
  // Calls `fn` for every key -> internal id row of the collection.
  absl::Status ScanKeys(uint32_t collection_id,
                        const std::function<absl::Status(Key&&, uint64_t)>& fn);
  // Calls `fn` for the key rows after `after` (nullptr = from the first) in key order (uint64
  // keys ascending, then string keys by bytes: std::variant's order of Key) over one consistent
  // view, until `fn` returns false or an error (returned).
  absl::Status ScanKeysAfter(uint32_t collection_id, const Key* after,
                             const std::function<absl::StatusOr<bool>(Key&&, uint64_t)>& fn);

  // ---- Tenants (record_store_tenants.cc) ----
  // Every tenant row, owner row and grant row of the collection (one range scan).
  absl::StatusOr<StoredTenants> LoadTenants(uint32_t collection_id);

  // ---- Index column family ----
  // Replaces the collection's index rows (manifest, posting directory, stale marks) in one
  // synced batch.
  absl::Status CommitIndex(uint32_t collection_id, const std::string& manifest,
                           std::span<const PostingRow> postings);
  // Applies an online update's directory change in one batch (synced when `sync`). Like Commit,
  // it first resumes writes that an earlier failure stopped (Unavailable while it cannot).
  absl::Status CommitIndexChange(uint32_t collection_id, const IndexChange& change, bool sync);
  // Removes them (back to exact search).
  absl::Status ClearIndex(uint32_t collection_id);
  // nullopt when the collection has no index.
  absl::StatusOr<std::optional<StoredIndex>> LoadIndex(uint32_t collection_id);

  // ---- Administration (record_store_admin.cc) ----
  // Catalog rows "alias/NAME" -> collection name: every alias, ordered by alias.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> LoadAliases();
  // Sets the alias row (`collection` non-empty) or removes it (empty), synced.
  absl::Status PutAlias(std::string_view alias, std::string_view collection);
  // Compacts every column family, or only the rows of `collection_id`.
  absl::Status Compact(std::optional<uint32_t> collection_id);
  // A consistent point-in-time copy of the store (RocksDB checkpoint: hard links to the
  // immutable SST files plus copies of the live logs) in `dir`, which must not exist.
  absl::Status Checkpoint(const std::string& dir);
  // A .sst file in the store's directory that the MANIFEST does not reference: the output of a
  // flush or compaction a crash cut short (the next read-write open deletes it; harmless), or a
  // table a damaged MANIFEST lost (a read-write open would delete its data with it).
  struct UnreferencedTable {
    std::string name;
    // true: harmless — numbered below a live table (an input a finished flush or compaction
    // superseded, not yet deleted at the crash), incomplete (its write was cut short, so no
    // MANIFEST edit can have named it), or every key/value it holds is also in the open store
    // (an interrupted flush's writes are still in the WAL; an interrupted compaction's inputs
    // are still live). false: numbered above every live table and holding data the store lacks;
    // `detail` names the column family. (Not caught: a lost edit of a job that started before a
    // concurrent job whose edit survived.)
    bool harmless = false;
    std::string detail;
  };
  // Every unreferenced table, by name, with what it holds compared against the open store.
  absl::StatusOr<std::vector<UnreferencedTable>> UnreferencedTableFiles();

  // ---- Semantic-cache rows (record_store_cache.cc) ----
  // Catalog rows under "cache/": opaque bytes to the store; cache/ owns their format. `key`
  // is relative to that prefix. One CacheWrite list commits atomically (synced when `sync`).
  struct CacheWrite {
    std::string key;
    std::string value;
    enum class Kind { kPut, kDelete, kDeletePrefix } kind = Kind::kPut;
  };
  absl::Status WriteCacheRows(std::span<const CacheWrite> writes, bool sync);
  // Calls `fn` for every cache row whose (relative) key starts with `prefix`, in key order;
  // stops at the first error.
  absl::Status ScanCacheRows(
      std::string_view prefix,
      const std::function<absl::Status(std::string_view key, std::string_view value)>& fn);
  absl::StatusOr<std::optional<std::string>> GetCacheRow(std::string_view key);
  // The same into *value (its storage reused); false when there is no such row.
  absl::StatusOr<bool> GetCacheRow(std::string_view key, std::string* value);

 private:
  RecordStore() = default;
  // Writes `batch`, resuming first if an earlier write stopped RocksDB (see the file comment).
  // Adds the memtable marker row (KeepMemtableNonEmpty) unless `has_catalog_row`: the batch
  // holds a point row of the catalog family already, which keeps its memtable non-empty as well.
  absl::Status Write(rocksdb::WriteBatch* batch, bool sync, std::string_view context,
                     bool has_catalog_row = false) ABSL_LOCKS_EXCLUDED(resume_mu_);
  // Resume() after a failed write, when it can replace the failed WAL writer.
  absl::Status ResumeWrites(std::string_view context) ABSL_EXCLUSIVE_LOCKS_REQUIRED(resume_mu_);
  bool MemtablesEmpty();
  uint64_t CurrentWal();  // the number of the WAL written to now; 0 when RocksDB cannot tell
  absl::Status KeepMemtableNonEmpty();
  // UnreferencedTableFiles' check of one table.
  UnreferencedTable ClassifyUnreferenced(const std::string& name);
  bool read_only_ = false;
  rocksdb::FileLock* lock_ = nullptr;    // held while read-only (RocksDB holds its own otherwise)
  std::atomic<bool> stopped_{false};     // a write failed: Resume() before the next one
  absl::Mutex resume_mu_;                // writes hold it shared, ResumeWrites exclusively
  std::atomic<uint64_t> failed_wal_{0};  // CurrentWal() when the last write failed
  std::unique_ptr<rocksdb::Env> env_;    // storage/records/rocksdb_env.h; outlives db_
  rocksdb::DB* db_ = nullptr;
  rocksdb::ColumnFamilyHandle* catalog_ = nullptr;
  rocksdb::ColumnFamilyHandle* records_ = nullptr;
  rocksdb::ColumnFamilyHandle* keys_ = nullptr;
  rocksdb::ColumnFamilyHandle* index_ = nullptr;
  mutable WriteBatchPool batch_pool_;  // Batches' buffers, kept between batches
};

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_RECORDS_RECORD_STORE_H_

// Collection: one named set of vectors. It composes the parts that do the work:
//  - CollectionState (collection_state.h): what searches read — the optional SSD-resident
//    SpannIndex, the WriteBuffer of vectors it does not hold (all of them without one), the
//    tombstones, the key maps and the attribute index — behind one reader/writer lock;
//  - SearchPlanner (search_planner.h): which structures a query searches, filters, the merge;
//  - IndexMaintainer (index_maintainer.h): online updates — the maintenance and publisher
//    threads, the hand-off from writers, flush requests, retries after I/O errors;
//  - IndexLifecycle (index_lifecycle.h): the SSD index's open at load, builds, back to flat and
//    release at drop.
// Collection itself keeps the write path and loading the records.
//
// Write path: validate -> allocate internal ids (a rewritten key gets a new one, so an id's
// vector never changes) -> one RocksDB WriteBatch (records, key map, id counter, tombstones for
// the ids a SpannIndex exists beside: deleted or replaced) committed with the caller's sync
// level -> apply to the buffer and the key maps under the state's exclusive lock (the buffer's
// leaf bucket chosen before it, for a large batch mostly on a side thread while the commit
// sleeps in its fsync) -> hand the vectors to the maintainer. A write that fails to
// commit changes nothing. Searches take the lock shared, so they see a batch whole or not at all.
// The writer's exclusive hold is short: the buffer and the id-keyed tables grow in small steps
// (leaf buckets; base/sharded_hash.h), never by copying or rehashing all they hold at once.
//
// Group commit: a write claims its keys (in_flight_) under write_mu_, allocates ids and builds its
// batch, then releases write_mu_ before the commit, so synced writers to one collection wait on
// the WAL fsync together and RocksDB syncs once per write group. Writes that share a key are
// ordered: the later one waits until the earlier one is applied, so memory and disk agree on the
// last value. Index builds and Drop wait until no write is in flight.
//
// Lock order: write_mu_, the maintainer's work lock, the state's lock, the hand-off's lock.
// Thread safety: all methods are thread-safe.
#ifndef SHOAL_DB_COLLECTION_H_
#define SHOAL_DB_COLLECTION_H_

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "db/collection_state.h"
#include "db/index_form.h"
#include "db/index_lifecycle.h"
#include "db/index_maintainer.h"
#include "db/maintenance_budget.h"
#include "db/search_planner.h"
#include "db/side_thread.h"
#include "shoal/options.h"
#include "shoal/types.h"
#include "shoal/verify.h"
#include "storage/io/file_system.h"
#include "storage/records/record_store.h"

namespace shoal::db {

class Collection {
 public:
  // Loads the collection's records from `store` (not owned; must outlive the collection).
  // Index files live under `index_root`/c<id>.g<generation>/ and are written through `fs`
  // (not owned; must outlive the collection). `budget` (not owned, may be null = unbounded)
  // bounds background index maintenance DB-wide.
  static absl::StatusOr<std::unique_ptr<Collection>> Load(
      storage::RecordStore* store, const storage::StoredCollection& meta, const Options& options,
      const std::string& index_root, storage::FileSystem* fs, MaintenanceBudget* budget = nullptr);

  const CollectionSpec& spec() const { return spec_; }
  CollectionInfo Info() const;

  absl::Status Upsert(std::span<const Record> records, const WriteOptions& options);
  // With options.tenant, keys the tenant cannot see read as absent.
  absl::StatusOr<std::vector<std::optional<Record>>> Get(std::span<const Key> keys,
                                                         const ReadOptions& options);
  absl::StatusOr<uint64_t> Delete(std::span<const Key> keys, const WriteOptions& options);
  absl::StatusOr<std::vector<std::vector<Hit>>> Search(std::span<const float> queries,
                                                       const SearchParams& params) const;

  // ---- Records by filter (collection_scan.cc; shoal/db.h "Records by filter") ----
  absl::StatusOr<uint64_t> Count(const Filter* filter, const ReadOptions& options) const;
  absl::StatusOr<ScrollPage> Scroll(const Filter* filter, const ScrollOptions& scroll,
                                    const ReadOptions& options) const;
  // Batches of kDeleteByFilterBatch, each under write_mu_ once no write is in flight.
  absl::StatusOr<uint64_t> DeleteByFilter(const Filter* filter, const WriteOptions& options);

  // Builds the index named by `spec` ("flat" or "spann:..."); writes are held while it builds.
  absl::Status BuildIndex(const std::string& spec, const IndexBuildProgressFn& progress = nullptr);

  // Deletes everything durably; later calls get NotFound.
  absl::Status Drop();

  // Checks the collection's invariants, durable and in memory (db/verify.cc; shoal/verify.h),
  // adding to *report. Waits for writes in flight and holds writers off while it runs. Returns
  // errors that stopped the check (I/O), not broken invariants.
  absl::Status Verify(VerifyReport* report);

  // ---- Tenants (collection_tenants.cc; shoal/db.h "Tenants") ----
  // Tenant writes that touch many records (DropTenant, DeleteByTenant) wait until no write is
  // in flight and hold writers off while they commit: all or nothing, and no record can gain
  // the tenant as owner meanwhile.
  absl::Status CreateTenant(const TenantSpec& spec);
  absl::StatusOr<uint64_t> DropTenant(std::string_view tenant, const WriteOptions& options);
  absl::StatusOr<TenantPage> ListTenants(uint32_t page_size, std::string_view page_token) const;
  absl::StatusOr<TenantInfo> DescribeTenant(std::string_view tenant) const;
  absl::Status SetTenantQuotas(std::string_view tenant, const TenantQuotas& quotas);
  absl::Status SetTenantState(std::string_view tenant, TenantState state);
  // Grant (grant = true) or Revoke.
  absl::Status SetAccess(std::string_view tenant, std::span<const Key> keys,
                         const WriteOptions& options, bool grant);
  absl::StatusOr<std::vector<std::string>> ListKeyTenants(const Key& key) const;
  absl::StatusOr<KeyTenants> DescribeKeyTenants(const Key& key) const;
  absl::StatusOr<uint64_t> CountByTenant(std::string_view tenant, bool owned_only) const;
  absl::StatusOr<uint64_t> DeleteByTenant(std::string_view tenant, const WriteOptions& options);

  uint32_t id() const { return id_; }
  // The generation of the SSD index in use (its directory's name), 0 when there is none.
  uint64_t IndexGeneration() const;

  // Moves every write acknowledged so far into the SSD index's postings and, with `sweep_all`
  // when some are tombstoned, sweeps them all out (without: only a sweep that is due, and as
  // lazily as background maintenance would); returns the first error. OK at once without an SSD
  // index. The maintenance thread does the work (at its low priority); the caller waits.
  absl::Status FlushIndexUpdates(bool sweep_all) { return maintainer_.Flush(sweep_all); }
  // Holds background index maintenance (e.g. while a snapshot copies the index files) until
  // ResumeIndexUpdates; calls pair up on one thread.
  void PauseIndexUpdates() ABSL_NO_THREAD_SAFETY_ANALYSIS { maintainer_.ClaimWork(); }
  void ResumeIndexUpdates() ABSL_NO_THREAD_SAFETY_ANALYSIS { maintainer_.EndWorkClaim(); }

 private:
  class KeyClaim;
  // Who owns and sees each record of one Upsert batch, decided under write_mu_ and the state's
  // lock (shared), applied with the batch.
  struct TenantPlan {
    tenants::TenantId writer = tenants::kNoTenant;  // the tenant that writes (options.tenant)
    std::vector<tenants::TenantId> owners;          // per record
    std::vector<absl::InlinedVector<tenants::TenantId, 2>> grants;  // carried from a replaced id
    std::vector<uint64_t> bytes;                                    // per record
    uint64_t added_vectors = 0;                                     // quota reservation of `writer`
    int64_t added_bytes = 0;
  };
  Collection(storage::RecordStore* store, const storage::StoredCollection& meta,
             const Options& options, const std::string& index_root, storage::FileSystem* fs,
             MaintenanceBudget* budget);
  // Rebuilds the key maps, attributes and buffer from the records (at load).
  absl::Status LoadRecords() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_, state_.mu);
  const float* IndexForm(const std::vector<float>& v, std::vector<float>* scratch) const {
    return db::IndexForm(spec_.metric, v, scratch);
  }
  absl::Status CheckNotDropped() const ABSL_SHARED_LOCKS_REQUIRED(write_mu_);
  // For a synced call that turns out to write nothing: it still makes every write acknowledged
  // before it durable (WriteOptions::sync), so it syncs the WAL.
  absl::Status SyncIfAsked(const WriteOptions& options) const;
  // An Upsert batch's vectors as the buffer and the hand-off take them: their index forms
  // (copied when handed off or when they differ from the records' vectors: cosine) and, with an
  // SSD index, their buffer buckets (WriteBuffer::LeafOf). Neither needs the commit or the
  // state's lock: the side thread works them out while the commit waits for its fsync.
  struct ApplyForms {
    bool copy = false;
    std::vector<float> forms;      // records x dimension floats when copy
    std::vector<uint32_t> leaves;  // per record (0 without an SSD index)
  };
  // Batches of at least this many records have their ApplyForms worked out beside the commit
  // (smaller ones on the writer's thread: the hand-over would cost what it saves).
  static constexpr size_t kFormsBesideCommit = 16;
  // Records [begin, end) of `forms` (sized for `records`); `spann` as Upsert's.
  void PrepareForms(std::span<const Record> records, const index::SpannIndex* spann, size_t begin,
                    size_t end, ApplyForms* forms) const;
  // Upsert's last part, once committed: the buffer, key maps and attributes, then the hand-off.
  void ApplyUpsert(std::span<const Record> records, const std::vector<uint64_t>& ids,
                   const std::vector<std::optional<uint64_t>>& old, const index::SpannIndex* spann,
                   bool handoff, const TenantPlan& plan, ApplyForms forms);

  // ---- Records by filter (collection_scan.cc) ----
  // The tenant named by a read or write ("" = kNoTenant); NotFound for an unknown one.
  absl::StatusOr<tenants::TenantId> TenantIdOf(std::string_view tenant) const
      ABSL_SHARED_LOCKS_REQUIRED(state_.mu);
  // The current internal id of `key` when `reader` sees it and it passes `filter` (nullptr:
  // every record), else nullopt.
  std::optional<uint64_t> PassingId(const Key& key, tenants::TenantId reader,
                                    const Filter* filter) const
      ABSL_SHARED_LOCKS_REQUIRED(state_.mu);
  // The current records of `keys` (read in one batch) that `reader` sees, as the caller asks
  // for them (vectors, attributes); a key deleted meanwhile is left out.
  absl::StatusOr<std::vector<Record>> ReadCurrent(const std::vector<Key>& keys,
                                                  tenants::TenantId reader, const Filter* filter,
                                                  const ScrollOptions& scroll) const;
  // The live ids that pass `filter` and, with `owner`, that it owns; ascending.
  std::vector<uint64_t> MatchingIds(const Filter* filter, tenants::TenantId owner) const
      ABSL_SHARED_LOCKS_REQUIRED(state_.mu);
  // Search under the state's lock; with `ids`, each hit's internal id beside it.
  absl::StatusOr<std::vector<std::vector<Hit>>> SearchLocked(
      std::span<const float> queries, const SearchParams& params,
      std::vector<std::vector<uint64_t>>* ids) const;
  // Search's last step: the hits' records in one batched read (SearchParams::with_attributes).
  absl::Status FillHits(std::vector<std::vector<Hit>>* hits,
                        const std::vector<std::vector<uint64_t>>& ids,
                        const SearchParams& params) const;

  // ---- Tenants (collection_tenants.cc) ----
  // The record's size as tenant quotas count it: vector, key, attributes and tags.
  static uint64_t RecordBytes(const Record& r);
  absl::StatusOr<std::shared_ptr<TenantEntry>> FindTenant(std::string_view name) const
      ABSL_SHARED_LOCKS_REQUIRED(state_.mu);
  // RAM of the tenants' entries (catalog rows, statistics) and of the two maps that find them.
  size_t TenantEntriesBytes() const ABSL_SHARED_LOCKS_REQUIRED(state_.mu);
  // Makes a stored tenant known: its entry (found by name and by id) and its access-table slot.
  void AddTenantEntry(storage::StoredTenant t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Upsert: owner and grant rows of each record (a replaced record keeps its grants; without a
  // writing tenant, its owner too) into `batch`. PermissionDenied when the writing tenant
  // replaces a record it does not own.
  absl::Status PlanTenantRows(std::span<const Record> records, const std::vector<uint64_t>& ids,
                              const std::vector<std::optional<uint64_t>>& old,
                              storage::RecordStore::Batch* batch, TenantPlan* plan) const
      ABSL_SHARED_LOCKS_REQUIRED(state_.mu);
  // Reserves the plan's growth against the writer's quotas (ResourceExhausted naming the quota).
  absl::Status ReserveQuota(const TenantEntry& writer, const TenantPlan& plan)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_) ABSL_SHARED_LOCKS_REQUIRED(state_.mu);
  void ReleaseQuota(const TenantPlan& plan) ABSL_LOCKS_EXCLUDED(write_mu_);
  // `leaves`: each new id's tree leaf (for the tenant tree).
  void ApplyTenantRows(const TenantPlan& plan, const std::vector<uint64_t>& ids,
                       const std::vector<std::optional<uint64_t>>& old,
                       const std::vector<uint32_t>& leaves)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Takes `iid` (going away: deleted or rewritten) out of the tenant tree for every tenant that
  // sees it, and forgets its leaf.
  void DetachFromTenantTree(uint64_t iid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // The tree leaf of each of `iids`: the tenant tree's, else from its record, read in batches
  // (0 without an SSD index).
  std::vector<uint32_t> TenantTreeLeaves(std::span<const uint64_t> iids) const
      ABSL_SHARED_LOCKS_REQUIRED(state_.mu);
  // Asks for the lines a Grant or Revoke of `keys` by `t` will read and write, so that their
  // misses overlap instead of following each other: each id's access slot and t's ids around it
  // (read by the check, written by the apply) and the id's leaf in the tenant tree (read by the
  // tree's update).
  void PrefetchAccess(std::span<const Key> keys, tenants::TenantId t) const
      ABSL_SHARED_LOCKS_REQUIRED(state_.mu);
  // A fresh tenant tree over the current index's centroid tree, every visible id attached.
  void RebuildTenantTree() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Delete's rows for one live record (record, key, tombstone, owner and grant rows).
  void AddDeleteRows(uint64_t iid, const Key& key, storage::RecordStore::Batch* batch) const
      ABSL_SHARED_LOCKS_REQUIRED(state_.mu);
  // Removes committed deletes from RAM.
  void ApplyDeletes(const std::vector<uint64_t>& ids) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Deletes every record `t` owns (writers held off); with `drop`, the tenant too.
  absl::StatusOr<uint64_t> DeleteOwned(std::string_view tenant, const WriteOptions& options,
                                       bool drop);
  // Open: the tenant rows into RAM (before LoadRecords, which fills in record sizes), then
  // ForgetDeadTenantRows drops ids that have no record.
  absl::Status LoadTenants() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  void ForgetDeadTenantRows() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  storage::RecordStore* const store_;
  const uint32_t id_;
  const CollectionSpec spec_;
  const Options options_;

  // Guards id allocation and the keys of writes in flight (see group commit above); held across
  // an index build. Taken before every other lock.
  mutable absl::Mutex write_mu_;
  uint64_t next_internal_id_ ABSL_GUARDED_BY(write_mu_);
  absl::flat_hash_set<Key> in_flight_ ABSL_GUARDED_BY(write_mu_);
  bool dropped_ ABSL_GUARDED_BY(write_mu_) = false;
  // Quota reservations of Upserts between their check and their apply, per tenant.
  struct Reserved {
    uint64_t vectors = 0;
    int64_t bytes = 0;
  };
  absl::flat_hash_map<tenants::TenantId, Reserved> reserved_ ABSL_GUARDED_BY(write_mu_);

  CollectionState state_;
  const SearchPlanner planner_;
  SideThread forms_beside_commit_{/*chunk=*/8};  // Upsert's PrepareForms
  IndexLifecycle lifecycle_;                     // builds run under write_mu_
  // Declared last: destroyed first, so its threads stop before the state they change goes.
  IndexMaintainer maintainer_;
};

}  // namespace shoal::db

#endif  // SHOAL_DB_COLLECTION_H_

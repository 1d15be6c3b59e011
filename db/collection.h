// Collection: one named set of vectors. Owns what answers searches — an optional SSD-resident
// SpannIndex plus a buffer of the vectors the SpannIndex does not hold (all of them, in an exact
// FlatIndex, when there is no SpannIndex) — and writes through to the RecordStore (RocksDB) before
// anything becomes visible.
//
// Write path: validate -> allocate internal ids (a rewritten key gets a new one, so an id's
// vector never changes) -> one RocksDB WriteBatch (records, key map, id counter, tombstones for
// the ids a SpannIndex exists beside: deleted or replaced) committed with the caller's sync
// level -> apply to the buffer (the vectors not yet in the posting lists) and the key maps
// under an exclusive lock. A write that fails to commit changes nothing. Searches take the lock
// shared, so they see a batch whole or not at all.
// Search = SpannIndex (skipping tombstoned ids) merged with the buffer. Without a SpannIndex the
// buffer is the FlatIndex; with one it is LeafBuckets (each vector under its nearest tree leaf,
// bucket chosen outside the lock), scanned whole while small, else only the buckets of the
// query's nearest leaves (as many as the postings it scans), so a backlog of index work does not
// make every search scan the whole buffer (collection_buffer.cc).
// The writer's exclusive hold is short: the buffer and the id-keyed tables grow in small steps
// (leaf buckets; base/sharded_hash.h), never by copying or rehashing all they hold at once.
//
// Online updates (collection_updates.cc): a maintenance thread moves buffered vectors into the
// SpannIndex's postings through a SpannUpdater — data pages first, then one RocksDB batch with
// the new directory rows and the advanced watermark `indexed_below_` (ids below it are in the
// postings or tombstoned), then the new directory is published; after that the publisher thread
// advances indexed_below_ and takes the ids out of the buffer: a reader sees each vector in at
// least one of the two (a search merges duplicates). Tombstones accumulate until a sweep has
// rewritten every posting holding them; then the publisher erases them.
// The maintenance thread runs at the lowest CPU priority, so it never holds mu_ beyond a brief
// look: preempted while holding it — or while queued for it, which holds new readers back — it
// would stall every search for as long as other work keeps it off the CPU. Writers hand it their
// vectors through handoff_mu_ (pending_), and its changes to what searches read go through the
// publisher, which runs at normal priority and holds mu_ a slice at a time.
//
// Filtered search (SearchParams::filter): the AttributeIndex (every live record's attributes and
// tags in RAM, maintained with the key maps on Upsert / Delete / Load) turns the filter into a
// bitmap of passing internal ids once per request; ids outside it are never scored:
//  - no SpannIndex: the FlatIndex scan checks the bitmap row by row (exact).
//  - SpannIndex, few passing ids (<= max(kExactFilterIds, 64 k)): exact brute force over the
//    passing ids — those the FlatIndex holds through its filtered scan, the SpannIndex's ones
//    read back from RocksDB. Exact, and k hits whenever k pass.
//  - SpannIndex, many passing ids: the SpannIndex checks the bitmap (and the stale ids) during its
//    scan, merged with the FlatIndex's filtered scan. A query left with fewer than
//    min(k, passing) hits (its nearest postings held too few passing ids) is answered by the
//    exact path instead.
// The exact path reads records under the shared lock; a write committed to RocksDB but not yet
// applied may then show its new vector with the old attributes (a one-request anomaly).
//
// Group commit: a write claims its keys (in_flight_) under write_mu_, allocates ids and builds its
// batch, then releases write_mu_ before the commit, so synced writers to one collection wait on
// the WAL fsync together and RocksDB syncs once per write group. Writes that share a key are
// ordered: the later one waits until the earlier one is applied, so memory and disk agree on the
// last value. Index builds and Drop wait until no write is in flight.
//
// Thread safety: all methods are thread-safe.
#ifndef SHOAL_DB_COLLECTION_H_
#define SHOAL_DB_COLLECTION_H_

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "base/paged_id_set.h"
#include "base/sharded_hash.h"
#include "db/attribute_index.h"
#include "db/maintenance_budget.h"
#include "index/flat_index.h"
#include "index/id_filter.h"
#include "index/leaf_buckets.h"
#include "index/spann_index.h"
#include "index/spann_updater.h"
#include "shoal/options.h"
#include "shoal/types.h"
#include "shoal/verify.h"
#include "storage/file_system.h"
#include "storage/record_store.h"

namespace shoal::db {

// The vector as an index stores it: unit length for cosine, else `v` itself. May use *scratch.
const float* IndexForm(Metric metric, const std::vector<float>& v, std::vector<float>* scratch);

class Collection {
 public:
  // Loads the collection's records from `store` (not owned; must outlive the collection).
  // Index files live under `index_root`/c<id>.g<generation>/ and are written through `fs`
  // (not owned; must outlive the collection). `budget` (not owned, may be null = unbounded)
  // bounds background index maintenance DB-wide.
  static absl::StatusOr<std::unique_ptr<Collection>> Load(
      storage::RecordStore* store, const storage::StoredCollection& meta, const Options& options,
      const std::string& index_root, storage::FileSystem* fs, MaintenanceBudget* budget = nullptr);
  ~Collection();

  const CollectionSpec& spec() const { return spec_; }
  CollectionInfo Info() const;

  absl::Status Upsert(std::span<const Record> records, const WriteOptions& options);
  absl::StatusOr<std::vector<std::optional<Record>>> Get(std::span<const Key> keys);
  absl::StatusOr<uint64_t> Delete(std::span<const Key> keys, const WriteOptions& options);
  absl::StatusOr<std::vector<std::vector<Hit>>> Search(std::span<const float> queries,
                                                       const SearchParams& params) const;

  // Builds the index named by `spec` ("flat" or "spann:..."); writes are held while it builds.
  absl::Status BuildIndex(const std::string& spec, const IndexBuildProgressFn& progress = nullptr);

  // Deletes everything durably; later calls get NotFound.
  absl::Status Drop();

  // Checks the collection's invariants, durable and in memory (db/verify.cc; shoal/verify.h),
  // adding to *report. Waits for writes in flight and holds writers off while it runs. Returns
  // errors that stopped the check (I/O), not broken invariants.
  absl::Status Verify(VerifyReport* report);

  uint32_t id() const { return id_; }
  // The generation of the SSD index in use (its directory's name), 0 when there is none.
  uint64_t IndexGeneration() const;

  // Moves every write acknowledged so far into the SSD index's postings and, when some are
  // tombstoned, sweeps them out; returns the first error. OK at once without an SSD index. The
  // maintenance thread does the work (at its low priority); the caller waits.
  absl::Status FlushIndexUpdates();
  // Holds background index maintenance (e.g. while a snapshot copies the index files) until
  // ResumeIndexUpdates; calls pair up on one thread.
  void PauseIndexUpdates() ABSL_EXCLUSIVE_LOCK_FUNCTION(work_mu_) { work_mu_.Lock(); }
  void ResumeIndexUpdates() ABSL_UNLOCK_FUNCTION(work_mu_) { work_mu_.Unlock(); }

 private:
  class KeyClaim;
  Collection(storage::RecordStore* store, const storage::StoredCollection& meta,
             const Options& options, const std::string& index_root, storage::FileSystem* fs,
             MaintenanceBudget* budget);
  // Load helpers (collection_index.cc).
  absl::Status OpenIndex(const storage::StoredIndex& stored)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_, mu_);
  absl::Status LoadRecords() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_, mu_);
  absl::Status BuildSpann(const std::string& spec, const IndexBuildProgressFn& progress)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::Status DropSpann() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  std::string IndexDir(uint64_t generation) const;
  // Index RAM: Options::index_ram_bytes_limit minus the fixed parts, for the posting cache.
  size_t CacheBudget(size_t fixed_bytes) const;
  bool InSpann(uint64_t iid) const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return spann_ != nullptr && iid < indexed_below_;
  }
  // The vector as the index stores it (unit length for cosine).
  const float* IndexForm(const std::vector<float>& v, std::vector<float>* scratch) const;
  absl::Status CheckNotDropped() const ABSL_SHARED_LOCKS_REQUIRED(write_mu_);
  // ---- The buffer: flat_ without an SSD index, buckets_ with one ----
  // The tree leaf nearest to `v` (index form): its bucket in buckets_.
  static uint32_t BufferLeaf(const index::SpannIndex& spann, const float* v);
  void BufferAdd(uint64_t iid, const float* v, uint32_t leaf) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void BufferRemove(uint64_t iid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  size_t BufferSize() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return buckets_ != nullptr ? buckets_->size() : flat_.size();
  }
  bool BufferContains(uint64_t iid) const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return buckets_ != nullptr ? buckets_->Contains(iid) : flat_.Contains(iid);
  }
  size_t BufferMemoryBytes() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return buckets_ != nullptr ? buckets_->MemoryBytes() : flat_.MemoryBytes();
  }
  // Empties the buffer, shaped for the current spann_ (or none).
  void ResetBuffer() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Is the buffer searched through its buckets (with an SSD index, once over 64 KiB), not whole?
  bool BufferBucketed() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The top-k of each query among the buffer's buckets of leaves[i] (the leaves the SpannIndex
  // navigated to: the buffer is searched as if its vectors were already in their postings).
  std::vector<std::vector<index::Neighbor>> SearchBuckets(
      const float* q, size_t n, size_t k, const std::vector<std::vector<uint32_t>>& leaves,
      const index::IdFilter* allow) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The buffer's exact top-k for each query.
  std::vector<std::vector<index::Neighbor>> SearchBufferExactly(const float* q, size_t n, size_t k,
                                                                size_t threads,
                                                                const index::IdFilter* allow) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // ---- Online updates (collection_updates.cc) ----
  // (Re)creates the updater and maintenance thread for the current SpannIndex.
  absl::Status StartUpdates() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  void WorkerLoop();
  // One drain step: up to index_update_batch buffered vectors into the postings. Sets *done
  // when the buffer was empty.
  absl::Status DrainStep(bool* done) ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // GC / merge / split over all postings, then erases the tombstones it made unreferenced.
  absl::Status Sweep() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // Rewrites vectors.dat without its dead slots when Options::index_update_compact_live_fraction
  // says so (SpannUpdater::CompactVectors); `now_retry`: even right after a failed one.
  absl::Status CompactVectorsIfDue(bool now_retry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // Commits one updater change (its directory change, in RocksDB rows, with the watermark
  // `watermark` (0: unchanged) and the tombstones `erased`) and publishes it; `drained` (moved
  // into the postings) leave the buffer and, with `sweep_done`, the sweep's count is taken once
  // its tombstones are erased — both by the publisher.
  absl::Status Apply(index::SpannUpdater::Change change, uint64_t watermark,
                     std::vector<uint64_t> drained, std::vector<uint64_t> erased,
                     bool sweep_done = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // The publisher thread: applies publications_ in order (normal CPU priority).
  void PublisherLoop();
  struct Publication;
  void Publish(const Publication& p);
  // Returns once every publication queued so far is applied.
  void AwaitPublished();
  // Queues buffered writes for the maintenance thread (handoff_mu_ held).
  struct PendingBatch;
  void AddPending(PendingBatch batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(handoff_mu_);
  // Forgets the queued writes and publications (a new index, or none).
  void ClearHandoff();
  bool SweepDue() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Brings dead_ up to stale_ from stale_log_ (without holding mu_).
  void SyncDead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // Tombstones `iid` in RAM (stale_, and stale_log_ for the maintenance thread's copy).
  void MarkStale(uint64_t iid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets every tombstone (a new index, or none).
  void ClearStale() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_, mu_);
  // Writers wait here (before committing) while the buffer is over the backlog.
  absl::Status AwaitBacklog();
  // Filtered search (see the file comment); `q` holds n queries in index form.
  // The SpannIndex (skipping stale ids) merged with the FlatIndex, or the FlatIndex alone;
  // `allow` (nullable) is checked during both scans.
  absl::StatusOr<std::vector<std::vector<index::Neighbor>>> SearchIndexes(
      const float* q, size_t n, const SearchParams& params, size_t threads,
      const index::IdFilter* allow) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<std::vector<index::Neighbor>>> SearchFiltered(
      const float* q, size_t n, const SearchParams& params, size_t threads) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Exact top-k over the ids in `allowed` (FlatIndex rows + records read from RocksDB).
  absl::StatusOr<std::vector<std::vector<index::Neighbor>>> SearchAllowedExactly(
      const float* q, size_t n, size_t k, size_t threads, const index::IdBitmap& allowed,
      SearchStats* stats) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  storage::RecordStore* const store_;
  const uint32_t id_;
  const CollectionSpec spec_;
  const Options options_;
  const std::string index_root_;
  storage::FileSystem* const fs_;

  // Guards id allocation and the keys of writes in flight (see group commit above); held across
  // an index build. Taken before mu_.
  mutable absl::Mutex write_mu_;
  uint64_t next_internal_id_ ABSL_GUARDED_BY(write_mu_);
  absl::flat_hash_set<Key> in_flight_ ABSL_GUARDED_BY(write_mu_);
  uint64_t last_generation_ ABSL_GUARDED_BY(write_mu_) = 0;  // of the last index build tried
  bool dropped_ ABSL_GUARDED_BY(write_mu_) = false;

  MaintenanceBudget* const budget_;

  // Serialises index mutation: the maintenance worker vs builds and drops. After write_mu_.
  mutable absl::Mutex work_mu_ ABSL_ACQUIRED_AFTER(write_mu_);
  std::unique_ptr<index::SpannUpdater> updater_ ABSL_GUARDED_BY(work_mu_);
  // The maintenance thread's copy of stale_ (as of its last SyncDead): what drains and sweeps
  // drop from postings, read without holding mu_.
  absl::flat_hash_set<uint64_t> dead_ ABSL_GUARDED_BY(work_mu_);
  uint64_t updater_generation_ ABSL_GUARDED_BY(work_mu_) = 0;  // of the index updater_ changes
  std::thread worker_;     // started by StartUpdates (work_mu_ held), joined by the destructor
  std::thread publisher_;  // likewise

  // Guards what searches read.
  mutable absl::Mutex mu_ ABSL_ACQUIRED_AFTER(work_mu_);
  // The buffer of vectors the SpannIndex does not hold: without a SpannIndex flat_ (all vectors);
  // with one buckets_, grouped by their nearest tree leaf, so that a large buffer costs a search
  // only the buckets of its nearest leaves (flat_ stays empty; buckets_ is null without one).
  index::FlatIndex flat_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<index::LeafBuckets> buckets_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<index::SpannIndex> spann_ ABSL_GUARDED_BY(mu_);
  // Ids below this are in the SpannIndex's postings or tombstoned (the build's indexed_below,
  // advanced by online updates).
  uint64_t indexed_below_ ABSL_GUARDED_BY(mu_) = 0;
  // Tombstones: ids deleted or replaced that some posting may still hold. A bitmap: a search
  // checks every candidate it scans against it.
  base::PagedIdSet stale_ ABSL_GUARDED_BY(mu_);
  // Ids added to stale_ since the maintenance thread last took them into dead_ (taken after mu_).
  mutable absl::Mutex stale_log_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::vector<uint64_t> stale_log_ ABSL_GUARDED_BY(stale_log_mu_);
  size_t tombstones_at_sweep_ ABSL_GUARDED_BY(mu_) = 0;  // stale_.size() after the last sweep
  base::ShardedHashMap<Key, uint64_t> id_of_ ABSL_GUARDED_BY(mu_);
  base::ShardedHashMap<uint64_t, Key> key_of_ ABSL_GUARDED_BY(mu_);
  AttributeIndex attrs_ ABSL_GUARDED_BY(mu_);  // attributes and tags of every live record

  // ---- Hand-off between writers, the maintenance thread and the publisher ----
  // Buffered writes awaiting the postings, with their vectors (index form): the maintenance
  // thread reads them here, not from the buffer under mu_.
  struct PendingBatch {
    std::vector<uint64_t> ids;   // ascending
    std::vector<float> vectors;  // ids.size() rows
  };
  // One step's change to what searches read, applied by the publisher.
  struct Publication {
    uint64_t generation = 0;        // of the SpannIndex it belongs to (skipped once replaced)
    uint64_t watermark = 0;         // indexed_below_ advances to it (0: no change)
    std::vector<uint64_t> drained;  // in the published postings: they leave the buffer
    std::vector<uint64_t> erased;   // tombstones no posting holds any more
    bool sweep_done = false;        // then tombstones_at_sweep_ = stale_.size()
  };
  mutable absl::Mutex handoff_mu_ ABSL_ACQUIRED_AFTER(mu_);
  // By first id; shared, so that a drain step copies them without holding handoff_mu_.
  std::map<uint64_t, std::shared_ptr<const PendingBatch>> pending_ ABSL_GUARDED_BY(handoff_mu_);
  size_t pending_ids_ ABSL_GUARDED_BY(handoff_mu_) = 0;
  // First id of each write batch committed or committing but not yet in pending_: the watermark
  // stays below them.
  std::multiset<uint64_t> unapplied_ ABSL_GUARDED_BY(handoff_mu_);
  std::deque<Publication> publications_ ABSL_GUARDED_BY(handoff_mu_);
  bool publishing_ ABSL_GUARDED_BY(handoff_mu_) = false;  // the publisher holds one
  bool closing_ ABSL_GUARDED_BY(handoff_mu_) = false;
  absl::Status update_error_ ABSL_GUARDED_BY(handoff_mu_);  // last failed maintenance step
  // FlushIndexUpdates requests (numbered from 1) and the last one the maintenance thread served,
  // with the status of the round that served it.
  uint64_t flush_requested_ ABSL_GUARDED_BY(handoff_mu_) = 0;
  uint64_t flush_served_ ABSL_GUARDED_BY(handoff_mu_) = 0;
  absl::Status flush_status_ ABSL_GUARDED_BY(handoff_mu_);
  index::UpdateStats update_stats_ ABSL_GUARDED_BY(handoff_mu_);
};

}  // namespace shoal::db

#endif  // SHOAL_DB_COLLECTION_H_

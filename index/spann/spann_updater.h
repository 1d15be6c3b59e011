// SpannUpdater: online inserts and background maintenance of a built SpannIndex (after SPFresh's
// LIRE). It never changes what a reader sees in place: each call builds the next
// PostingDirectory beside the current one and returns it as a Change, which describes what
// changed in the index's own terms (index/postings/posting_change.h: postings written and removed,
// splits, moves); the caller makes that durable (the collection turns it into RocksDB rows) and
// then calls Publish, which swaps the directory in whole.
//
//   SHOAL_ASSIGN_OR_RETURN(auto up, SpannUpdater::Open(index.get(), dir, {}));
//   SHOAL_ASSIGN_OR_RETURN(SpannUpdater::Change c, up->Insert(ids, vectors, is_dead));
//   SHOAL_RETURN_IF_ERROR(CommitDurably(c.directory));   // the caller's commit point
//   up->Publish(std::move(c));
//
// Insert: each vector is written to vectors.dat, then joins up to `replicas` postings chosen by
// SPANN's RNG rule over the current centroids (as the builder does). A posting that only gained
// entries is appended to: a segment of the new entries goes to the pages right after its extent,
// which the updater keeps free for it when it writes the posting (half its pages, at least 4); the
// row then covers the longer extent and no page a committed row names is touched. Tombstoned
// entries do not stop an append while they are under a quarter of the posting (they stay in it,
// skipped by searches, until the next sweep or rewrite). Otherwise (many tombstoned entries, no
// pages kept, or too much of the extent would be partly filled pages) the posting is rewritten
// copy-on-write: its entries (tombstoned ones dropped) plus the new ones go to freshly allocated
// pages; the old extent is retired. Quantized tier: codes are encoded
// against the posting's centroid and kept in RAM as well as in the posting. Split (a posting over
// the manifest's posting_cap): balanced 2-means (index/postings/posting_split.h); the posting keeps
// one half and centroid, a new posting (a new number, descending from the same tree leaf) takes the
// other; codes are rebuilt. Then LIRE's reassignment: (1) a vector of the split posting that was no
// farther from the old centroid than from both new ones moves to its nearest posting when that is
// neither half; (2) a vector of the `reassign_postings` postings nearest the old centroid moves to
// the nearer half when a new centroid is closer than its own. Appends from reassignment may split
// again, at most `max_cascade` levels per change; a posting still over the cap waits for the next
// change (the cap is soft: a full posting never fails). Sweep: rewrites postings holding tombstoned
// ids (GC: every one, or lazily only those a quarter or more tombstoned, reporting the tombstoned
// ids left in the others), merges a posting with fewer than `merge_floor` live entries into the
// postings its vectors' RNG choice picks, splits over-full ones.
//
// CompactVectors (spann_updater_vectors.cc): when most slots of vectors.dat hold vectors no one
// needs (deleted records whose tombstones were swept), the vectors still needed are copied into
// vectors.dat.compact (packed, ascending ids), which is fsynced and renamed over vectors.dat
// (the directory fsynced: the switch's commit point); the updater then writes to the new file
// and, quantized tier, publishes a directory naming it. Searches still holding the old
// directory read the old file, whose inode is freed when the last of them lets go.
//
// Durability: data pages (posting extents, vectors.dat) are written and fdatasynced (when
// `sync`) before Insert/Sweep return, i.e. before the caller's directory commit; retired extents
// return to the free pool only after Publish and after the last reader of the older directory
// let go of it.
//
// Thread safety: Insert, Sweep and Publish must be called by one thread at a time (the
// collection's maintenance worker); searches on the index may run concurrently with all of them.
// Errors: I/O errors and DataLoss from the files; after an error nothing is published and the
// index is unchanged, and the updater stays usable: the caller retries the same work once the
// fault clears, with no reopen (the collection's maintenance thread does, backing off). A failed
// Insert or Sweep frees the pages it wrote (no committed row names them; the files do not latch
// on errors, see storage/pages/posting_file.h), and vectors.dat keeps the pages it failed to make
// durable buffered for the next Sync (the retry Puts the batch again as well). A Change whose
// commit (the caller's) failed keeps its pages allocated until the next Open: the commit may
// have reached RocksDB after all, and a committed row's pages must never be reused.
#ifndef SHOAL_INDEX_SPANN_SPANN_UPDATER_H_
#define SHOAL_INDEX_SPANN_SPANN_UPDATER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "index/postings/posting_change.h"
#include "index/postings/posting_directory.h"
#include "index/spann/spann_index.h"
#include "storage/pages/page_allocator.h"
#include "storage/pages/posting_file.h"
#include "storage/pages/vector_file.h"

namespace shoal::index {

// True for internal ids that are tombstoned (deleted or replaced).
using DeadFn = std::function<bool(uint64_t)>;

// Which postings a sweep rewrites to drop their tombstoned entries.
enum class SweepGc {
  kAll,       // every posting holding one
  kWhenMany,  // those a quarter or more tombstoned (as a drain does): lazy GC, after SPFresh
};

struct UpdaterOptions {
  uint32_t merge_floor = 0;        // merge below this many live entries; 0 = posting_cap / 10
  uint32_t reassign_postings = 8;  // LIRE condition 2: postings nearest a split one to check
  uint32_t max_cascade = 2;        // split levels one change may chain
  bool sync = true;                // fdatasync data files before a change is returned
  // Insert appends new entries to a posting (pages after its extent) instead of rewriting it,
  // where the pages kept for it allow (false: every change rewrites; for comparisons).
  bool append_in_place = true;
  storage::FileSystem* fs = nullptr;  // posting / vector file writes (null = the default)
  // Called between units of work (each vector placed, posting written or posting swept):
  // where the caller's maintenance thread can give way to threads waiting for its CPU (empty:
  // never called). A non-OK status abandons the Insert or Sweep in progress as a failed one
  // (nothing published, its pages freed; see Errors above), which returns that status: the
  // caller hands the work to another thread.
  std::function<absl::Status()> yield;
  // Told about every published change (not owned; null: none). Must outlive the updater.
  PostingObserver* observer = nullptr;
};

struct UpdateStats {
  uint64_t inserted = 0;               // vectors added
  uint64_t splits = 0;                 // postings split in two
  uint64_t merges = 0;                 // postings merged away
  uint64_t reassigned = 0;             // vectors moved by LIRE's reassignment or a merge
  uint64_t gc_entries = 0;             // tombstoned entries dropped from rewritten postings
  uint64_t postings_written = 0;       // extents written (copy-on-write) or appended to
  uint64_t posting_appends = 0;        // of those, appends: only the new entries' pages written
  uint64_t posting_bytes_written = 0;  // posting-file pages written
  uint64_t vector_compactions = 0;     // vectors.dat rewritten without its dead slots
};

class SpannUpdater {
 public:
  struct Change {
    std::shared_ptr<PostingDirectory> next;  // the directory to publish
    DirectoryChange directory;               // what changed, for the caller to make durable
    std::vector<storage::Extent> retired;    // extents `next` no longer references
    std::vector<uint64_t> uncache;           // their serials: dropped from the caches at Publish
  };

  // `index` (not owned) must outlive the updater; `dir` is its directory.
  static absl::StatusOr<std::unique_ptr<SpannUpdater>> Open(SpannIndex* index,
                                                            const std::string& dir,
                                                            const UpdaterOptions& options);
  ~SpannUpdater();

  // `vectors` holds ids.size() x dim floats (index form).
  absl::StatusOr<Change> Insert(std::span<const uint64_t> ids, const float* vectors,
                                const DeadFn& dead);
  // GC / merge / split over postings [first, first + count) of the current directory. Appends
  // to *kept (nullable) the tombstoned ids the changed directory still holds in those postings
  // and in every posting the change touched (a superset, possibly with repeats: a sweep over all
  // postings may erase every other tombstone); none with SweepGc::kAll.
  absl::StatusOr<Change> Sweep(uint32_t first, uint32_t count, const DeadFn& dead, SweepGc gc,
                               std::vector<uint64_t>* kept);
  // Makes `change.next` the searched directory (call after its commit is durable).
  void Publish(Change change);

  // ---- Vector-file compaction (spann_updater_vectors.cc) ----
  // True when vectors.dat is at least kMinCompactBytes and `retained` (the ids it may still
  // need to hold: live records plus tombstoned ids) is below `live_fraction` (capped at 1) of its
  // slots. False for live_fraction <= 0, and within kCompactRetryDelay of a failed compaction
  // unless `now_retry` (an explicit flush retries at once).
  bool VectorCompactionDue(uint64_t retained, double live_fraction, bool now_retry) const;
  // Rewrites vectors.dat with only the vectors keep(id) accepts (it must accept every id a
  // posting holds; ids the file lacks are not asked about). Ids at or above `base_id` (the
  // watermark: every id a later Insert may write is at or above it) can still be written
  // afterwards; ids below it that were not kept cannot. On an error before the rename the old
  // file stays in use, unchanged; if the rename happened but the directory fsync or the reopen
  // failed, Insert and CompactVectors finish the switch first and fail until they can.
  absl::StatusOr<storage::VectorFile::Compaction> CompactVectors(
      uint64_t base_id, const std::function<bool(uint64_t)>& keep);
  static constexpr uint64_t kMinCompactBytes = 64 << 10;
  static constexpr absl::Duration kCompactRetryDelay = absl::Seconds(30);

  UpdateStats stats() const;
  uint32_t posting_cap() const { return cap_; }
  uint32_t merge_floor() const { return floor_; }

 private:
  friend class UpdateWork;
  SpannUpdater(SpannIndex* index, const UpdaterOptions& options);
  // The vector file inserts write: the directory's (quantized tier) or own_vectors_.
  storage::VectorFile* vector_file() const;
  // CompactVectors without the bookkeeping of failures.
  absl::StatusOr<storage::VectorFile::Compaction> RewriteVectors(
      uint64_t base_id, const std::function<bool(uint64_t)>& keep);
  // Finishes a switch to a compacted vectors.dat whose rename is done (no-op otherwise).
  absl::Status FinishVectorSwitch();
  // Removes vectors.dat.compact left by a compaction a crash cut short (before its rename).
  absl::Status RemoveCompactionLeftover();
  // Adds a finished change's counters (UpdateWork's) to stats_.
  void AddWorkStats(const UpdateStats& work);

  SpannIndex* const index_;
  const UpdaterOptions options_;
  uint32_t cap_ = 0;
  uint32_t floor_ = 0;
  std::unique_ptr<storage::PostingFileWriter> writer_;
  std::shared_ptr<storage::VectorFile> own_vectors_;  // full-vector tier (quantized: the index's)
  std::string dir_;
  storage::FileSystem* fs_ = nullptr;
  bool switch_pending_ = false;  // vectors.dat.compact was renamed over vectors.dat
  absl::Time compact_failed_at_ = absl::InfinitePast();
  std::shared_ptr<storage::PageAllocator> pages_;
  mutable absl::Mutex stats_mu_;
  UpdateStats stats_ ABSL_GUARDED_BY(stats_mu_);
};

}  // namespace shoal::index

#endif  // SHOAL_INDEX_SPANN_SPANN_UPDATER_H_

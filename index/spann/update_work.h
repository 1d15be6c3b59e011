// UpdateWork (internal to SpannUpdater): one directory change being built. It copies the current
// PostingDirectory, loads the postings it touches (tombstoned entries dropped as Gc says), applies
// appends, splits, reassignments and merges to them in RAM, and Finish writes every changed posting
// to fresh pages and returns the Change. Single-threaded; see spann_updater.h for the protocol.
#ifndef SHOAL_INDEX_SPANN_UPDATE_WORK_H_
#define SHOAL_INDEX_SPANN_UPDATE_WORK_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "index/spann/spann_updater.h"

namespace shoal::index {

// A posting's entries while a change is built. Full-vector tier: q.ids + vecs; quantized tier:
// q (ids, |x|^2, codes against the posting's centroid).
struct WorkEntries {
  // Full-vector tier, a posting only appended to so far: its entries as the search cache holds them
  // (shared, not copied), before the ones in q.ids / vecs; UpdateWork::Whole copies them in when
  // the posting needs more than appends. Null otherwise.
  std::shared_ptr<const DecodedPosting> head;
  size_t head_n = 0;  // head->total()
  QuantizedPosting q;
  std::vector<float> vecs;
  bool dirty = false;
  absl::flat_hash_set<uint64_t> idset;  // built on first membership check
  bool has_idset = false;
  // Entries [0, base) are the posting as its current extent holds it, untouched: only entries
  // after them were added (so they can be appended instead of the posting rewritten).
  size_t base = 0;
  bool appendable = false;
  // Tombstoned entries still held (a drain or lazy sweep keeps a few so that the posting can be
  // appended to; a rewrite drops them). Always 0 in a full sweep.
  size_t dead = 0;
  size_t size() const { return head_n + q.ids.size(); }
};

class UpdateWork {
 public:
  // What Load does with a posting's tombstoned entries (SweepGc, spann_updater.h): kAll drops
  // every one (a full sweep: its tombstones are erased afterwards); kWhenMany keeps them while
  // under 1/kGcDivisor of the posting, so that an insert can append instead of rewriting (a
  // rewrite drops them anyway: a drain, a lazy sweep).
  static constexpr size_t kGcDivisor = 4;
  // Whether `dead` tombstoned entries of `size` are enough to drop them (SweepGc::kWhenMany).
  static bool ManyDead(size_t dead, size_t size) { return dead * kGcDivisor >= size; }

  UpdateWork(SpannUpdater* up, const PostingDirectory& current, const DeadFn& dead, SweepGc gc);

  // Calls UpdaterOptions::yield: once per unit of work. Its error abandons the change.
  absl::Status Pace();

  // Vectors inserted by this change, by id (full vectors are then not read back).
  void AddFresh(uint64_t id, const float* v) { fresh_[id] = v; }
  // The posting's entries, whole; with `share` (the full-vector tier's appends of fresh vectors)
  // a cached posting's entries are shared as WorkEntries::head instead of copied.
  absl::StatusOr<WorkEntries*> Load(uint32_t p, bool share = false);
  // Loads `postings` (repeats allowed) as Load(p, /*share=*/true) would, those that neither this
  // change, RAM nor the search cache holds in one batch of reads instead of one after another.
  absl::Status Prefetch(std::span<const uint32_t> postings);
  // Gives each loaded posting of `postings` room for as many more entries as it is named there
  // (the appends to come), so that they do not grow its entries a reallocation, and a copy, at a
  // time.
  void ReserveAppends(std::span<const uint32_t> postings);
  // Appends unless the posting already holds the id (check skipped when `known_new`).
  absl::Status Append(uint32_t p, uint64_t id, const float* x, bool known_new);
  // The postings `x` joins by the RNG rule over the working directory, nearest first.
  void Choose(const float* x, std::vector<uint32_t>* out) const;
  absl::Status Split(uint32_t p, uint32_t depth);
  absl::Status Merge(uint32_t p);
  // Splits every loaded posting over the cap (one cascade level each).
  absl::Status SplitOverfull();
  const PostingDirectory& dir() const { return *next_; }
  size_t live_postings() const;
  // Appends the tombstoned ids that the live postings this change touched still hold.
  void DeadHeld(std::vector<uint64_t>* out) const;
  absl::StatusOr<SpannUpdater::Change> Finish();

  // Entries a loaded posting of `n` has room for beyond them (drain steps append a few).
  static size_t AppendHeadroom(size_t n) { return std::max<size_t>(16, n / 8); }
  // Segments a cached posting may chain (DecodedPosting::head) before an append caches it whole:
  // a copy every few appends instead of one per append, and a search walks a few segments.
  static constexpr size_t kMaxCachedSegments = 8;
  // Whether `ids` (a posting's) carries more unused capacity than the headroom.
  static bool Spare(const std::vector<uint64_t>& ids) {
    return ids.capacity() > ids.size() + AppendHeadroom(ids.size());
  }

  // Pages kept free after a rewritten posting of `pages` pages for its appends, and the most
  // partly filled pages an appended posting of `pages` (when packed) may carry.
  static uint32_t AppendSlack(uint32_t pages) { return std::max<uint32_t>(4, pages / 2); }

 private:
  // Writes p's entries: appended after its extent when it can, else rewritten to new pages
  // (their run, reserve included, added to *allocated). Returns the whole new extent and sets
  // *appended.
  absl::StatusOr<storage::Extent> WritePosting(uint32_t p, WorkEntries& e,
                                               std::vector<storage::Extent>* allocated,
                                               bool* appended);
  // Keeps a posting searches keep reading cached across its rewrite or append (Finish, after
  // its write): `e`'s entries under new_serial if old_serial was cached (0: a new posting).
  // Leaves `e` moved from.
  void Recache(uint64_t old_serial, uint64_t new_serial, WorkEntries& e) const;
  // Entries [begin, end) of `e` as one payload segment (posting_entries.h).
  std::vector<uint8_t> Encode(const WorkEntries& e, size_t begin, size_t end) const;
  // Full vectors of `ids` (n x dim): from fresh_, the posting (full tier) or vectors.dat.
  absl::Status VectorsOf(const WorkEntries& e, std::vector<float>* out);
  void Encode(uint32_t p, const float* x, uint8_t* code) const;
  // Rebuilds p's entries from ids + vectors (codes against p's current centroid).
  void Assign(uint32_t p, std::vector<uint64_t> ids, const std::vector<float>& vecs);
  uint32_t AddPosting(uint32_t origin, const float* centroid);
  // Sets p's centroid (and, quantized tier, its prepared form).
  void SetCentroid(uint32_t p, const float* centroid);
  std::vector<std::vector<uint32_t>>& MutableByLeaf();
  // Load without a read: p's entries admitted when this change, RAM or the search cache holds
  // them; null when they are on the SSD only.
  WorkEntries* LoadHeld(uint32_t p, bool share);
  // Reads and decodes `postings` (live, with an extent) into out[i], in one ReadBatch.
  absl::Status ReadPostings(std::span<const uint32_t> postings, std::vector<WorkEntries>* out);
  // Makes `e` (p's entries as stored or cached) p's working entries: counts and, as the change's
  // Gc says, drops its tombstoned ones.
  WorkEntries* Admit(uint32_t p, WorkEntries e);
  // Drops the tombstoned entries `e` kept (before a rewrite, split or merge).
  void DropDead(WorkEntries* e);
  // Copies a shared head's entries into e's own (a no-op without one).
  void Whole(WorkEntries* e) const;
  absl::Status ReassignNeighbours(uint32_t p, uint32_t q, const std::vector<float>& old_centroid,
                                  uint32_t depth);

  SpannUpdater* const up_;
  const SpannIndex& index_;
  const PostingDirectory& cur_;
  const DeadFn& dead_;
  const SweepGc gc_;
  const size_t dim_;
  std::shared_ptr<PostingDirectory> next_;
  std::shared_ptr<std::vector<std::vector<uint32_t>>> by_leaf_;  // mutable copy once reshaped
  std::map<uint32_t, WorkEntries> touched_;
  std::vector<uint32_t> removed_;
  std::vector<PostingSplit> splits_;  // for DirectoryChange (observers)
  std::vector<VectorMove> moves_;
  absl::flat_hash_map<uint64_t, const float*> fresh_;
  UpdateStats stats_;
};

}  // namespace shoal::index

#endif  // SHOAL_INDEX_SPANN_UPDATE_WORK_H_

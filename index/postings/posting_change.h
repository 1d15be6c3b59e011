// DirectoryChange: what one online update (SpannUpdater::Insert or Sweep) did to a SpannIndex's
// posting set, in the index's own terms — postings written, postings merged away, splits, merges
// and vectors moved between postings. The index knows nothing of how a caller makes a change
// durable: the collection turns it into its store's rows (storage::IndexChange, RocksDB) and
// commits them before SpannUpdater::Publish makes the change visible.
//
//   SHOAL_ASSIGN_OR_RETURN(SpannUpdater::Change c, updater->Insert(ids, vectors, is_dead));
//   for (const PostingWrite& w : c.directory.written) { ... w.posting, w.extent, w.count ... }
//
// A PostingObserver (UpdaterOptions::observer) sees each change once it is published: structures
// that hang on the posting set (tenants' views of the centroid tree) follow splits, merges and
// moves from there.
#ifndef SHOAL_INDEX_POSTINGS_POSTING_CHANGE_H_
#define SHOAL_INDEX_POSTINGS_POSTING_CHANGE_H_

#include <cstdint>
#include <vector>

#include "storage/pages/posting_file.h"

namespace shoal::index {

// A posting as a change leaves it: its whole extent in postings.dat (for an append, the old
// extent plus the appended pages), its entry count, the build-time tree leaf it descends from and
// its current centroid (dimension floats).
struct PostingWrite {
  uint32_t posting = 0;
  storage::Extent extent;
  uint32_t count = 0;
  uint32_t origin = 0;
  std::vector<float> centroid;
  // The centroid is still the tree leaf's that the posting is (a build posting never re-centred,
  // nor split): a store may leave it out of the posting's row, which then reads as the leaf's
  // (InitialDirectory).
  bool tree_centroid = false;
};

// Posting `from` was split: it kept one half, new posting `to` took the other.
struct PostingSplit {
  uint32_t from = 0;
  uint32_t to = 0;
};

// Vector `id` left posting `from` for posting `to` (LIRE reassignment, or a merge: then once per
// posting it joined).
struct VectorMove {
  uint64_t id = 0;
  uint32_t from = 0;
  uint32_t to = 0;
};

struct DirectoryChange {
  std::vector<PostingWrite> written;  // postings new, rewritten or appended to
  std::vector<uint32_t> removed;      // postings merged away (no longer live)
  std::vector<PostingSplit> splits;   // in the order they happened
  std::vector<VectorMove> moves;      // vectors reassigned by splits and merges
  bool empty() const { return written.empty() && removed.empty(); }
};

// Told about every change an updater publishes, on the updater's (maintenance) thread, after
// searches can see it. Must not call back into the updater; must be quick (the maintenance
// thread waits).
class PostingObserver {
 public:
  virtual ~PostingObserver() = default;
  virtual void OnPublished(const DirectoryChange& change) = 0;
};

}  // namespace shoal::index

#endif  // SHOAL_INDEX_POSTINGS_POSTING_CHANGE_H_

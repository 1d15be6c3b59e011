// NearestPostings: the navigator over a PostingDirectory — the m postings whose current centroids
// are nearest to a point (squared L2), nearest first, ties to the lower posting id.
//
//   std::vector<std::pair<float, uint32_t>> near;
//   NearestPostings(tree, *dir, q, /*m=*/32, /*beam=*/8, /*flat=*/false, &near);
//
// flat: every live posting's float centroid is scanned (exact; CentroidTree::ScanLeaves on a
// directory never reshaped). Otherwise the build's centroid tree is
// descended (CentroidTree::NearestLeaves with `scoring`, approximate) and, once postings were
// split or merged, each leaf found is expanded into the postings descending from it, ranked by
// their own (float) centroids; when those leaves hold fewer than m live postings (merges emptied
// some), more leaves are descended to. Queries navigate with kHalf (a fraction of the memory
// traffic); the builder and the updater keep kFloat. The distances are float ones, except with
// kHalf on a directory that was never reshaped, where they are the tree's half copy's (typically
// within ~1e-4 relative): re-score against dir.centroid(p) where exact values matter. Pure function
// of its inputs; thread-safe. `scope` (nullable) prunes the tree's descent to the nodes it allows
// (PostingScope::AllowsNode); postings are not checked against it here (the flat scan offers every
// live one): the caller filters them with AllowsPosting.
#ifndef SHOAL_INDEX_POSTINGS_POSTING_NAVIGATOR_H_
#define SHOAL_INDEX_POSTINGS_POSTING_NAVIGATOR_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "index/clustering/centroid_tree.h"
#include "index/postings/posting_directory.h"

namespace shoal::index {

void NearestPostings(const CentroidTree& tree, const PostingDirectory& dir, const float* q,
                     size_t m, size_t beam, bool flat, std::vector<std::pair<float, uint32_t>>* out,
                     CentroidScoring scoring = CentroidScoring::kFloat,
                     const PostingScope* scope = nullptr);

// Which navigator costs less for a query that asks for m postings: the flat scan (every
// posting's float centroid, exact) or the tree's descent (CentroidTree::NearestLeaves, kHalf).
// The descent keeps max(beam, m) nodes per level and scores all their children, so its work
// grows with m; the flat scan's is the postings times the dimension whatever m. A child the
// descent scores costs about kDescentChildFloats floats of a flat-scanned centroid (its lower
// bound, the half distance of the children the bound keeps, the level's ranking): two centroids
// at 128-d, where it was measured, a third of one at 784-d. Measured (docs/PERFORMANCE.md, 781
// postings, p50 per query, same postings): 100-d m = 64 (~680 children scored): flat 88-107 us
// vs tree 134-153; 128-d m = 40 (~460): flat 61-71 vs tree 76-88; 128-d m = 21 (~290): flat
// 44-57 vs tree 41-42; Fashion-MNIST (1200 postings, m = 8, ~170 children): tree 5.9k QPS vs
// flat 3.4k. Again at 100-d (782 postings, load ~16), m = 21 / 40 / 64 (279 / 438 / 640
// children): flat 41.8 / 63.5 / 84.2 us vs tree 43.6 / 76.7 / 106.0. Fashion-MNIST at 128 vectors
// a posting (470 postings), m = 11: flat 106.5 us vs tree 59.2, where a rule counting postings
// only (two per child) chose flat (docs/PERFORMANCE.md, "Posting sizes measured at the data's own
// density").
//
//   DescentCost cost(tree);
//   const bool flat = cost.FlatIsCheaper(dir.size(), dir.dim, m, beam);
//
// Immutable after construction; thread-safe.
class DescentCost {
 public:
  static constexpr double kDescentChildFloats = 256;
  explicit DescentCost(const CentroidTree& tree);
  // Children the descent scores for m postings with `beam` (an estimate from the tree's
  // per-level node and child counts: each level keeps min(max(beam, m), its nodes) nodes).
  double ChildrenScored(size_t m, size_t beam) const;
  // Is scanning `postings` centroids of `dim` floats flat no dearer than the descent for m?
  bool FlatIsCheaper(size_t postings, size_t dim, size_t m, size_t beam) const {
    return static_cast<double>(postings) * static_cast<double>(dim) <=
           kDescentChildFloats * ChildrenScored(m, beam);
  }
  // Is scanning a scope's own `postings` (PostingScope::Leaves) flat, on float centroids of `dim`,
  // no dearer than the scoped descent for m? A child the descent scores costs about as much as
  // kDescentChildDims floats of a flat-scanned centroid, whatever the dimension (its lower bound,
  // ranking and, for the children the bound keeps, half distance), where the flat scan streams
  // dim floats a posting (measured at 128-d and 784-d: docs/PERFORMANCE.md, "A tenant's own
  // leaves scanned flat").
  static constexpr double kDescentChildDims = 640;
  bool ScopeFlatIsCheaper(double postings, size_t dim, size_t m, size_t beam) const {
    return postings * static_cast<double>(dim) <= kDescentChildDims * ChildrenScored(m, beam);
  }

 private:
  struct Level {
    size_t nodes = 0;     // nodes at this depth (leaves and inner)
    size_t children = 0;  // their children, all together
  };
  std::vector<Level> levels_;  // by depth, root first; the last level's nodes are all leaves
};

}  // namespace shoal::index

#endif  // SHOAL_INDEX_POSTINGS_POSTING_NAVIGATOR_H_

// NearestPostings: the navigator over a PostingDirectory — the m postings whose current centroids
// are nearest to a point (squared L2), nearest first, ties to the lower posting id.
//
//   std::vector<std::pair<float, uint32_t>> near;
//   NearestPostings(tree, *dir, q, /*m=*/32, /*beam=*/8, /*flat=*/false, &near);
//
// flat: every live posting's centroid is scanned (exact). Otherwise the build's centroid tree is
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

}  // namespace shoal::index

#endif  // SHOAL_INDEX_POSTINGS_POSTING_NAVIGATOR_H_

#include "index/posting_navigator.h"

#include <algorithm>

#include "index/distance.h"
#include "index/topk.h"

namespace shoal::index {

void NearestPostings(const CentroidTree& tree, const PostingDirectory& dir, const float* q,
                     size_t m, size_t beam, bool flat, std::vector<std::pair<float, uint32_t>>* out,
                     CentroidScoring scoring) {
  out->clear();
  m = std::min(m, dir.size());
  if (m == 0) return;
  if (!flat && !dir.reshaped) {  // posting p is tree leaf p, centroids unchanged
    tree.NearestLeaves(q, m, std::max(beam, m), out, scoring);
    return;
  }
  TopK<uint32_t> top(m);
  auto push = [&](uint32_t p) {
    if (dir.live[p]) top.Push(L2Sqr(q, dir.centroid(p), dir.dim), p);
  };
  if (flat) {
    for (uint32_t p = 0; p < dir.size(); ++p) push(p);
  } else {
    thread_local std::vector<std::pair<float, uint32_t>> leaves;
    tree.NearestLeaves(q, m, std::max(beam, m), &leaves, scoring);
    for (const auto& [dist, leaf] : leaves) {
      for (uint32_t p : (*dir.by_leaf)[leaf]) push(p);
    }
  }
  for (const auto& e : top.TakeSorted()) out->emplace_back(e.distance, e.id);
}

}  // namespace shoal::index

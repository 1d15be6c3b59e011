#include "index/postings/posting_navigator.h"

#include <algorithm>

#include "index/distance/distance.h"
#include "index/topk.h"

namespace shoal::index {

void NearestPostings(const CentroidTree& tree, const PostingDirectory& dir, const float* q,
                     size_t m, size_t beam, bool flat, std::vector<std::pair<float, uint32_t>>* out,
                     CentroidScoring scoring, const PostingScope* scope) {
  out->clear();
  m = std::min(m, dir.size());
  if (m == 0) return;
  if (!dir.reshaped) {  // posting p is tree leaf p, centroids unchanged
    if (!flat) {
      tree.NearestLeaves(q, m, std::max(beam, m), out, scoring, scope);
    } else {
      // On floats whatever `scoring`: the half copy's bound-then-half scoring per leaf costs more
      // than a float distance at low dimension (100-d, 781 postings, m = 64: p50 109 vs 84 us);
      // at high dimension, where half rows halve the bytes read, it was not measured.
      tree.ScanLeaves(q, m, out, CentroidScoring::kFloat);
    }
    return;
  }
  TopK<uint32_t> top(m);
  size_t found = 0;
  auto push = [&](uint32_t p) {
    if (!dir.live[p]) return;
    top.Push(L2Sqr(q, dir.centroid(p), dir.dim), p);
    ++found;
  };
  if (flat) {
    for (uint32_t p = 0; p < dir.size(); ++p) push(p);
  } else {
    // A leaf whose postings were all merged away yields none (its vectors went to neighbours
    // descending from other leaves): with fewer than m live postings found, ask for twice the
    // leaves, until m are found or every leaf was seen. Without this a query near such leaves
    // scanned fewer postings than asked — none at all where its nearest m leaves were all
    // emptied (measured: ~1 in 500 searches for a live vector got no hit after 30% deletes,
    // max_postings 3).
    thread_local std::vector<std::pair<float, uint32_t>> leaves;
    for (size_t want = m;; want *= 2) {
      tree.NearestLeaves(q, want, std::max(beam, want), &leaves, scoring, scope);
      top = TopK<uint32_t>(m);
      found = 0;
      for (const auto& [dist, leaf] : leaves) {
        for (uint32_t p : (*dir.by_leaf)[leaf]) push(p);
      }
      if (found >= m || leaves.size() < want || want >= tree.num_leaves()) break;
    }
  }
  for (const auto& e : top.TakeSorted()) out->emplace_back(e.distance, e.id);
}

DescentCost::DescentCost(const CentroidTree& tree) {
  std::vector<uint32_t> level = {tree.root()}, next;
  while (!level.empty()) {
    Level l;
    l.nodes = level.size();
    next.clear();
    for (uint32_t node : level) {
      for (uint32_t child : tree.children(node)) next.push_back(child);
    }
    l.children = next.size();
    levels_.push_back(l);
    level.swap(next);
  }
}

double DescentCost::ChildrenScored(size_t m, size_t beam) const {
  const double kept = static_cast<double>(std::max(beam, m));
  double scored = 0;
  for (const Level& l : levels_) {
    if (l.children == 0) continue;
    scored += std::min(kept, static_cast<double>(l.nodes)) * static_cast<double>(l.children) /
              static_cast<double>(l.nodes);
  }
  return scored;
}

}  // namespace shoal::index

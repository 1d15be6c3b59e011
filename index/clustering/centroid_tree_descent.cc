// CentroidTree's descent: NearestLeaves (on floats or the half copy) and ScanLeaves. The build is
// in centroid_tree.cc.
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include "index/clustering/centroid_tree.h"
#include "index/distance/distance.h"

namespace shoal::index {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Beams up to this size are kept sorted while a level is scored (ScoreAndKeep) on the float
// path, instead of collected whole and cut by nth_element: cheaper where few of a level's
// children get in, as at the updater's beam of 8 (docs/PERFORMANCE.md, "Online updates").
constexpr size_t kSortedBeam = 16;

// Scores `rows` (a descent level's children, offered[i] the node of rows[i]) and sets *next to
// the `beam` (<= kSortedBeam) smallest (distance, node) pairs, ascending. All distances first,
// in one call, then the selection: a child not nearer than the beam-th so far costs one
// comparison. (distance, node) pairs are distinct, so the kept set is the `beam` smallest,
// whatever the order of the rows.
void ScoreAndKeep(const float* q, size_t dim, size_t beam, std::span<const float* const> rows,
                  std::span<const uint32_t> offered, std::vector<float>* scored,
                  std::vector<std::pair<float, uint32_t>>* next) {
  scored->resize(rows.size());
  L2SqrRows(q, rows.data(), rows.size(), scored->data(), dim);
  std::pair<float, uint32_t> best[kSortedBeam];
  size_t n = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const float d = (*scored)[i];
    const std::pair<float, uint32_t> e{std::isnan(d) ? kInf : d, offered[i]};
    if (n == beam) {
      if (!(e < best[n - 1])) continue;
      --n;
    }
    size_t j = n;
    for (; j > 0 && e < best[j - 1]; --j) best[j] = best[j - 1];
    best[j] = e;
    ++n;
  }
  next->assign(best, best + n);
}

// Keeps the m smallest (distance, id) pairs of *out, ascending. nth_element then a sort of the m:
// linear in the pairs, where partial_sort's heap costs log m per pair, and the flat navigator
// ranks every posting (docs/PERFORMANCE.md, "Fewer instructions per code"). The pairs are
// distinct (ids are), so the result is the same as a full sort's first m.
void KeepNearest(size_t m, std::vector<std::pair<float, uint32_t>>* out) {
  const size_t keep = std::min(m, out->size());
  if (keep < out->size()) std::nth_element(out->begin(), out->begin() + keep, out->end());
  std::sort(out->begin(), out->begin() + keep);
  out->resize(keep);
}

// One descent level's children worth keeping: a child farther than the level's beam-th nearest
// so far cannot be among the beam kept, so it is dropped (and the half copy's scores stop early
// against bound()). Which children end up kept does not depend on the order they are offered.
class LevelKeeper {
 public:
  void Reset(size_t beam, std::vector<std::pair<float, uint32_t>>* next) {
    beam_ = beam;
    next_ = next;
    next_->clear();
    kept_.clear();
  }
  float bound() const { return kept_.size() == beam_ ? kept_.front() : kInf; }
  void Offer(float d, uint32_t child) {
    if (std::isnan(d)) d = kInf;
    if (d > bound()) return;
    next_->emplace_back(d, child);
    if (kept_.size() == beam_) {
      std::pop_heap(kept_.begin(), kept_.end());
      kept_.pop_back();
    }
    kept_.push_back(d);
    std::push_heap(kept_.begin(), kept_.end());
  }

 private:
  size_t beam_ = 0;
  std::vector<std::pair<float, uint32_t>>* next_ = nullptr;
  std::vector<float> kept_;  // max-heap: the beam smallest distances offered
};

// Scores one level's children, given as (lower bound, node), on the half copy: the `beam` of
// smallest lower bound first, so the level's bound is tight early (a full sort costs more than
// it saves), then the rest unless their lower bound rules them out. Reorders `children`.
void ScoreLevelOnHalves(const NavigationCopy& nav, const NavigationCopy::Query& q, size_t beam,
                        std::vector<std::pair<float, uint32_t>>& children, LevelKeeper& keeper) {
  const size_t seeds = std::min(beam, children.size());
  if (seeds < children.size()) {
    std::nth_element(children.begin(), children.begin() + seeds, children.end());
  }
  std::sort(children.begin(), children.begin() + seeds);
  // The rows are scattered over the copy: start loading a few ahead of the one scored.
  for (size_t i = 0; i < seeds; ++i) nav.PrefetchRow(children[i].second);
  for (size_t i = 0; i < children.size(); ++i) {
    if (i + seeds < children.size() &&
        !NavigationCopy::RulesOut(children[i + seeds].first, keeper.bound())) {
      nav.PrefetchRow(children[i + seeds].second);
    }
    const auto [lower, child] = children[i];
    if (NavigationCopy::RulesOut(lower, keeper.bound())) continue;
    keeper.Offer(nav.HalfDistance(q, child, keeper.bound()), child);
  }
}

}  // namespace

void CentroidTree::NearestLeaves(const float* q, size_t m, size_t beam,
                                 std::vector<std::pair<float, uint32_t>>* out,
                                 CentroidScoring scoring, const PostingScope* scope) const {
  out->clear();
  if (m == 0) return;
  beam = std::max(beam, m);
  // With a beam that keeps every node the float descent is exact; keep that promise.
  const bool half = scoring == CentroidScoring::kHalf && !nav_.empty() && beam < num_nodes();
  thread_local NavigationCopy::Query prepared;
  if (half) nav_.Prepare(q, &prepared);
  thread_local std::vector<std::pair<float, uint32_t>> frontier, next, bounded;
  // A small beam (the updater's placement: 8) on floats: each level's children are scored in one
  // call and the beam nearest kept as they are looked at (ScoreAndKeep), instead of all of them
  // kept and cut by the next round's nth_element.
  const bool small_beam = !half && beam <= kSortedBeam;
  thread_local std::vector<const float*> rows;
  thread_local std::vector<uint32_t> offered;
  thread_local std::vector<float> scored;
  thread_local LevelKeeper keeper;
  frontier.clear();
  frontier.emplace_back(0.0f, root());  // the root's own distance only matters for a 1-leaf tree
  if (is_leaf(root())) frontier[0].first = L2Sqr(q, centroid(root()), dim_);
  while (!frontier.empty()) {
    if (frontier.size() > beam) {
      std::nth_element(frontier.begin(), frontier.begin() + beam, frontier.end());
      frontier.resize(beam);
    }
    keeper.Reset(beam, &next);
    bounded.clear();
    rows.clear();
    offered.clear();
    for (const auto& [dist, node] : frontier) {
      if (is_leaf(node)) {
        out->emplace_back(dist, slot_[node]);
      } else if (half) {
        for (uint32_t child : children(node)) {
          if (scope != nullptr && !scope->AllowsNode(child)) continue;
          bounded.emplace_back(nav_.LowerBound(prepared, child), child);
        }
      } else if (small_beam) {
        // Scored together with the level's other children, below.
        for (uint32_t child : children(node)) {
          if (scope != nullptr && !scope->AllowsNode(child)) continue;
          rows.push_back(centroid(child));
          offered.push_back(child);
        }
      } else {
        // Every child goes in; the next round's nth_element keeps the beam nearest (a running
        // heap of the beam best, as the half path keeps for its early stops, cost more than the
        // distances themselves on the float path).
        for (uint32_t child : children(node)) {
          if (scope != nullptr && !scope->AllowsNode(child)) continue;
          const float d = L2Sqr(q, centroid(child), dim_);
          next.emplace_back(std::isnan(d) ? kInf : d, child);
        }
      }
    }
    if (half) ScoreLevelOnHalves(nav_, prepared, beam, bounded, keeper);
    if (small_beam) ScoreAndKeep(q, dim_, beam, rows, offered, &scored, &next);
    frontier.swap(next);
  }
  KeepNearest(m, out);
}

void CentroidTree::ScanLeaves(const float* q, size_t m,
                              std::vector<std::pair<float, uint32_t>>* out,
                              CentroidScoring scoring) const {
  out->clear();
  m = std::min(m, num_leaves());
  if (m == 0) return;
  if (scoring == CentroidScoring::kHalf && !nav_.empty()) {
    thread_local NavigationCopy::Query prepared;
    thread_local std::vector<std::pair<float, uint32_t>> bounded, kept;
    thread_local LevelKeeper keeper;
    nav_.Prepare(q, &prepared);
    bounded.clear();
    for (uint32_t node : leaf_node_) bounded.emplace_back(nav_.LowerBound(prepared, node), node);
    keeper.Reset(m, &kept);
    ScoreLevelOnHalves(nav_, prepared, m, bounded, keeper);
    for (const auto& [dist, node] : kept) out->emplace_back(dist, slot_[node]);
  } else {
    for (uint32_t leaf = 0; leaf < num_leaves(); ++leaf) {
      const float d = L2Sqr(q, leaf_centroids_.data() + size_t{leaf} * dim_, dim_);
      out->emplace_back(std::isnan(d) ? kInf : d, leaf);
    }
  }
  KeepNearest(m, out);
}

}  // namespace shoal::index

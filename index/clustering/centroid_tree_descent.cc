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

// Beams up to this size are kept sorted while a level is scored (SortedBeam) on the float
// path, instead of collected whole and cut by nth_element: cheaper where few of a level's
// children get in, as at the updater's beam of 8 (docs/PERFORMANCE.md, "Online updates").
constexpr size_t kSortedBeam = 16;

// The `beam` (<= kSortedBeam) smallest (distance, node) pairs offered, kept sorted as they come:
// a pair not nearer than the beam-th so far costs one comparison. (distance, node) pairs are
// distinct, so the kept set is the `beam` smallest, whatever the order they are offered in.
class SortedBeam {
 public:
  explicit SortedBeam(size_t beam) : beam_(beam) {}
  // The beam-th smallest distance so far (infinity until `beam` are kept).
  float bound() const { return n_ == beam_ ? best_[n_ - 1].first : kInf; }
  void Offer(float d, uint32_t node) {
    const std::pair<float, uint32_t> e{std::isnan(d) ? kInf : d, node};
    if (n_ == beam_) {
      if (!(e < best_[n_ - 1])) return;
      --n_;
    }
    size_t j = n_;
    for (; j > 0 && e < best_[j - 1]; --j) best_[j] = best_[j - 1];
    best_[j] = e;
    ++n_;
  }
  void TakeInto(std::vector<std::pair<float, uint32_t>>* next) const {
    next->assign(best_, best_ + n_);
  }
  void AppendTo(std::vector<std::pair<float, uint32_t>>* out) const {
    out->insert(out->end(), best_, best_ + n_);
  }

 private:
  size_t beam_;
  size_t n_ = 0;
  std::pair<float, uint32_t> best_[kSortedBeam];
};

// The children of a node `node_dist` (squared) from the query, all within `radius` (float
// distance, not squared) of it, need not be scored when node_dist > Reach(radius, root_bound): by
// the triangle inequality each is at least sqrt(node_dist) - radius from the query, and when that
// is above root_bound (the square root of the beam-th distance so far) none can be among the beam
// kept. node_dist is taken less 4e-3 of it, so that the floats' rounding (relative errors far
// below that at any dimension) never leaves out a child the beam would keep. root_bound infinite
// (the beam not yet full): nothing is left out.
constexpr float kReachMargin = 1 - 4e-3f;
float Reach(float radius, float root_bound) {
  return (radius + root_bound) * (radius + root_bound);
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
    // The seeds by SmallestFirst over RankKeys (a child's index as the row), the rest after them
    // in any order: nth_element's partitions mispredict (~5% of a Fashion-MNIST query). A
    // negative bound ranks as 0 there: the seeds only make the bound tight early.
    thread_local std::vector<uint64_t> keys;
    thread_local std::vector<std::pair<float, uint32_t>> ranked;
    keys.resize(children.size());
    for (size_t i = 0; i < children.size(); ++i) {
      keys[i] = RankKey(children[i].first, static_cast<uint32_t>(i));
    }
    SmallestFirst(keys.data(), keys.size(), seeds);
    ranked.resize(children.size());
    for (size_t i = 0; i < keys.size(); ++i) ranked[i] = children[static_cast<uint32_t>(keys[i])];
    children.swap(ranked);
  } else {
    std::sort(children.begin(), children.end());
  }
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

void CentroidTree::DescendSmallBeam(const float* q, size_t m, size_t beam,
                                    const PostingScope* scope,
                                    std::vector<std::pair<float, uint32_t>>* out) const {
  // A level's nodes come nearest first (the beam kept is sorted). Their children are scored in
  // one call once the beam is full (before that, node by node until it is), and a node whose
  // children the triangle inequality puts beyond the beam-th distance so far is passed over
  // (Reach): the same beam is kept as if every child were scored. Per node a comparison, no
  // square root: where nothing is passed over (data without clusters) the descent costs as much
  // as scoring every child; where much is (clustered data) less.
  thread_local std::vector<std::pair<float, uint32_t>> frontier, next;
  thread_local std::vector<const float*> rows;
  thread_local std::vector<uint32_t> offered;
  thread_local std::vector<float> scored;
  frontier.clear();
  frontier.emplace_back(0.0f, root());  // the root's own distance only matters for a 1-leaf tree
  if (is_leaf(root())) frontier[0].first = L2Sqr(q, centroid(root()), dim_);
  while (!frontier.empty()) {
    if (scope == nullptr && LastLevel(frontier)) {
      DescendLastLevel(q, m, frontier, out);
      return;
    }
    SortedBeam kept(beam);
    auto score = [&] {
      scored.resize(rows.size());
      L2SqrRows(q, rows.data(), rows.size(), scored.data(), dim_);
      for (size_t i = 0; i < rows.size(); ++i) kept.Offer(scored[i], offered[i]);
      rows.clear();
      offered.clear();
    };
    float root_bound = kInf;  // sqrt(kept.bound())
    for (const auto& [dist, node] : frontier) {
      if (PassesOver(dist, node, root_bound, out)) continue;
      for (uint32_t child : children(node)) {
        if (scope != nullptr && !scope->AllowsNode(child)) continue;
        rows.push_back(centroid(child));
        offered.push_back(child);
      }
      if (root_bound == kInf) {
        score();
        root_bound = std::sqrt(kept.bound());
      }
    }
    score();
    kept.TakeInto(&next);
    frontier.swap(next);
  }
}

bool CentroidTree::PassesOver(float dist, uint32_t node, float root_bound,
                              std::vector<std::pair<float, uint32_t>>* out) const {
  if (is_leaf(node)) {
    out->emplace_back(dist, slot_[node]);
    return true;
  }
  return std::isfinite(dist) && kReachMargin * dist > Reach(child_radius_[node], root_bound);
}

bool CentroidTree::LastLevel(std::span<const std::pair<float, uint32_t>> frontier) const {
  for (const auto& [dist, node] : frontier) {
    if (!is_leaf(node) && !leaf_parent_[node]) return false;
  }
  return true;
}

void CentroidTree::DescendLastLevel(const float* q, size_t m,
                                    std::span<const std::pair<float, uint32_t>> frontier,
                                    std::vector<std::pair<float, uint32_t>>* out) const {
  // Every child offered here is a leaf, and only the m nearest leaves are returned: the level
  // keeps m (by (distance, leaf index), the final order), not the beam, and its m-th distance
  // is the bound that passes nodes over (Reach), tightened after each node. A leaf parent's
  // children are a run of consecutive leaves, so their rows are read from leaf_centroids_
  // directly, without a lookup per child.
  thread_local std::vector<const float*> rows;
  thread_local std::vector<float> scored;
  SortedBeam kept(m);
  float root_bound = kInf;  // sqrt(kept.bound())
  for (const auto& [dist, node] : frontier) {
    if (PassesOver(dist, node, root_bound, out)) continue;
    const size_t count = child_begin_[node + 1] - child_begin_[node];
    const uint32_t first = slot_[children_[child_begin_[node]]];
    const float* base = leaf_centroids_.data() + size_t{first} * dim_;
    rows.resize(count);
    scored.resize(count);
    for (size_t i = 0; i < count; ++i) rows[i] = base + i * dim_;
    L2SqrRows(q, rows.data(), count, scored.data(), dim_);
    for (size_t i = 0; i < count; ++i) kept.Offer(scored[i], first + static_cast<uint32_t>(i));
    root_bound = std::sqrt(kept.bound());
  }
  kept.AppendTo(out);
}

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
  // A small beam (the updater's placement: 8; a write's buffer bucket: 2) on floats: the beam
  // nearest kept as the children are looked at, instead of all of them kept and cut by the next
  // round's nth_element.
  if (!half && beam <= kSortedBeam) {
    DescendSmallBeam(q, m, beam, scope, out);
    KeepNearest(m, out);
    return;
  }
  thread_local std::vector<std::pair<float, uint32_t>> frontier, next, bounded;
  thread_local std::vector<uint32_t> level;  // the half path's children of this level
  thread_local std::vector<float> lower;     // their lower bounds
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
    level.clear();
    for (const auto& [dist, node] : frontier) {
      if (is_leaf(node)) {
        out->emplace_back(dist, slot_[node]);
      } else if (half) {
        for (uint32_t child : children(node)) {
          if (scope != nullptr && !scope->AllowsNode(child)) continue;
          level.push_back(child);
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
    if (half && !level.empty()) {
      lower.resize(level.size());
      nav_.LowerBounds(prepared, level, lower.data());
      // Inner nodes that all fit in the beam are all kept whatever their distances, and an inner
      // node's distance is read by nothing after (only the beam's cut, which keeps them all, and
      // a leaf's is returned): no half row is read for them (at 784-d a tenant's first level).
      const bool all_kept =
          level.size() <= beam &&
          std::none_of(level.begin(), level.end(), [&](uint32_t c) { return is_leaf(c); });
      if (all_kept) {
        for (size_t i = 0; i < level.size(); ++i) next.emplace_back(lower[i], level[i]);
      } else {
        bounded.clear();
        for (size_t i = 0; i < level.size(); ++i) bounded.emplace_back(lower[i], level[i]);
        ScoreLevelOnHalves(nav_, prepared, beam, bounded, keeper);
      }
    }
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

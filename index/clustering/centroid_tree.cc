// CentroidTree: build (level by level, nodes of a level clustered in parallel). The descent
// (NearestLeaves, ScanLeaves) is in centroid_tree_descent.cc, serialization in
// centroid_tree_io.cc.
#include "index/clustering/centroid_tree.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/run_on_threads.h"
#include "base/status_macros.h"
#include "index/distance/distance.h"

namespace shoal::index {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kLevelHeadroom = 1.5;

uint64_t Mix(uint64_t x) {  // SplitMix64 finaliser: per-node seeds from the tree's seed
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

// Builds the tree level by level. Build ids are breadth-first with each node's children
// contiguous, which is exactly the final numbering.
class CentroidTreeBuilder {
 public:
  CentroidTreeBuilder(ClusteringBackend& backend, const float* x, size_t n, size_t d,
                      const TreeOptions& options)
      : backend_(backend), x_(x), n_(n), d_(d), options_(options) {}

  absl::StatusOr<CentroidTree> Build() {
    SHOAL_RETURN_IF_ERROR(Validate());
    uint32_t levels = 0;
    // Headroom: uneven clusters ask for more than branching children on the last level, and
    // capping them there loses leaves (30k leaves in 3 levels of 32 came out ~24k).
    const double wanted = kLevelHeadroom * static_cast<double>(options_.num_leaves);
    for (double cap = 1; cap < wanted && levels < 64; cap *= options_.branching) {
      ++levels;
    }
    Node root;
    root.centroid.assign(d_, 0.0f);
    std::vector<double> mean(d_, 0.0);
    for (size_t i = 0; i < n_; ++i) {
      for (size_t j = 0; j < d_; ++j) mean[j] += x_[i * d_ + j];
    }
    for (size_t j = 0; j < d_; ++j) root.centroid[j] = static_cast<float>(mean[j] / n_);
    root.points.resize(n_);
    for (size_t i = 0; i < n_; ++i) root.points[i] = static_cast<uint32_t>(i);
    root.target = static_cast<double>(options_.num_leaves);
    root.levels_left = levels;
    nodes_.push_back(std::move(root));
    point_node_.assign(n_, 0);

    std::vector<uint32_t> frontier = {0};
    while (!frontier.empty()) {
      SHOAL_ASSIGN_OR_RETURN(frontier, SplitLevel(frontier));
    }
    return Finish();
  }

 private:
  struct Node {
    std::vector<float> centroid;
    std::vector<uint32_t> points;
    double target = 0;  // leaves this subtree should end up with
    uint32_t levels_left = 0;
    uint32_t first_child = 0, num_children = 0;
  };

  absl::Status Validate() const {
    if (options_.num_leaves == 0) return absl::InvalidArgumentError("num_leaves: must be positive");
    if (options_.num_leaves > n_) {
      return absl::InvalidArgumentError(
          absl::StrCat("num_leaves: ", options_.num_leaves, " > n = ", n_, " points"));
    }
    if (n_ >= std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(absl::StrCat("n: ", n_, " >= 2^32 - 1"));
    }
    if (options_.branching < 2) return absl::InvalidArgumentError("branching: must be >= 2");
    if (d_ == 0) return absl::InvalidArgumentError("d: must be positive");
    if (x_ == nullptr) return absl::InvalidArgumentError("points: null");
    for (size_t i = 0; i < n_ * d_; ++i) {
      if (!std::isfinite(x_[i])) {
        return absl::InvalidArgumentError(
            absl::StrCat("points[", i / d_, "][", i % d_, "]: ", x_[i], " is not finite"));
      }
    }
    return absl::OkStatus();
  }

  // Children wanted for `node`; < 2 makes it a leaf.
  size_t ChildrenWanted(const Node& node) const {
    if (node.levels_left == 0 || node.points.size() < 2) return 1;
    const double t = node.target;
    const double k = node.levels_left == 1 ? std::round(t)
                                           : std::ceil(std::pow(t, 1.0 / node.levels_left) - 1e-9);
    return static_cast<size_t>(
        std::min<double>({k, double(options_.branching), double(node.points.size())}));
  }

  // Clusters every splittable node of `frontier` (in parallel) and returns the new children.
  absl::StatusOr<std::vector<uint32_t>> SplitLevel(const std::vector<uint32_t>& frontier) {
    std::vector<uint32_t> tasks;
    for (uint32_t id : frontier) {
      if (ChildrenWanted(nodes_[id]) >= 2) tasks.push_back(id);
    }
    // Largest first, so a big node does not start last and hold up the level.
    std::stable_sort(tasks.begin(), tasks.end(), [&](uint32_t a, uint32_t b) {
      return nodes_[a].points.size() > nodes_[b].points.size();
    });
    std::vector<std::optional<absl::StatusOr<KMeansResult>>> results(nodes_.size());
    const size_t threads = std::min<size_t>(
        tasks.size(), options_.threads != 0 ? options_.threads
                                            : std::max(1u, std::thread::hardware_concurrency()));
    std::atomic<size_t> next{0};
    base::RunOnThreads(std::max<size_t>(threads, 1), [&](size_t) {
      std::vector<float> rows;
      for (size_t t = next++; t < tasks.size(); t = next++) {
        results[tasks[t]] = Cluster(tasks[t], rows);
      }
    });
    std::vector<uint32_t> children;
    for (uint32_t id : frontier) {
      if (!results[id].has_value()) continue;
      if (!results[id]->ok()) return results[id]->status();
      AddChildren(id, **results[id], children);
    }
    return children;
  }

  absl::StatusOr<KMeansResult> Cluster(uint32_t id, std::vector<float>& rows) const {
    const Node& node = nodes_[id];
    const size_t np = node.points.size();
    const float* x = x_;
    if (np != n_) {  // the root clusters x in place
      rows.resize(np * d_);
      for (size_t i = 0; i < np; ++i) {
        std::memcpy(&rows[i * d_], x_ + size_t{node.points[i]} * d_, d_ * sizeof(float));
      }
      x = rows.data();
    }
    KMeansOptions km;
    km.k = static_cast<uint32_t>(ChildrenWanted(node));
    km.iterations = options_.iterations;
    km.seed = Mix(options_.seed ^ Mix(id));
    km.lambda = options_.lambda;
    km.threads = options_.threads;
    km.max_sample = options_.max_sample;
    return KMeans(backend_, x, np, d_, km);
  }

  void AddChildren(uint32_t id, const KMeansResult& r, std::vector<uint32_t>& out) {
    const size_t k = r.sizes.size();
    std::vector<uint32_t> child_of(k, 0);
    const auto first = static_cast<uint32_t>(nodes_.size());
    for (size_t c = 0; c < k; ++c) {
      if (r.sizes[c] == 0) continue;
      child_of[c] = static_cast<uint32_t>(nodes_.size());
      Node child;
      child.centroid.assign(&r.centroids[c * d_], &r.centroids[(c + 1) * d_]);
      child.points.reserve(r.sizes[c]);
      child.target = nodes_[id].target * r.sizes[c] / nodes_[id].points.size();
      child.levels_left = nodes_[id].levels_left - 1;
      out.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(std::move(child));
    }
    Node& parent = nodes_[id];
    for (size_t i = 0; i < parent.points.size(); ++i) {
      const uint32_t child = child_of[r.labels[i]];
      nodes_[child].points.push_back(parent.points[i]);
      point_node_[parent.points[i]] = child;
    }
    parent.first_child = first;
    parent.num_children = static_cast<uint32_t>(nodes_.size() - first);
    std::vector<uint32_t>().swap(parent.points);
  }

  CentroidTree Finish() {
    CentroidTree tree;
    tree.dim_ = d_;
    const size_t num = nodes_.size();
    tree.child_begin_.resize(num + 1);
    tree.slot_.assign(num, 0);
    uint32_t offset = 0, inner = 0;
    for (size_t i = 0; i < num; ++i) {
      tree.child_begin_[i] = offset;
      offset += nodes_[i].num_children;
      if (nodes_[i].num_children > 0) {
        tree.slot_[i] = inner++;
        tree.inner_centroids_.insert(tree.inner_centroids_.end(), nodes_[i].centroid.begin(),
                                     nodes_[i].centroid.end());
      }
    }
    tree.child_begin_[num] = offset;
    tree.children_.resize(num - 1);
    for (size_t i = 1; i < num; ++i) tree.children_[i - 1] = static_cast<uint32_t>(i);
    // Leaves depth-first, so each subtree's postings are contiguous.
    std::vector<uint32_t> stack = {0};
    while (!stack.empty()) {
      const uint32_t id = stack.back();
      stack.pop_back();
      const Node& node = nodes_[id];
      if (node.num_children == 0) {
        tree.slot_[id] = static_cast<uint32_t>(tree.leaf_node_.size());
        tree.leaf_node_.push_back(id);
        tree.leaf_centroids_.insert(tree.leaf_centroids_.end(), node.centroid.begin(),
                                    node.centroid.end());
      }
      for (uint32_t c = node.num_children; c-- > 0;) stack.push_back(node.first_child + c);
    }
    tree.point_leaf_.resize(n_);
    for (size_t i = 0; i < n_; ++i) tree.point_leaf_[i] = tree.slot_[point_node_[i]];
    tree.BuildNavigationCopy();
    return tree;
  }

  ClusteringBackend& backend_;
  const float* x_;
  size_t n_, d_;
  TreeOptions options_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> point_node_;  // deepest node of each point so far
};

absl::StatusOr<CentroidTree> CentroidTree::Build(ClusteringBackend& backend, const float* x,
                                                 size_t n, size_t d, const TreeOptions& options) {
  return CentroidTreeBuilder(backend, x, n, d, options).Build();
}

const float* CentroidTree::centroid(uint32_t node) const {
  return (is_leaf(node) ? leaf_centroids_.data() : inner_centroids_.data()) +
         size_t{slot_[node]} * dim_;
}

void CentroidTree::BuildNavigationCopy() {
  std::vector<float> rows(num_nodes() * dim_);
  for (uint32_t node = 0; node < num_nodes(); ++node) {
    std::copy(centroid(node), centroid(node) + dim_, rows.begin() + size_t{node} * dim_);
  }
  nav_ = NavigationCopy::Build(rows.data(), num_nodes(), dim_);
  child_radius_.assign(num_nodes(), 0.0f);
  leaf_parent_.assign(num_nodes(), 0);
  for (uint32_t node = 0; node < num_nodes(); ++node) {
    const std::span<const uint32_t> kids = children(node);
    bool run = !kids.empty();
    for (size_t i = 0; run && i < kids.size(); ++i) {
      run = is_leaf(kids[i]) && slot_[kids[i]] == slot_[kids[0]] + i;
    }
    leaf_parent_[node] = run;
    for (uint32_t child : children(node)) {
      child_radius_[node] =
          std::max(child_radius_[node], std::sqrt(L2Sqr(centroid(node), centroid(child), dim_)));
    }
  }
}

absl::Status CentroidTree::NearestLeavesBatch(const float* points, size_t n, size_t m, size_t beam,
                                              uint32_t threads, uint32_t* leaves, float* dists,
                                              const uint32_t* order) const {
  if (m == 0) return absl::InvalidArgumentError("m: must be positive");
  if (n == 0) return absl::OkStatus();
  if (points == nullptr || leaves == nullptr || dists == nullptr) {
    return absl::InvalidArgumentError("points, leaves and dists must not be null");
  }
  const size_t t_count = std::clamp<size_t>(
      n / 64, 1, threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency()));
  base::RunOnThreads(t_count, [&](size_t t) {
    std::vector<std::pair<float, uint32_t>> found;
    for (size_t k = n * t / t_count; k < n * (t + 1) / t_count; ++k) {
      const size_t i = order != nullptr ? order[k] : k;
      NearestLeaves(points + i * dim_, m, beam, &found);
      for (size_t r = 0; r < m; ++r) {
        leaves[i * m + r] = r < found.size() ? found[r].second : UINT32_MAX;
        dists[i * m + r] = r < found.size() ? found[r].first : kInf;
      }
    }
  });
  return absl::OkStatus();
}

size_t CentroidTree::MemoryBytes() const {
  return sizeof(*this) +
         sizeof(uint32_t) * (child_begin_.capacity() + children_.capacity() + slot_.capacity() +
                             leaf_node_.capacity() + point_leaf_.capacity()) +
         sizeof(float) *
             (inner_centroids_.capacity() + leaf_centroids_.capacity() + child_radius_.capacity()) +
         leaf_parent_.capacity() + nav_.MemoryBytes();
}

}  // namespace shoal::index

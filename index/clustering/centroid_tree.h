// CentroidTree: SPANN's balanced hierarchical k-means tree (BKT). The root's children cluster
// all points, each child's children cluster that child's points, and so on down to the leaves,
// which are the postings (leaf index 0..num_leaves()-1, numbered depth-first so that a subtree's
// leaves are contiguous). Tenants (Curator-style) hang on the inner nodes.
//
//   auto backend = shoal::index::MakeDefaultClusteringBackend(0);
//   shoal::index::TreeOptions options;
//   options.num_leaves = 30000;
//   SHOAL_ASSIGN_OR_RETURN(shoal::index::CentroidTree tree,
//                          shoal::index::CentroidTree::Build(*backend, x, n, d, options));
//   std::vector<std::pair<float, uint32_t>> nearest;
//   tree.NearestLeaves(query, /*m=*/32, /*beam=*/64, &nearest);
//   tree.NearestLeaves(query, 32, 64, &nearest, shoal::index::CentroidScoring::kHalf);  // queries
//
// Shape: L levels, the fewest with branching^L >= 1.5 * num_leaves (headroom for uneven
// splits); a node meant to hold t leaves with r levels below it is split into
// min(branching, ceil(t^(1/r))) children (round(t) on the last level), and each child is meant
// for t * (its points) / (node's points) leaves, so leaf counts land near num_leaves. Leaf sizes
// follow the data's own clusters more than intended (spread std/mean ~0.4-0.6 measured). Every
// k-means uses the balance penalty of TreeOptions::lambda. Node ids are breadth-first (children
// have larger ids than their parent); the root is node 0 and its centroid is the mean of all
// points.
//
// Navigation copy: besides the float centroids (what Serialize writes, what the builder and the
// updater score with), the tree keeps a NavigationCopy of every node's centroid (rows = node
// ids, so a node's children are one contiguous run): a query descending with
// CentroidScoring::kHalf rules most children out from a small table of projections and reads the
// rest in half precision (the float leaf centroids outgrow L2 on real sets: 1200 x 784 floats =
// 3.7 MB). It is derived on Build/Deserialize, never stored, and absent (kHalf falls back to
// floats) when a coordinate lies beyond the half range (|x| > 65504).
//
// Thread safety: immutable after Build/Deserialize; every const method may run concurrently.
#ifndef SHOAL_INDEX_CLUSTERING_CENTROID_TREE_H_
#define SHOAL_INDEX_CLUSTERING_CENTROID_TREE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/aligned_vector.h"
#include "index/clustering/kmeans.h"
#include "index/clustering/navigation_copy.h"
#include "index/vector_index.h"

namespace shoal::index {

// What NearestLeaves scores centroids with.
enum class CentroidScoring {
  kFloat,  // the float centroids: exact distances (builder, updater)
  kHalf,   // the NavigationCopy (bound, then half precision): for queries; the distances
           // returned are the half copy's, typically within ~1e-4 relative of the float ones
};

struct TreeOptions {
  size_t num_leaves = 0;    // target number of leaves (postings); the tree may have a few more/less
  uint32_t branching = 32;  // max children per inner node
  uint32_t iterations = 10;
  uint64_t seed = 1;
  uint32_t threads = 0;   // nodes clustered in parallel; 0 = hardware concurrency
  float lambda = -1;      // as KMeansOptions
  size_t max_sample = 0;  // per k-means call
};

class CentroidTree {
 public:
  // Errors: InvalidArgument naming the field (num_leaves == 0 or > n, branching < 2, d == 0,
  // n == 0 or >= 2^32, x null, NaN/Inf in x as "points[i][j]"); backend errors pass through.
  // Deterministic for a given (input, options, backend), whatever the thread count.
  static absl::StatusOr<CentroidTree> Build(ClusteringBackend& backend, const float* x, size_t n,
                                            size_t d, const TreeOptions& options);

  size_t dim() const { return dim_; }
  size_t num_nodes() const { return child_begin_.size() - 1; }
  size_t num_leaves() const { return leaf_node_.size(); }
  uint32_t root() const { return 0; }
  // d floats; valid while the tree lives.
  const float* centroid(uint32_t node) const;
  std::span<const uint32_t> children(uint32_t node) const {
    return {children_.data() + child_begin_[node], children_.data() + child_begin_[node + 1]};
  }
  bool is_leaf(uint32_t node) const { return child_begin_[node] == child_begin_[node + 1]; }
  uint32_t leaf_index(uint32_t node) const { return slot_[node]; }  // for leaves
  uint32_t leaf_node(uint32_t leaf) const { return leaf_node_[leaf]; }
  // num_leaves() x dim() contiguous leaf centroids (leaf order), for a flat navigator scan.
  const float* leaf_centroids() const { return leaf_centroids_.data(); }
  // The build points' leaf (the leaf each point was assigned to while building), n entries;
  // empty after ReleasePointLeaves.
  const std::vector<uint32_t>& point_leaf() const { return point_leaf_; }
  // Frees point_leaf() (4 B per build point): only the builder needs it, not a search index.
  // Serialize then writes no point leaves, so call it only on a tree that is not written again.
  void ReleasePointLeaves() { std::vector<uint32_t>().swap(point_leaf_); }

  // Approximately the m nearest leaves to q by squared L2, closest first (ties: lower leaf):
  // best-first descent keeping the `beam` closest nodes per level (beam < m counts as m).
  // Leaves met on the way are kept; with beam >= num_nodes() the answer is exact (whatever
  // `scoring`: that case scores floats). Results are (distance, leaf index); fewer than m only
  // if the tree has fewer leaves. With kHalf the ranking and the distances are the half copy's,
  // so a leaf within ~1e-4 relative of the m-th may be chosen or left out differently from
  // kFloat (measured on Fashion-MNIST: the same m = 8 leaves for 99.97% of queries); re-score
  // with leaf_centroids() where exact distances matter. The kept set does not depend on the
  // order children are scored in. No allocation once `out` and this thread's scratch have grown.
  // `scope` (nullable): only nodes it allows (PostingScope::AllowsNode) are descended into, so
  // the beam and the m leaves are spent on its sub-tree (a tenant's).
  void NearestLeaves(const float* q, size_t m, size_t beam,
                     std::vector<std::pair<float, uint32_t>>* out,
                     CentroidScoring scoring = CentroidScoring::kFloat,
                     const PostingScope* scope = nullptr) const;
  // The m nearest leaves by a scan of every leaf instead of a descent (the flat navigator),
  // closest first, ties to the lower leaf. kFloat: exact, from leaf_centroids(). kHalf: the half
  // copy's bound-then-half scoring over all leaves, the m of smallest lower bound first (the
  // same distances as the half descent; half the bytes of the float rows, and rows the lower
  // bound or the half distance's early stop rule out are not read whole); floats where the tree
  // has no half copy. No allocation once `out` and this thread's scratch have grown.
  void ScanLeaves(const float* q, size_t m, std::vector<std::pair<float, uint32_t>>* out,
                  CentroidScoring scoring = CentroidScoring::kFloat) const;
  // Same for many points at once, multi-threaded (0 = hardware concurrency): leaves/dists hold
  // n*m (padded with UINT32_MAX/inf). InvalidArgument when m == 0 or a pointer is null.
  // `order` (nullable; else a permutation of 0..n-1): the order the points are descended in,
  // each one's answer still at its own index. Neighbours in a row read the same centroid rows
  // while they are in cache (the builder passes its points grouped by point_leaf()).
  absl::Status NearestLeavesBatch(const float* points, size_t n, size_t m, size_t beam,
                                  uint32_t threads, uint32_t* leaves, float* dists,
                                  const uint32_t* order = nullptr) const;

  size_t MemoryBytes() const;

  // Versioned binary form ending in a CRC32C of everything before it.
  std::string Serialize() const;
  // DataLoss naming `where` and the byte offset when the bytes are corrupt or truncated
  // (checksum, sizes, or a structure that is not a tree).
  static absl::StatusOr<CentroidTree> Deserialize(std::string_view bytes, const std::string& where);

 private:
  CentroidTree() = default;
  friend class CentroidTreeBuilder;
  // Fills nav_ from the float centroids (both constructors' last step).
  void BuildNavigationCopy();
  // NearestLeaves' float descent for a beam <= 16 (m <= beam): appends the leaves met to *out,
  // unsorted; among them the m nearest leaves the full-beam descent would meet.
  void DescendSmallBeam(const float* q, size_t m, size_t beam, const PostingScope* scope,
                        std::vector<std::pair<float, uint32_t>>* out) const;
  // A descent level's frontier node that needs no scoring: a leaf (appended to *out with its
  // distance), or an inner node whose children cannot come within root_bound (Reach).
  bool PassesOver(float dist, uint32_t node, float root_bound,
                  std::vector<std::pair<float, uint32_t>>* out) const;
  // Whether every inner node of a descent level is a leaf parent (leaf_parent_).
  bool LastLevel(std::span<const std::pair<float, uint32_t>> frontier) const;
  // DescendSmallBeam's level whose nodes' children are all leaves: appends the frontier's own
  // leaves and the m nearest of the children to *out.
  void DescendLastLevel(const float* q, size_t m,
                        std::span<const std::pair<float, uint32_t>> frontier,
                        std::vector<std::pair<float, uint32_t>>* out) const;

  size_t dim_ = 0;
  std::vector<uint32_t> child_begin_;  // num_nodes + 1 offsets into children_
  std::vector<uint32_t> children_;     // num_nodes - 1 ids
  std::vector<uint32_t> slot_;         // leaf index (leaves) or inner index (inner nodes)
  std::vector<uint32_t> leaf_node_;    // num_leaves
  // Rows from a 64-byte boundary: at a dimension that is a multiple of 16 (128, 784) each row's
  // AVX-512 loads are then whole lines, not split across two (the flat scan of a tenant's own
  // leaves ran ~30% slower in the runs whose heap put these arrays 16-48 bytes into a line).
  base::AlignedVector<float> inner_centroids_;  // inner nodes in id order x dim
  base::AlignedVector<float> leaf_centroids_;   // leaves in leaf order x dim
  std::vector<uint32_t> point_leaf_;            // n
  NavigationCopy nav_;                          // rows = node ids
  // Per node: the float distance (not squared) from its centroid to its farthest child's (leaves:
  // 0). Derived with nav_, never stored; what lets the small-beam descent pass nodes over.
  std::vector<float> child_radius_;
  // Per node: 1 when it has children, all of them leaves with consecutive leaf indices (as the
  // depth-first numbering makes them). Derived with nav_.
  std::vector<uint8_t> leaf_parent_;
};

}  // namespace shoal::index

#endif  // SHOAL_INDEX_CLUSTERING_CENTROID_TREE_H_

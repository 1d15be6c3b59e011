#include "index/postings/posting_navigator.h"

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"
#include "index/clustering/kmeans.h"
#include "index/distance/distance.h"

namespace shoal::index {
namespace {

// A directory whose posting p is tree leaf p (as built), marked reshaped, so the navigator
// expands leaves into postings the way it does after online splits and merges.
PostingDirectory DirectoryOf(const CentroidTree& tree) {
  PostingDirectory dir;
  dir.dim = tree.dim();
  const size_t n = tree.num_leaves();
  dir.tree_centroids = tree.leaf_centroids();
  dir.own_slot.assign(n, PostingDirectory::kTreeCentroid);
  dir.rows.resize(n);
  dir.serials.resize(n);
  dir.origin.resize(n);
  dir.live.assign(n, 1);
  auto by_leaf = std::make_shared<std::vector<std::vector<uint32_t>>>(n);
  for (uint32_t p = 0; p < n; ++p) {
    dir.rows[p].posting = p;
    dir.origin[p] = p;
    (*by_leaf)[p].push_back(p);
  }
  dir.by_leaf = by_leaf;
  dir.reshaped = true;
  return dir;
}

// Merges can leave a query's nearest leaves with no live posting (their entries moved to
// postings of other leaves). The navigator still returns m live postings — the nearest live
// ones — and not fewer (it had returned none when all m nearest leaves were emptied).
TEST(PostingNavigatorTest, LeavesWhosePostingsWereAllMergedAwayAreSkipped) {
  constexpr size_t kN = 4000, kD = 16, kM = 4;
  std::mt19937 rng(base::TestSeed());
  std::normal_distribution<float> g(0, 1);
  std::vector<float> x(kN * kD);
  for (float& v : x) v = g(rng);
  auto backend = MakeCpuClusteringBackend(1);
  TreeOptions options;
  options.num_leaves = 64;
  options.branching = 8;
  auto tree = CentroidTree::Build(*backend, x.data(), kN, kD, options);
  ASSERT_TRUE(tree.ok()) << tree.status();
  PostingDirectory dir = DirectoryOf(*tree);
  for (size_t trial = 0; trial < 20; ++trial) {
    const float* q = x.data() + (rng() % kN) * kD;
    // Empty the postings of the query's 2m nearest leaves.
    std::vector<std::pair<float, uint32_t>> nearest;
    tree->NearestLeaves(q, 2 * kM, tree->num_nodes(), &nearest);
    std::fill(dir.live.begin(), dir.live.end(), 1);
    for (const auto& [dist, leaf] : nearest) dir.live[leaf] = 0;
    // The m nearest live postings, by brute force.
    std::vector<std::pair<float, uint32_t>> want;
    for (uint32_t p = 0; p < dir.size(); ++p) {
      if (dir.live[p]) want.emplace_back(L2Sqr(q, dir.centroid(p), kD), p);
    }
    std::sort(want.begin(), want.end());
    want.resize(kM);
    std::vector<std::pair<float, uint32_t>> got;
    NearestPostings(*tree, dir, q, kM, /*beam=*/tree->num_nodes(), /*flat=*/false, &got);
    ASSERT_EQ(got.size(), kM) << "trial " << trial;
    for (size_t i = 0; i < kM; ++i) EXPECT_EQ(got[i].second, want[i].second) << "trial " << trial;
  }
}

// The descent's estimated work grows with m up to every node below the root (a beam wider than
// every level keeps all of them), and the flat scan is chosen only once the descent would score
// more than about half as many children as there are postings.
TEST(DescentCostTest, GrowsWithMUpToEveryNodeAndPicksFlatOnlyForWideQueries) {
  constexpr size_t kN = 20000, kD = 8;
  std::mt19937 rng(base::TestSeed());
  std::normal_distribution<float> g(0, 1);
  std::vector<float> x(kN * kD);
  for (float& v : x) v = g(rng);
  auto backend = MakeCpuClusteringBackend(1);
  TreeOptions options;
  options.num_leaves = 800;
  options.iterations = 2;
  auto tree = CentroidTree::Build(*backend, x.data(), kN, kD, options);
  ASSERT_TRUE(tree.ok()) << tree.status();
  const DescentCost cost(*tree);
  const size_t leaves = tree->num_leaves(), beam = 8;
  double last = 0;
  for (size_t m = 1; m <= leaves; m *= 2) {
    const double scored = cost.ChildrenScored(m, beam);
    EXPECT_GE(scored, last) << "m " << m;
    last = scored;
  }
  // Below the beam m does not matter; a beam over every node scores every non-root node.
  EXPECT_EQ(cost.ChildrenScored(1, beam), cost.ChildrenScored(beam, beam));
  EXPECT_DOUBLE_EQ(cost.ChildrenScored(tree->num_nodes(), beam), tree->num_nodes() - 1.0);
  // At 128-d (a child costs two flat centroids) a narrow query descends (fewer children than
  // postings / 2) and a query for every posting scans flat.
  EXPECT_LT(DescentCost::kDescentChildFloats / 128 * cost.ChildrenScored(beam, beam), leaves);
  EXPECT_FALSE(cost.FlatIsCheaper(leaves, 128, beam, beam));
  EXPECT_TRUE(cost.FlatIsCheaper(leaves, 128, leaves, beam));
  // Wider centroids make the flat scan dearer: a query that scans flat at 128-d descends at 784-d.
  bool wider_descends = false;
  for (size_t m = beam; m <= leaves; m *= 2) {
    EXPECT_TRUE(!cost.FlatIsCheaper(leaves, 128, m, beam) ||
                cost.FlatIsCheaper(leaves, 8, m, beam));
    wider_descends |=
        cost.FlatIsCheaper(leaves, 128, m, beam) && !cost.FlatIsCheaper(leaves, 784, m, beam);
  }
  EXPECT_TRUE(wider_descends);
}

}  // namespace
}  // namespace shoal::index

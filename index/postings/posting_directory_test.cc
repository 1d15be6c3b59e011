#include "index/postings/posting_directory.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "base/test_seed.h"
#include "index/clustering/kmeans.h"

namespace shoal::index {
namespace {

// What SpannUpdater::Publish does when `next` replaces `cur`, retiring `extents`.
void Replace(PostingDirectory& cur, const PostingDirectory& next,
             std::vector<storage::Extent> extents, std::vector<uint64_t>* released) {
  cur.retire->newer = next.retire;
  cur.retire->extents = std::move(extents);
  cur.retire->on_release = [released](const std::vector<storage::Extent>& e) {
    for (const auto& x : e) released->push_back(x.first_page);
  };
}

TEST(RetiredExtentsTest, WaitForEveryOlderVersionNotJustTheirOwn) {
  std::vector<uint64_t> released;
  auto v1 = std::make_shared<PostingDirectory>();
  auto v2 = NextVersion(*v1);
  Replace(*v1, *v2, {{10, 1, 0}}, &released);  // page 10: read through v1 only
  auto v3 = NextVersion(*v2);
  Replace(*v2, *v3, {{20, 1, 0}}, &released);  // page 20: read through v1 and v2
  v2.reset();                                  // a reader still holds v1, which reads page 20 too
  EXPECT_TRUE(released.empty());
  v1.reset();
  EXPECT_EQ(released, (std::vector<uint64_t>{10, 20}));
  v3.reset();
  EXPECT_EQ(released.size(), 2u);
}

TEST(RetiredExtentsTest, NewerVersionsGoFirstThenReleaseWithTheOldest) {
  std::vector<uint64_t> released;
  auto v1 = std::make_shared<PostingDirectory>();
  auto v2 = NextVersion(*v1);
  Replace(*v1, *v2, {{10, 1, 0}}, &released);
  v1.reset();  // the oldest goes first: its own list is released at once
  EXPECT_EQ(released, (std::vector<uint64_t>{10}));
}

TEST(RetiredExtentsTest, ALongChainIsReleasedWithoutRecursion) {
  std::vector<uint64_t> released;
  auto oldest = std::make_shared<PostingDirectory>();
  std::shared_ptr<PostingDirectory> cur = oldest;
  for (uint64_t i = 0; i < 200000; ++i) {
    auto next = NextVersion(*cur);
    Replace(*cur, *next, {{i, 1, 0}}, &released);
    cur = next;  // every version but the oldest and the newest is dropped
  }
  EXPECT_TRUE(released.empty());
  oldest.reset();
  EXPECT_EQ(released.size(), 200000u);
}

// The leaf centroids are held once, by the tree: an opened directory reads them in place (and a
// row whose stored centroid equals its leaf's is not copied either); only a re-centred or new
// posting's centroid is the directory's own, and a later version's change leaves older ones alone.
TEST(PostingDirectoryTest, LeafCentroidsAreReadFromTheTreeNotCopied) {
  constexpr size_t kN = 3000, kD = 32;
  std::mt19937 rng(base::TestSeed());
  std::normal_distribution<float> g(0, 1);
  std::vector<float> x(kN * kD);
  for (float& v : x) v = g(rng);
  auto backend = MakeCpuClusteringBackend(1);
  TreeOptions options;
  options.num_leaves = 100;
  options.branching = 8;
  auto tree = CentroidTree::Build(*backend, x.data(), kN, kD, options);
  ASSERT_TRUE(tree.ok()) << tree.status();
  const size_t leaves = tree->num_leaves();
  const float* leaf = tree->leaf_centroids();
  std::vector<storage::PostingRow> rows(leaves);
  for (uint32_t p = 0; p < leaves; ++p) rows[p].posting = p;
  rows[1].centroid.assign(leaf + kD, leaf + 2 * kD);  // as the updater writes it, unchanged
  rows[2].centroid.assign(kD, 0.5f);                  // re-centred
  auto dir = InitialDirectory(*tree, rows);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_LT((*dir)->MemoryBytes(), leaves * kD * sizeof(float));
  for (uint32_t p = 0; p < leaves; ++p) {
    if (p != 2) {
      EXPECT_EQ((*dir)->centroid(p), leaf + size_t{p} * kD) << p;
    }
  }
  EXPECT_EQ(std::vector<float>((*dir)->centroid(2), (*dir)->centroid(2) + kD), rows[2].centroid);

  auto next = NextVersion(**dir);
  const std::vector<float> moved(kD, -1.0f);
  next->SetCentroid(3, moved.data());
  EXPECT_EQ(std::vector<float>(next->centroid(3), next->centroid(3) + kD), moved);
  EXPECT_EQ((*dir)->centroid(3), leaf + 3 * kD);
  EXPECT_EQ(std::vector<float>(next->centroid(2), next->centroid(2) + kD), rows[2].centroid);
}

}  // namespace
}  // namespace shoal::index

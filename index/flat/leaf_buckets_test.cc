#include "index/flat/leaf_buckets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "index/flat/flat_index.h"

namespace shoal::index {
namespace {

std::vector<float> RandomRows(size_t n, size_t d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g;
  std::vector<float> x(n * d);
  for (float& v : x) v = g(rng);
  return x;
}

TEST(LeafBucketsTest, SearchesOnlyTheGivenLeaves) {
  const size_t d = 4;
  LeafBuckets b(d, Metric::kL2, 3);
  const std::vector<float> v = {0, 0, 0, 0};
  b.Add(1, v.data(), 0);
  b.Add(2, v.data(), 1);
  b.Add(3, v.data(), 2);
  std::vector<uint32_t> leaves = {2, 0, 2, 7};  // a repeat and a leaf out of range are ignored
  auto hits = b.Search(v.data(), 10, leaves, nullptr);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].id, 1u);  // tie on distance: smaller id first
  EXPECT_EQ(hits[1].id, 3u);
}

TEST(LeafBucketsTest, AgreesWithFlatIndexOverAllLeavesThroughAddsAndRemoves) {
  const size_t d = 8, n = 2000, leaves_n = 7;
  const auto x = RandomRows(n, d, 1);
  LeafBuckets b(d, Metric::kL2, leaves_n);
  FlatIndex flat(d, Metric::kL2);
  std::mt19937 rng(2);
  for (size_t i = 0; i < n; ++i) {
    b.Add(i, x.data() + i * d, rng() % leaves_n);
    flat.Add(i, x.data() + i * d);
  }
  // Remove a third (rows move inside their buckets), re-add some elsewhere.
  for (size_t i = 0; i < n; i += 3) {
    EXPECT_TRUE(b.Remove(i));
    flat.Remove(i);
  }
  EXPECT_FALSE(b.Remove(0));
  for (size_t i = 0; i < n; i += 9) {
    b.Add(i, x.data() + i * d, rng() % leaves_n);
    flat.Add(i, x.data() + i * d);
  }
  b.Add(1, x.data() + 1 * d, 3);  // moved: still one row
  EXPECT_EQ(b.size(), flat.size());
  std::vector<uint32_t> all(leaves_n);
  for (uint32_t l = 0; l < leaves_n; ++l) all[l] = l;
  const auto q = RandomRows(20, d, 3);
  for (size_t i = 0; i < 20; ++i) {
    auto want = flat.Search(q.data() + i * d, 1, 10, 1)[0];
    for (const auto& got : {b.Search(q.data() + i * d, 10, all, nullptr),
                            b.SearchAll(q.data() + i * d, 10, nullptr)}) {
      ASSERT_EQ(got.size(), want.size());
      for (size_t j = 0; j < got.size(); ++j) {
        EXPECT_EQ(got[j].id, want[j].id) << "query " << i << " rank " << j;
        EXPECT_NEAR(got[j].distance, want[j].distance, 1e-3);
      }
    }
  }
  // Every stored row reads back; removed ones are gone.
  for (size_t i = 0; i < n; ++i) {
    const float* got = b.Vector(i);
    ASSERT_EQ(got != nullptr, flat.Contains(i)) << i;
    EXPECT_EQ(b.Contains(i), flat.Contains(i));
    if (got != nullptr) {
      EXPECT_TRUE(std::equal(got, got + d, x.data() + i * d)) << i;
    }
  }
}

// SearchAll visits only the buckets holding rows: one emptied and refilled is seen again.
TEST(LeafBucketsTest, SearchAllFollowsBucketsThatEmptyAndRefill) {
  const size_t d = 2;
  LeafBuckets b(d, Metric::kL2, 100);
  const std::vector<float> near = {0, 0}, far = {9, 9};
  b.Add(1, far.data(), 3);
  b.Add(2, near.data(), 70);
  EXPECT_EQ(b.SearchAll(near.data(), 1, nullptr)[0].id, 2u);
  EXPECT_TRUE(b.Remove(2));
  ASSERT_EQ(b.SearchAll(near.data(), 5, nullptr).size(), 1u);
  b.Add(3, near.data(), 70);
  auto hits = b.SearchAll(near.data(), 5, nullptr);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].id, 3u);
  EXPECT_EQ(hits[1].id, 1u);
}

TEST(LeafBucketsTest, SkipsIdsTheFilterRejects) {
  const size_t d = 2;
  LeafBuckets b(d, Metric::kInnerProduct, 1);
  const std::vector<float> v = {1, 0};
  for (uint64_t id = 0; id < 10; ++id) b.Add(id, v.data(), 0);
  IdBitmap allow;
  allow.Set(4);
  allow.Set(7);
  std::vector<uint32_t> leaves = {0};
  auto hits = b.Search(v.data(), 5, leaves, &allow);
  EXPECT_EQ(b.SearchAll(v.data(), 5, &allow).size(), 2u);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].id, 4u);
  EXPECT_EQ(hits[1].id, 7u);
  EXPECT_FLOAT_EQ(hits[0].distance, -1.0f);
  b.Clear();
  EXPECT_EQ(b.size(), 0u);
  EXPECT_TRUE(b.Search(v.data(), 5, leaves, nullptr).empty());
  EXPECT_TRUE(b.SearchAll(v.data(), 5, nullptr).empty());
  EXPECT_EQ(b.Vector(4), nullptr);
}

}  // namespace
}  // namespace shoal::index

#include "db/write_buffer.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace shoal::db {
namespace {

std::vector<float> RandomRows(size_t n, size_t dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g;
  std::vector<float> v(n * dim);
  for (float& x : v) x = g(rng);
  return v;
}

TEST(WriteBufferTest, WithoutAnSsdIndexItSearchesEveryVectorExactly) {
  constexpr size_t kDim = 8;
  WriteBuffer buffer(kDim, index::Metric::kL2);
  const std::vector<float> rows = RandomRows(100, kDim, 1);
  for (uint64_t i = 0; i < 100; ++i) buffer.Add(i, rows.data() + i * kDim, 0);
  EXPECT_EQ(buffer.size(), 100u);
  EXPECT_FALSE(buffer.has_buckets());
  EXPECT_FALSE(buffer.bucketed());
  index::SearchParameters p;
  p.k = 1;
  auto found = buffer.Search(rows.data() + 42 * kDim, 1, p);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ((*found)[0].size(), 1u);
  EXPECT_EQ((*found)[0][0].id, 42u);
}

TEST(WriteBufferTest, RemoveTakesAVectorOutOfSearches) {
  constexpr size_t kDim = 4;
  WriteBuffer buffer(kDim, index::Metric::kL2);
  const std::vector<float> rows = RandomRows(10, kDim, 2);
  const std::vector<uint64_t> ids = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  ASSERT_TRUE(buffer.Add(ids, rows.data(), {}).ok());
  const std::vector<uint64_t> gone = {3};
  ASSERT_TRUE(buffer.Remove(gone).ok());
  EXPECT_FALSE(buffer.Contains(3));
  index::SearchParameters p;
  p.k = 10;
  auto found = buffer.Search(rows.data() + 3 * kDim, 1, p);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ((*found)[0].size(), 9u);
  for (const auto& nb : (*found)[0]) EXPECT_NE(nb.id, 3u);
}

TEST(WriteBufferTest, FilterAndSkipBothKeepIdsOut) {
  constexpr size_t kDim = 4;
  WriteBuffer buffer(kDim, index::Metric::kL2);
  const std::vector<float> rows = RandomRows(6, kDim, 3);
  for (uint64_t i = 0; i < 6; ++i) buffer.Add(i, rows.data() + i * kDim, 0);
  index::IdBitmap allowed;
  for (uint64_t id : {1, 2, 3}) allowed.Set(id);
  base::PagedIdSet skip;
  skip.Insert(2);
  index::SearchParameters p;
  p.k = 6;
  p.filter = &allowed;
  p.skip = &skip;
  auto found = buffer.Search(rows.data(), 1, p);
  ASSERT_TRUE(found.ok());
  std::vector<uint64_t> got;
  for (const auto& nb : (*found)[0]) got.push_back(nb.id);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<uint64_t>{1, 3}));
}

TEST(WriteBufferTest, ReplaceSwapsInAWholeFlatIndex) {
  constexpr size_t kDim = 4;
  WriteBuffer buffer(kDim, index::Metric::kInnerProduct);
  const std::vector<float> rows = RandomRows(3, kDim, 4);
  buffer.Add(7, rows.data(), 0);
  index::FlatIndex all(kDim, index::Metric::kInnerProduct);
  all.Add(1, rows.data() + kDim);
  all.Add(2, rows.data() + 2 * kDim);
  buffer.Replace(std::move(all));
  EXPECT_EQ(buffer.size(), 2u);
  EXPECT_FALSE(buffer.Contains(7));
  EXPECT_TRUE(buffer.Contains(2));
}

}  // namespace
}  // namespace shoal::db

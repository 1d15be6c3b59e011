#include "db/search_planner.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "shoal/filter.h"

namespace shoal::db {
namespace {

using index::Neighbor;

std::vector<uint64_t> Ids(const std::vector<Neighbor>& hits) {
  std::vector<uint64_t> ids;
  for (const Neighbor& nb : hits) ids.push_back(nb.id);
  return ids;
}

TEST(MergeNeighborsTest, KeepsTheKClosestOnceEachTiesToTheSmallerId) {
  std::vector<std::vector<Neighbor>> found = {{{5, 1.0f}, {9, 3.0f}}};
  const std::vector<std::vector<Neighbor>> extra = {{{5, 1.0f}, {2, 3.0f}, {4, 0.5f}}};
  MergeNeighbors(&found, extra, /*k=*/3);
  EXPECT_EQ(Ids(found[0]), (std::vector<uint64_t>{4, 5, 2}));
}

TEST(MergeNeighborsTest, MergesQueryByQuery) {
  std::vector<std::vector<Neighbor>> found = {{{1, 1.0f}}, {}};
  const std::vector<std::vector<Neighbor>> extra = {{}, {{2, 2.0f}}};
  MergeNeighbors(&found, extra, 10);
  EXPECT_EQ(Ids(found[0]), (std::vector<uint64_t>{1}));
  EXPECT_EQ(Ids(found[1]), (std::vector<uint64_t>{2}));
}

// Without an SSD index the buffer holds every vector: the planner answers from it exactly, and a
// filter is checked during the scan (the record store is never read).
class PlannerWithoutSsdIndexTest : public ::testing::Test {
 protected:
  static constexpr size_t kDim = 8;
  static constexpr size_t kRows = 200;

  void SetUp() override {
    std::mt19937 rng(7);
    std::normal_distribution<float> g;
    rows_.resize(kRows * kDim);
    for (float& x : rows_) x = g(rng);
    absl::MutexLock lock(&state_.mu);
    for (uint64_t i = 0; i < kRows; ++i) {
      state_.buffer.Add(i, rows_.data() + i * kDim, 0);
      state_.attrs.Put(i, {{"even", AttributeValue{i % 2 == 0}}}, {});
    }
  }

  std::vector<float> rows_;
  CollectionState state_{kDim, index::Metric::kL2};
  SearchPlanner planner_{/*store=*/nullptr, /*collection_id=*/1, Metric::kL2, kDim};
};

TEST_F(PlannerWithoutSsdIndexTest, FindsEachStoredVectorFirst) {
  SearchParams params;
  params.k = 3;
  absl::ReaderMutexLock lock(&state_.mu);
  auto found = planner_.Search(state_, rows_.data() + 17 * kDim, 1, params, 1);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ((*found)[0].size(), 3u);
  EXPECT_EQ((*found)[0][0].id, 17u);
}

TEST_F(PlannerWithoutSsdIndexTest, FilterKeepsOnlyPassingIds) {
  const Filter even = Eq("even", AttributeValue{true});
  SearchParams params;
  params.k = 10;
  params.filter = &even;
  absl::ReaderMutexLock lock(&state_.mu);
  auto found = planner_.Search(state_, rows_.data() + 17 * kDim, 1, params, 1);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ((*found)[0].size(), 10u);
  for (const Neighbor& nb : (*found)[0]) EXPECT_EQ(nb.id % 2, 0u) << nb.id;
}

}  // namespace
}  // namespace shoal::db

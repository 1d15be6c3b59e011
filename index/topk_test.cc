#include "index/topk.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"

namespace shoal::index {
namespace {

std::vector<uint32_t> Ids(const std::vector<TopK<uint32_t>::Entry>& entries) {
  std::vector<uint32_t> ids;
  for (const auto& e : entries) ids.push_back(e.id);
  return ids;
}

TEST(TopKTest, KeepsTheKSmallestClosestFirst) {
  TopK<uint32_t> top(3);
  for (uint32_t i = 0; i < 10; ++i) top.Push(static_cast<float>((i * 7) % 10), i);
  // distances: 0->0 1->7 2->4 3->1 4->8 5->5 6->2 7->9 8->6 9->3
  EXPECT_EQ(Ids(top.TakeSorted()), (std::vector<uint32_t>{0, 3, 6}));
}

TEST(TopKTest, TiesGoToTheSmallerIdWhateverTheOrder) {
  for (const bool ascending : {true, false}) {
    TopK<uint32_t> top(2);
    for (uint32_t i = 0; i < 6; ++i) top.Push(1.0f, ascending ? i : 5 - i);
    EXPECT_EQ(Ids(top.TakeSorted()), (std::vector<uint32_t>{0, 1})) << ascending;
  }
}

TEST(TopKTest, FewerCandidatesThanKReturnsAllSorted) {
  TopK<uint32_t> top(10);
  top.Push(2.0f, 5);
  top.Push(1.0f, 9);
  top.Push(2.0f, 4);
  EXPECT_FALSE(top.full());
  EXPECT_EQ(top.Threshold(), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Ids(top.TakeSorted()), (std::vector<uint32_t>{9, 4, 5}));
  EXPECT_EQ(top.size(), 0u);
}

TEST(TopKTest, ZeroKKeepsNothing) {
  TopK<uint32_t> top(0);
  EXPECT_FALSE(top.Push(1.0f, 1));
  EXPECT_TRUE(top.TakeSorted().empty());
}

TEST(TopKTest, ThresholdIsTheWorstKeptOnceFull) {
  TopK<uint32_t> top(2);
  top.Push(3.0f, 1);
  top.Push(1.0f, 2);
  EXPECT_EQ(top.Threshold(), 3.0f);
  EXPECT_FALSE(top.Push(3.0f, 7));  // equal distance, larger id: rejected
  EXPECT_TRUE(top.Push(3.0f, 0));   // equal distance, smaller id: kept
  EXPECT_EQ(Ids(top.TakeSorted()), (std::vector<uint32_t>{2, 0}));
}

TEST(TopKTest, MatchesSortingOnRandomInput) {
  const uint32_t seed = base::TestSeed();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> value(0, 20);  // many ties
  for (int round = 0; round < 50; ++round) {
    const size_t k = 1 + rng() % 30;
    std::vector<TopK<uint32_t>::Entry> all;
    TopK<uint32_t> top(k);
    for (uint32_t id = 0; id < 200; ++id) all.push_back({static_cast<float>(value(rng)), id});
    std::shuffle(all.begin(), all.end(), rng);
    for (const auto& e : all) top.Push(e.distance, e.id);
    std::sort(all.begin(), all.end(), TopK<uint32_t>::Less);
    all.resize(k);
    EXPECT_EQ(Ids(top.TakeSorted()), Ids(all)) << "seed " << seed << " round " << round;
  }
}

}  // namespace
}  // namespace shoal::index

#include "index/postings/posting_split.h"

#include <gtest/gtest.h>

#include <random>

namespace shoal::index {
namespace {

TEST(BalancedTwoMeansTest, SeparatesTwoBlobs) {
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0, 0.1f);
  const size_t n = 200, d = 8;
  std::vector<float> x(n * d);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < d; ++j) x[i * d + j] = (i < n / 2 ? -1.0f : 1.0f) + noise(rng);
  }
  TwoMeans s = BalancedTwoMeans(x.data(), n, d, 8, 0.25f);
  for (size_t i = 1; i < n; ++i) EXPECT_EQ(s.side[i], s.side[0] ^ (i >= n / 2)) << i;
  EXPECT_NEAR(std::abs(s.centroid[0][0] - s.centroid[1][0]), 2.0f, 0.1f);
}

TEST(BalancedTwoMeansTest, SkewedPointsStillGiveBothHalvesAQuarter) {
  // 190 points at the origin and 10 far away: the natural cut is 190/10, balance forces 50+.
  const size_t n = 200, d = 4;
  std::vector<float> x(n * d, 0.0f);
  for (size_t i = 0; i < 10; ++i) x[i * d] = 100.0f + static_cast<float>(i);
  for (size_t i = 10; i < n; ++i) x[i * d + 1] = 0.001f * static_cast<float>(i);
  TwoMeans s = BalancedTwoMeans(x.data(), n, d, 8, 0.25f);
  size_t ones = 0;
  for (uint8_t v : s.side) ones += v;
  EXPECT_GE(ones, 50u);
  EXPECT_LE(ones, 150u);
}

}  // namespace
}  // namespace shoal::index

#include "index/clustering/navigation_copy.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <span>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"
#include "index/distance/distance.h"

namespace shoal::index {
namespace {

uint32_t Seed() { return base::TestSeed(); }

// `rows` points near `rank` random directions (so a basis can capture most of them), plus noise,
// offset from the origin, in [-300, 300]-ish: the range of pixel data.
std::vector<float> LowRankRows(size_t rows, size_t dim, size_t rank, std::mt19937& rng) {
  std::normal_distribution<float> g(0, 1);
  std::vector<float> dirs(rank * dim), offset(dim), x(rows * dim);
  for (float& v : dirs) v = g(rng);
  for (float& v : offset) v = 50 * g(rng);
  for (size_t i = 0; i < rows; ++i) {
    for (size_t j = 0; j < dim; ++j) x[i * dim + j] = offset[j] + 2 * g(rng);
    for (size_t r = 0; r < rank; ++r) {
      const float w = 10 * g(rng);
      for (size_t j = 0; j < dim; ++j) x[i * dim + j] += w * dirs[r * dim + j];
    }
  }
  return x;
}

TEST(NavigationCopyTest, DistancesAreTheFloatOnesWithinHalfPrecision) {
  std::mt19937 rng(Seed());
  for (size_t dim : {8, 31, 32, 100, 784}) {
    const size_t rows = 200;
    const std::vector<float> c = LowRankRows(rows, dim, 6, rng), q = LowRankRows(20, dim, 6, rng);
    const NavigationCopy copy = NavigationCopy::Build(c.data(), rows, dim);
    ASSERT_FALSE(copy.empty());
    EXPECT_EQ(copy.basis_size(), dim >= 32 ? std::min<size_t>(NavigationCopy::kBasis, dim / 4) : 0);
    // Half rounding of c - mu moves each coordinate by at most 2^-11 of it: the distance by at
    // most 2^-10 |q - c| |c - mu| + 2^-22 |c - mu|^2, plus float summation.
    std::vector<double> mean(dim, 0);
    for (size_t r = 0; r < rows; ++r) {
      for (size_t j = 0; j < dim; ++j) mean[j] += c[r * dim + j] / double(rows);
    }
    NavigationCopy::Query prepared;
    for (size_t i = 0; i < 20; ++i) {
      copy.Prepare(&q[i * dim], &prepared);
      for (uint32_t r = 0; r < rows; ++r) {
        const float want = L2Sqr(&q[i * dim], &c[r * dim], dim);
        double spread = 0;
        for (size_t j = 0; j < dim; ++j) spread += std::pow(c[r * dim + j] - mean[j], 2);
        const double tol = std::ldexp(std::sqrt(want * spread), -10) + std::ldexp(spread, -22) +
                           1e-5 * want + 1e-2;
        EXPECT_NEAR(copy.Distance(prepared, r, INFINITY), want, tol)
            << "dim " << dim << " row " << r;
      }
    }
  }
}

// With a bound: either the unbounded value (the row may be within it) or a value above the bound
// that is still a lower bound of the distance (up to half rounding).
TEST(NavigationCopyTest, BoundedDistanceIsExactOrAboveTheBoundAndBelowTheDistance) {
  std::mt19937 rng(Seed());
  for (size_t dim : {16, 64, 784}) {
    const size_t rows = 300;
    const std::vector<float> c = LowRankRows(rows, dim, 6, rng), q = LowRankRows(10, dim, 6, rng);
    const NavigationCopy copy = NavigationCopy::Build(c.data(), rows, dim);
    NavigationCopy::Query prepared;
    size_t early = 0, total = 0;
    for (size_t i = 0; i < 10; ++i) {
      copy.Prepare(&q[i * dim], &prepared);
      for (uint32_t r = 0; r < rows; ++r) {
        const float full = copy.Distance(prepared, r, INFINITY);
        for (float fraction : {0.0f, 0.3f, 0.9f, 0.999f, 1.0f, 1.01f, 2.0f}) {
          const float bound = fraction * full;
          const float got = copy.Distance(prepared, r, bound);
          ++total;
          if (got <= bound) {
            EXPECT_EQ(got, full) << "dim " << dim << " row " << r << " bound " << bound;
          } else {
            early += got != full;
            EXPECT_LE(got, full * (1 + 2e-3f) + 1e-2f) << "dim " << dim << " row " << r;
          }
          if (fraction >= 1.01f) {
            EXPECT_EQ(got, full);
          }
        }
      }
    }
    // The bounds do cut work short (not asserted per row: rounding may let a row through).
    std::cout << "dim " << dim << ": " << early << " of " << total << " cut short\n";
    if (dim >= 64) {
      EXPECT_GT(early, total / 10) << "dim " << dim;
    }
  }
}

// LowerBounds: one call for many rows, any subset in any order, each value LowerBound's bit for
// bit (no basis below 32 dimensions: zeros).
TEST(NavigationCopyTest, LowerBoundsAreEachRowsLowerBound) {
  std::mt19937 rng(Seed());
  for (size_t dim : {8, 33, 100, 784}) {
    const size_t rows = 120;
    const std::vector<float> c = LowRankRows(rows, dim, 6, rng), q = LowRankRows(4, dim, 6, rng);
    const NavigationCopy copy = NavigationCopy::Build(c.data(), rows, dim);
    ASSERT_FALSE(copy.empty());
    std::vector<uint32_t> some;
    for (uint32_t r = 0; r < rows; ++r) {
      if (rng() % 3 != 0) some.push_back(r);
    }
    std::shuffle(some.begin(), some.end(), rng);
    NavigationCopy::Query prepared;
    for (size_t i = 0; i < 4; ++i) {
      copy.Prepare(&q[i * dim], &prepared);
      for (size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{5}, some.size()}) {
        std::vector<float> got(n + 1, -1.0f);
        copy.LowerBounds(prepared, std::span<const uint32_t>(some.data(), n), got.data());
        for (size_t j = 0; j < n; ++j) {
          EXPECT_EQ(got[j], copy.LowerBound(prepared, some[j])) << "dim " << dim << " row " << j;
        }
        EXPECT_EQ(got[n], -1.0f);  // nothing written past the rows
      }
    }
  }
}

TEST(NavigationCopyTest, EmptyWhenACoordinateIsBeyondHalfRange) {
  std::vector<float> c(4 * 40, 1.0f);
  EXPECT_FALSE(NavigationCopy::Build(c.data(), 4, 40).empty());
  c[77] = 1e6f;  // 750000 from the mean: beyond 65504
  EXPECT_TRUE(NavigationCopy::Build(c.data(), 4, 40).empty());
  c[77] = std::nanf("");
  EXPECT_TRUE(NavigationCopy::Build(c.data(), 4, 40).empty());
  EXPECT_TRUE(NavigationCopy::Build(c.data(), 0, 40).empty());
}

TEST(NavigationCopyTest, BuildIsDeterministic) {
  std::mt19937 rng(Seed());
  const size_t rows = 150, dim = 128;
  const std::vector<float> c = LowRankRows(rows, dim, 10, rng), q = LowRankRows(5, dim, 10, rng);
  const NavigationCopy a = NavigationCopy::Build(c.data(), rows, dim);
  const NavigationCopy b = NavigationCopy::Build(c.data(), rows, dim);
  NavigationCopy::Query pa, pb;
  for (size_t i = 0; i < 5; ++i) {
    a.Prepare(&q[i * dim], &pa);
    b.Prepare(&q[i * dim], &pb);
    EXPECT_EQ(pa.projected, pb.projected);
    for (uint32_t r = 0; r < rows; ++r) {
      EXPECT_EQ(a.Distance(pa, r, 1000.0f), b.Distance(pb, r, 1000.0f));
    }
  }
}

}  // namespace
}  // namespace shoal::index

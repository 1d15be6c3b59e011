#include "index/gpu/gpu_kmeans.h"

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"

namespace shoal::index::gpu {
namespace {

uint32_t Seed() { return base::TestSeed(); }

double L2(const float* a, const float* b, size_t dim) {
  double s = 0;
  for (size_t i = 0; i < dim; ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return s;
}

TEST(GpuKmeansTest, RejectsBadArgumentsWithOrWithoutDevice) {
  const float x[4] = {};
  uint32_t label = 0;
  EXPECT_EQ(GpuAssignNearest(x, 1, x, 0, 4, &label, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GpuAssignNearest(x, 1, x, 1, 0, &label, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GpuAssignNearest(x, 1, x, 1, 4, nullptr, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(GpuAssignNearest(nullptr, 0, x, 1, 4, nullptr, nullptr).ok());
}

TEST(GpuKmeansTest, ReportsUnavailableWithoutDevice) {
  if (GpuAvailable()) GTEST_SKIP() << "a GPU is present";
  const float x[4] = {};
  uint32_t label = 0;
  EXPECT_EQ(GpuAssignNearest(x, 1, x, 1, 4, &label, nullptr).code(),
            absl::StatusCode::kUnavailable);
}

TEST(GpuKmeansTest, MatchesCpuDoubleReference) {
  if (!GpuAvailable()) GTEST_SKIP() << "no CUDA device";
  std::mt19937 rng(Seed());
  std::normal_distribution<float> normal;
  // Sizes that leave partial tiles of points (128), centroids (32) and dims (32).
  for (auto [n, k, dim] : {std::tuple<size_t, size_t, size_t>{1000, 37, 70},
                           {300, 5, 3},
                           {4097, 300, 128},
                           {129, 1, 33}}) {
    std::vector<float> points(n * dim), centroids(k * dim);
    for (auto& v : points) v = normal(rng);
    for (auto& v : centroids) v = normal(rng);
    std::vector<uint32_t> labels(n);
    std::vector<float> dists(n);
    ASSERT_TRUE(
        GpuAssignNearest(points.data(), n, centroids.data(), k, dim, labels.data(), dists.data())
            .ok());
    for (size_t i = 0; i < n; ++i) {
      double best = std::numeric_limits<double>::infinity();
      for (size_t c = 0; c < k; ++c)
        best = std::min(best, L2(&points[i * dim], &centroids[c * dim], dim));
      const std::string what = "n " + std::to_string(n) + " point " + std::to_string(i);
      ASSERT_LT(labels[i], k) << what;
      // The chosen centroid is a nearest one up to float rounding, and the distance is its own.
      const double chosen = L2(&points[i * dim], &centroids[labels[i] * dim], dim);
      EXPECT_LE(chosen, best * (1 + 1e-5) + 1e-6) << what;
      EXPECT_NEAR(dists[i], chosen, 1e-5 * chosen + 1e-6) << what;
    }
  }
}

TEST(GpuKmeansTest, TiesGoToTheLowestCentroidIndex) {
  if (!GpuAvailable()) GTEST_SKIP() << "no CUDA device";
  const size_t dim = 40, k = 70, n = 200;
  std::vector<float> centroids(k * dim, 1.0f);             // all identical
  for (size_t d = 0; d < dim; ++d) centroids[d] = 100.0f;  // centroid 0 is far away
  std::vector<float> points(n * dim, 0.5f);
  std::vector<uint32_t> labels(n, 99);
  ASSERT_TRUE(
      GpuAssignNearest(points.data(), n, centroids.data(), k, dim, labels.data(), nullptr).ok());
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(labels[i], 1u) << i;
}

}  // namespace
}  // namespace shoal::index::gpu

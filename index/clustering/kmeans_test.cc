#include "index/clustering/kmeans.h"

#include <faiss/Clustering.h>
#include <faiss/IndexFlat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/test_seed.h"
#include "gtest/gtest.h"
#include "index/clustering/kmeans_testing.h"
#include "index/distance/distance.h"

namespace shoal::index {
namespace {

uint32_t Seed() { return base::TestSeed(); }

using kmeans_testing::ExpectMatchesReference;
using kmeans_testing::ExpectUpdateMatchesReference;
using kmeans_testing::Gaussian;
using kmeans_testing::Mixture;
using kmeans_testing::OffsetBytes;
using kmeans_testing::UnitNorm;

TEST(ClusteringBackendTest, NameNamesTheKernelLevel) {
  auto backend = MakeCpuClusteringBackend(2);
  EXPECT_EQ(backend->name(), std::string("cpu-") + KernelLevel());
  std::cout << "backend " << backend->name() << "\n";
}

// Where an assignment runs depends only on its shape (so results stay deterministic), with or
// without a device: few centroids stay on the CPU whatever n, since each point then costs the
// CPU less than its copy to the device (a centroid tree's nodes have at most 32 children).
TEST(ClusteringBackendTest, TheGpuBackendLeavesFewCentroidsOnTheCpu) {
  auto gpu = MakeGpuClusteringBackend(16);
  EXPECT_FALSE(gpu->AssignsOnDevice(2'000'000, 15, 128, 1));  // a tree node over every point
  EXPECT_FALSE(gpu->AssignsOnDevice(2'000'000, 32, 768, 1));
  EXPECT_TRUE(gpu->AssignsOnDevice(2'000'000, 40'000, 128, 8));    // BuildSpann's leaf assignment
  EXPECT_TRUE(gpu->AssignsOnDevice(1'000'000, 1024, 128, 1));      // a Lloyd iteration
  EXPECT_FALSE(gpu->AssignsOnDevice(50, 40'000, 128, 8));          // too little work for a launch
  EXPECT_FALSE(gpu->AssignsOnDevice(2'000'000, 40'000, 128, 32));  // m above the device's lists
  EXPECT_FALSE(MakeGpuClusteringBackend(2)->AssignsOnDevice(8'192, 32, 128, 1));
  EXPECT_FALSE(MakeCpuClusteringBackend(16)->AssignsOnDevice(2'000'000, 40'000, 128, 8));
}

TEST(ClusteringBackendTest, AssignTopMMatchesFloat64BruteForce) {
  std::mt19937 rng(Seed());
  auto backend = MakeCpuClusteringBackend(3);
  struct Shape {
    size_t n, d, k, m;
  };
  for (Shape s :
       {Shape{1, 1, 1, 1}, Shape{7, 3, 5, 2}, Shape{1000, 17, 49, 1}, Shape{1500, 128, 97, 5},
        Shape{333, 784, 130, 16}, Shape{2100, 33, 300, 3}, Shape{64, 5, 48, 48}}) {
    SCOPED_TRACE(testing::Message() << "n=" << s.n << " d=" << s.d << " k=" << s.k << " m=" << s.m);
    const std::vector<float> x = Gaussian(s.n, s.d, rng);
    const std::vector<float> c = Gaussian(s.k, s.d, rng);
    // Labels differ only on exact near-ties; random data has very few.
    EXPECT_LE(ExpectMatchesReference(*backend, x, c, s.d, s.m, nullptr), s.n * s.m / 100 + 2);
    std::vector<float> bias(s.k);
    for (float& b : bias) b = static_cast<float>(rng() % 1000) * 0.01f * s.d;
    EXPECT_LE(ExpectMatchesReference(*backend, x, c, s.d, s.m, bias.data()), s.n * s.m / 100 + 2);
  }
}

// Points midway between two centroids (rounded in float), far from the centroids' mean: the
// expanded form's rounding error is far above the two exact distances' gap, so only the exact
// scores can pick the winner, and the assignment must give brute force's exact label and
// distance (L2Sqr + bias, ties to the lower index) bit for bit. An m = 1 assignment that
// trusted the expanded form's order here would pick the other centroid about half the time.
TEST(ClusteringBackendTest, NearTiesGetTheExactWinner) {
  std::mt19937 rng(Seed());
  auto backend = MakeCpuClusteringBackend(2);
  const size_t n = 2000, d = 96, k = 40;
  std::normal_distribution<float> g(0, 1);
  std::vector<float> c(k * d), x(n * d);
  for (float& v : c) v = g(rng);
  for (size_t i = 0; i < n; ++i) {
    const size_t a = rng() % k, b = (a + 1 + rng() % (k - 1)) % k;
    for (size_t j = 0; j < d; ++j) {
      x[i * d + j] = (c[a * d + j] + c[b * d + j]) / 2 + 40.0f;  // the offset: far from the mean
    }
  }
  for (size_t i = 0; i < k * d; ++i) c[i] += 40.0f;
  for (const bool biased : {false, true}) {
    std::vector<float> bias(k, 0.0f);
    if (biased) {
      for (size_t i = 0; i < k; ++i) bias[i] = 1e-3f * static_cast<float>(rng() % 3);
    }
    std::vector<uint32_t> labels(n);
    std::vector<float> dists(n);
    ASSERT_TRUE(backend
                    ->AssignTopM(x.data(), n, c.data(), k, d, 1, biased ? bias.data() : nullptr,
                                 labels.data(), dists.data())
                    .ok());
    for (size_t i = 0; i < n; ++i) {
      std::pair<float, uint32_t> best{std::numeric_limits<float>::infinity(), 0};
      float best_dist = 0;
      for (uint32_t j = 0; j < k; ++j) {
        const float dist = L2Sqr(&x[i * d], &c[j * d], d);
        if (std::pair{dist + bias[j], j} < best) {
          best = {dist + bias[j], j};
          best_dist = dist;
        }
      }
      ASSERT_EQ(labels[i], best.second) << "point " << i << " biased " << biased;
      ASSERT_EQ(dists[i], best_dist) << "point " << i << " biased " << biased;
    }
  }
}

TEST(ClusteringBackendTest, AssignTopMOnUint8DataWithLargeOffset) {
  std::mt19937 rng(Seed());
  auto backend = MakeCpuClusteringBackend(2);
  const size_t n = 700, d = 96, k = 70;
  ExpectMatchesReference(*backend, OffsetBytes(n, d, rng), OffsetBytes(k, d, rng), d, 4, nullptr);
}

TEST(ClusteringBackendTest, AssignTopMOnUnitNormData) {
  std::mt19937 rng(Seed());
  auto backend = MakeCpuClusteringBackend(2);
  const size_t d = 100;
  ExpectMatchesReference(*backend, UnitNorm(900, d, rng), UnitNorm(150, d, rng), d, 8, nullptr);
}

TEST(ClusteringBackendTest, AssignTopMOnGaussianMixtureOddShapes) {
  std::mt19937 rng(Seed());
  auto backend = MakeCpuClusteringBackend(2);
  for (auto [n, d, k] : {std::tuple<size_t, size_t, size_t>{1001, 13, 37},
                         {517, 129, 65},
                         {2049, 7, 3},
                         {333, 255, 101}}) {
    SCOPED_TRACE(testing::Message() << "n=" << n << " d=" << d << " k=" << k);
    const std::vector<float> x = Mixture(n, d, 11, rng);
    // Centroids: perturbed data points, so the nearest ones are close rivals.
    std::vector<float> c(x.begin(), x.begin() + k * d);
    for (float& v : c) v += 0.1f * static_cast<float>(rng() % 7);
    ExpectMatchesReference(*backend, x, c, d, 1, nullptr);
    ExpectMatchesReference(*backend, x, c, d, 3, nullptr);
  }
}

TEST(ClusteringBackendTest, AssignTopMRejectsNanNamingTheRow) {
  std::mt19937 rng(Seed());
  auto backend = MakeCpuClusteringBackend(2);
  const size_t n = 50, d = 8, k = 5;
  std::vector<float> x = Gaussian(n, d, rng), c = Gaussian(k, d, rng);
  std::vector<uint32_t> labels(n);
  std::vector<float> dists(n);
  x[37 * d + 5] = std::numeric_limits<float>::quiet_NaN();
  absl::Status s =
      backend->AssignTopM(x.data(), n, c.data(), k, d, 1, nullptr, labels.data(), dists.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("points[37]"), std::string::npos) << s;
  x[37 * d + 5] = 0;
  c[3 * d] = -std::numeric_limits<float>::infinity();
  s = backend->AssignTopM(x.data(), n, c.data(), k, d, 1, nullptr, labels.data(), dists.data());
  EXPECT_NE(s.message().find("centroids[3]"), std::string::npos) << s;
}

// The AVX-512 path checks the points as it packs them: a NaN or infinity in any chunk of a
// large call, on any thread, is still named by its first row, and a later one does not hide it.
TEST(ClusteringBackendTest, AssignTopMNamesTheFirstBadRowOfALargeCall) {
  std::mt19937 rng(Seed());
  auto backend = MakeCpuClusteringBackend(3);
  const size_t n = 9000, d = 20, k = 12;
  const std::vector<float> x = Gaussian(n, d, rng), c = Gaussian(k, d, rng);
  std::vector<uint32_t> labels(n);
  for (size_t row : {size_t{0}, size_t{2047}, size_t{2048}, size_t{5000}, n - 1}) {
    std::vector<float> bad = x;
    bad[row * d + 7] = row % 2 == 0 ? std::numeric_limits<float>::infinity()
                                    : std::numeric_limits<float>::quiet_NaN();
    if (row + 100 < n) bad[(row + 100) * d] = std::numeric_limits<float>::quiet_NaN();
    const absl::Status s =
        backend->AssignTopM(bad.data(), n, c.data(), k, d, 1, nullptr, labels.data(), nullptr);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << row;
    EXPECT_NE(s.message().find(absl::StrCat("points[", row, "]")), std::string::npos) << s;
  }
}

TEST(ClusteringBackendTest, UpdateCentroidsMatchesFloat64Means) {
  std::mt19937 rng(Seed());
  auto backend = MakeCpuClusteringBackend(2);
  const size_t n = 3001, d = 19, k = 40;
  const std::vector<float> x = OffsetBytes(n, d, rng);
  std::vector<uint32_t> labels(n);
  for (uint32_t& l : labels) l = rng() % (k - 3);  // the last 3 clusters stay empty
  ExpectUpdateMatchesReference(*backend, x, d, labels, k);
  std::vector<float> a(k * d, 0.0f), b(k * d, 0.0f);
  ASSERT_TRUE(backend->UpdateCentroids(x.data(), n, d, labels.data(), k, a.data(), nullptr).ok());
  ASSERT_TRUE(backend->UpdateCentroids(x.data(), n, d, labels.data(), k, b.data(), nullptr).ok());
  EXPECT_EQ(a, b);
  labels[1234] = static_cast<uint32_t>(k);
  const absl::Status s =
      backend->UpdateCentroids(x.data(), n, d, labels.data(), k, a.data(), nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("labels[1234]"), std::string::npos) << s;
}

TEST(ClusteringBackendTest, TiesGoToTheLowerIndex) {
  auto backend = MakeCpuClusteringBackend(1);
  const size_t d = 4, k = 100;
  std::vector<float> c(k * d, 1.0f);  // all centroids identical
  std::vector<float> x(3 * d, 0.0f);
  std::vector<uint32_t> labels(3 * 3);
  std::vector<float> dists(3 * 3);
  ASSERT_TRUE(
      backend->AssignTopM(x.data(), 3, c.data(), k, d, 3, nullptr, labels.data(), dists.data())
          .ok());
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(labels[i * 3 + 0], 0u);
    EXPECT_EQ(labels[i * 3 + 1], 1u);
    EXPECT_EQ(labels[i * 3 + 2], 2u);
    EXPECT_FLOAT_EQ(dists[i * 3], 4.0f);
  }
}

TEST(ClusteringBackendTest, RejectsBadArguments) {
  auto backend = MakeCpuClusteringBackend(1);
  float x[4] = {}, c[4] = {};
  uint32_t l[4];
  float dd[4];
  EXPECT_EQ(backend->AssignTopM(x, 1, c, 0, 4, 1, nullptr, l, dd).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backend->AssignTopM(x, 1, c, 1, 0, 1, nullptr, l, dd).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backend->AssignTopM(x, 1, c, 1, 4, 2, nullptr, l, dd).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(backend->AssignTopM(x, 0, c, 1, 4, 1, nullptr, l, dd).ok());
}

double FaissObjective(const std::vector<float>& x, size_t d, size_t k, int iterations) {
  faiss::ClusteringParameters cp;
  cp.niter = iterations;
  cp.seed = 1234;
  faiss::Clustering clustering(static_cast<int>(d), static_cast<int>(k), cp);
  faiss::IndexFlatL2 index(static_cast<int64_t>(d));
  clustering.train(static_cast<int64_t>(x.size() / d), x.data(), index);
  std::vector<float> dist(x.size() / d);
  std::vector<int64_t> label(x.size() / d);
  index.search(static_cast<int64_t>(x.size() / d), x.data(), 1, dist.data(), label.data());
  double obj = 0;
  for (float v : dist) obj += v;
  return obj;
}

TEST(KMeansTest, ObjectiveCloseToFaiss) {
  std::mt19937 rng(Seed());
  auto backend = MakeCpuClusteringBackend(2);
  for (auto [n, d, clusters, k] :
       {std::tuple<size_t, size_t, size_t, uint32_t>{20000, 32, 50, 64}, {10000, 100, 20, 20}}) {
    const std::vector<float> x = Mixture(n, d, clusters, rng);
    KMeansOptions options;
    options.k = k;
    options.lambda = 0;
    options.iterations = 20;
    auto ours = KMeans(*backend, x.data(), n, d, options);
    ASSERT_TRUE(ours.ok()) << ours.status();
    const double faiss = FaissObjective(x, d, k, 20);
    std::cout << "n=" << n << " k=" << k << " objective ours " << ours->objective << " faiss "
              << faiss << "\n";
    EXPECT_LE(ours->objective, faiss * 1.05);
  }
}

TEST(KMeansTest, SameSeedGivesBitwiseIdenticalCentroids) {
  std::mt19937 rng(Seed());
  const std::vector<float> x = Mixture(5000, 24, 30, rng);
  KMeansOptions options;
  options.k = 40;
  options.seed = 7;
  options.max_sample = 3000;
  auto one = MakeCpuClusteringBackend(1), three = MakeCpuClusteringBackend(3);
  auto a = KMeans(*one, x.data(), 5000, 24, options);
  auto b = KMeans(*three, x.data(), 5000, 24, options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->centroids, b->centroids);
  EXPECT_EQ(a->labels, b->labels);
  EXPECT_EQ(a->lambda, b->lambda);
}

double Spread(const std::vector<uint32_t>& sizes) {
  double mean = 0, var = 0;
  for (uint32_t s : sizes) mean += s;
  mean /= sizes.size();
  for (uint32_t s : sizes) var += (s - mean) * (s - mean);
  return std::sqrt(var / sizes.size()) / mean;
}

TEST(KMeansTest, AutomaticLambdaDoesNotWidenSizeSpread) {
  std::mt19937 rng(Seed());
  auto backend = MakeCpuClusteringBackend(2);
  // Unequal clusters: a mixture with Zipf-like weights, overlapping Gaussians.
  const size_t n = 20000, d = 16, clusters = 10;
  std::normal_distribution<float> g(0, 1);
  std::vector<float> centres(clusters * d), x(n * d);
  for (float& c : centres) c = 3 * g(rng);
  for (size_t i = 0; i < n; ++i) {
    size_t c = 0;
    while (c + 1 < clusters && rng() % 2 == 0) ++c;  // P(c) ~ 2^-(c+1)
    for (size_t j = 0; j < d; ++j) x[i * d + j] = centres[c * d + j] + g(rng);
  }
  KMeansOptions options;
  options.k = 50;
  options.lambda = 0;
  auto plain = KMeans(*backend, x.data(), n, d, options);
  options.lambda = -1;
  auto balanced = KMeans(*backend, x.data(), n, d, options);
  ASSERT_TRUE(plain.ok() && balanced.ok());
  std::cout << "spread plain " << Spread(plain->sizes) << " balanced " << Spread(balanced->sizes)
            << " (lambda " << balanced->lambda << "), objective plain " << plain->objective
            << " balanced " << balanced->objective << "\n";
  // lambda = 0 is one of the candidates, so the automatic choice is never much worse; on this
  // data the penalty helps little (see the commit message), so no strict improvement is asserted.
  EXPECT_LE(Spread(balanced->sizes), Spread(plain->sizes) * 1.05);
}

TEST(KMeansTest, RejectsBadInputNamingTheField) {
  auto backend = MakeCpuClusteringBackend(1);
  std::vector<float> x(10 * 3, 1.0f);
  KMeansOptions options;
  options.k = 0;
  auto r = KMeans(*backend, x.data(), 10, 3, options);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("k"), std::string::npos);
  options.k = 11;
  EXPECT_EQ(KMeans(*backend, x.data(), 10, 3, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.k = 2;
  EXPECT_EQ(KMeans(*backend, x.data(), 10, 0, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  x[4 * 3 + 2] = std::numeric_limits<float>::quiet_NaN();
  r = KMeans(*backend, x.data(), 10, 3, options);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("points[4][2]"), std::string::npos) << r.status();
  x[4 * 3 + 2] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(KMeans(*backend, x.data(), 10, 3, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(KMeansTest, DuplicatePointsAndKEqualsN) {
  auto backend = MakeCpuClusteringBackend(1);
  std::vector<float> x(50 * 4, 3.0f);
  KMeansOptions options;
  options.k = 50;
  auto r = KMeans(*backend, x.data(), 50, 4, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->labels.size(), 50u);
  EXPECT_EQ(r->objective, 0);
}

}  // namespace
}  // namespace shoal::index

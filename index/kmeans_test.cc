#include "index/kmeans.h"

#include <faiss/Clustering.h>
#include <faiss/IndexFlat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"
#include "index/distance.h"

namespace shoal::index {
namespace {

uint32_t Seed() { return base::TestSeed(); }

std::vector<float> Gaussian(size_t n, size_t d, std::mt19937& rng, float offset = 0) {
  std::normal_distribution<float> g(0, 1);
  std::vector<float> v(n * d);
  for (float& x : v) x = offset + g(rng);
  return v;
}

// n points around `clusters` random centres (spread 10), noise sigma 1.
std::vector<float> Mixture(size_t n, size_t d, size_t clusters, std::mt19937& rng) {
  std::vector<float> centres = Gaussian(clusters, d, rng);
  for (float& c : centres) c *= 10;
  std::normal_distribution<float> g(0, 1);
  std::vector<float> v(n * d);
  for (size_t i = 0; i < n; ++i) {
    const size_t c = rng() % clusters;
    for (size_t j = 0; j < d; ++j) v[i * d + j] = centres[c * d + j] + g(rng);
  }
  return v;
}

double Dist64(const float* a, const float* b, size_t d) {
  double s = 0;
  for (size_t j = 0; j < d; ++j) s += (double(a[j]) - b[j]) * (double(a[j]) - b[j]);
  return s;
}

// Checks AssignTopM against a float64 brute force: at every rank the cost (distance + bias) of
// the returned centroid equals the reference's within a tiny relative bound, the returned
// distance is exact within that bound, and labels are distinct.
void ExpectMatchesReference(ClusteringBackend& backend, const std::vector<float>& x,
                            const std::vector<float>& c, size_t d, size_t m, const float* bias) {
  const size_t n = x.size() / d, k = c.size() / d;
  std::vector<uint32_t> labels(n * m);
  std::vector<float> dists(n * m);
  ASSERT_TRUE(
      backend.AssignTopM(x.data(), n, c.data(), k, d, m, bias, labels.data(), dists.data()).ok());
  size_t mismatched_labels = 0;
  for (size_t i = 0; i < n; ++i) {
    std::vector<std::pair<double, uint32_t>> ref(k);
    double scale = 0;
    for (size_t j = 0; j < k; ++j) {
      const double dist = Dist64(&x[i * d], &c[j * d], d);
      ref[j] = {dist + (bias ? bias[j] : 0.0), static_cast<uint32_t>(j)};
      scale = std::max(scale, dist);
    }
    std::sort(ref.begin(), ref.end());
    const double tol = 1e-5 * (scale + 1e-3);
    for (size_t r = 0; r < m; ++r) {
      const uint32_t got = labels[i * m + r];
      ASSERT_LT(got, k) << "point " << i << " rank " << r;
      const double got_dist = Dist64(&x[i * d], &c[got * d], d);
      const double got_cost = got_dist + (bias ? bias[got] : 0.0);
      ASSERT_NEAR(got_cost, ref[r].first, tol) << "point " << i << " rank " << r;
      ASSERT_NEAR(dists[i * m + r], got_dist, tol) << "point " << i << " rank " << r;
      if (r > 0) {
        ASSERT_NE(got, labels[i * m + r - 1]);
      }
      mismatched_labels += got != ref[r].second;
    }
  }
  // Labels differ only on exact near-ties; random data has very few.
  EXPECT_LE(mismatched_labels, n * m / 100 + 2);
}

TEST(ClusteringBackendTest, NameNamesTheKernelLevel) {
  auto backend = MakeCpuClusteringBackend(2);
  EXPECT_EQ(backend->name(), std::string("cpu-") + KernelLevel());
  std::cout << "backend " << backend->name() << "\n";
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
    ExpectMatchesReference(*backend, x, c, s.d, s.m, nullptr);
    std::vector<float> bias(s.k);
    for (float& b : bias) b = static_cast<float>(rng() % 1000) * 0.01f * s.d;
    ExpectMatchesReference(*backend, x, c, s.d, s.m, bias.data());
  }
}

TEST(ClusteringBackendTest, AssignTopMOnUint8DataWithLargeOffset) {
  std::mt19937 rng(Seed());
  auto backend = MakeCpuClusteringBackend(2);
  const size_t n = 700, d = 96, k = 70;
  std::vector<float> x(n * d), c(k * d);
  for (float& v : x) v = 1000.0f + static_cast<float>(rng() % 256);
  for (float& v : c) v = 1000.0f + static_cast<float>(rng() % 256);
  ExpectMatchesReference(*backend, x, c, d, 4, nullptr);
}

TEST(ClusteringBackendTest, AssignTopMOnUnitNormData) {
  std::mt19937 rng(Seed());
  auto backend = MakeCpuClusteringBackend(2);
  const size_t d = 100;
  std::vector<float> x = Gaussian(900, d, rng), c = Gaussian(150, d, rng);
  for (std::vector<float>* v : {&x, &c}) {
    for (size_t i = 0; i < v->size() / d; ++i) {
      double norm = 0;
      for (size_t j = 0; j < d; ++j) norm += (*v)[i * d + j] * (*v)[i * d + j];
      for (size_t j = 0; j < d; ++j) (*v)[i * d + j] /= std::sqrt(norm);
    }
  }
  ExpectMatchesReference(*backend, x, c, d, 8, nullptr);
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

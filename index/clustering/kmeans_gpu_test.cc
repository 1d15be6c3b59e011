// The CUDA k-means kernels against the float64 reference, through the ClusteringBackend seam
// (the same checks kmeans_test.cc runs on the CPU backend). ctest label `gpu`; every test
// skips without a CUDA device.
#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"
#include "index/clustering/gpu/gpu_kmeans.h"
#include "index/clustering/kmeans.h"
#include "index/clustering/kmeans_testing.h"

namespace shoal::index {
namespace {

using kmeans_testing::ExpectMatchesReference;
using kmeans_testing::ExpectUpdateMatchesReference;
using kmeans_testing::Gaussian;
using kmeans_testing::Mixture;
using kmeans_testing::OffsetBytes;
using kmeans_testing::UnitNorm;

uint32_t Seed() { return base::TestSeed(); }

#define SKIP_WITHOUT_GPU() \
  if (!gpu::GpuAvailable()) GTEST_SKIP() << gpu::GpuDescription()

// Every call on the device whatever its size (MakeGpuClusteringBackend sends small calls to
// the CPU), with the given options.
class DeviceOnlyBackend final : public ClusteringBackend {
 public:
  explicit DeviceOnlyBackend(gpu::GpuOptions options) : options_(options) {}
  std::string name() const override { return "cuda-direct"; }
  absl::Status AssignTopM(const float* points, size_t n, const float* centroids, size_t k, size_t d,
                          size_t m, const float* bias, uint32_t* labels,
                          float* distances) override {
    return gpu::GpuAssignTopM(points, n, centroids, k, d, m, bias, labels, distances, options_);
  }
  absl::Status UpdateCentroids(const float* points, size_t n, size_t d, const uint32_t* labels,
                               size_t k, float* centroids, uint32_t* sizes) override {
    return gpu::GpuUpdateCentroids(points, n, d, labels, k, centroids, sizes, options_);
  }

 private:
  gpu::GpuOptions options_;
};

// TF32 + recheck, exact fp32, and TF32 with a budget small enough to stream many chunks.
std::vector<std::pair<std::string, gpu::GpuOptions>> Variants(size_t d) {
  gpu::GpuOptions streamed;
  streamed.device_budget_bytes = 3 * 97 * (d * 4 + 512);  // ~97 rows per chunk, 3 streams
  gpu::GpuOptions fp32;
  fp32.precision = gpu::GpuPrecision::kFp32;
  return {{"tf32", gpu::GpuOptions{}}, {"fp32", fp32}, {"tf32-streamed", streamed}};
}

TEST(GpuClusteringTest, AssignTopMMatchesFloat64Reference) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(Seed());
  struct Case {
    const char* data;
    size_t n, d, k, m;
  };
  for (Case c : {Case{"gaussian", 1000, 17, 49, 1}, Case{"mixture", 4097, 128, 300, 1},
                 Case{"mixture", 1500, 129, 97, 5}, Case{"bytes+1000", 700, 96, 70, 4},
                 Case{"unit", 900, 100, 150, 8}, Case{"gaussian", 333, 784, 130, 16},
                 Case{"gaussian", 64, 5, 31, 31}, Case{"mixture", 129, 33, 1, 1}}) {
    const std::string data = c.data;
    std::vector<float> x, cent;
    if (data == "gaussian") {
      x = Gaussian(c.n, c.d, rng);
      cent = Gaussian(c.k, c.d, rng);
    } else if (data == "mixture") {
      x = Mixture(c.n, c.d, 13, rng);
      cent.assign(x.begin(), x.begin() + c.k * c.d);
      for (float& v : cent) v += 0.05f * static_cast<float>(rng() % 9);
    } else if (data == "unit") {
      x = UnitNorm(c.n, c.d, rng);
      cent = UnitNorm(c.k, c.d, rng);
    } else {
      x = OffsetBytes(c.n, c.d, rng);
      cent = OffsetBytes(c.k, c.d, rng);
    }
    std::vector<float> bias(c.k);
    for (float& b : bias) b = static_cast<float>(rng() % 1000) * 0.01f * c.d;
    for (const auto& [variant, options] : Variants(c.d)) {
      SCOPED_TRACE(::testing::Message() << data << " n=" << c.n << " d=" << c.d << " k=" << c.k
                                        << " m=" << c.m << " " << variant);
      DeviceOnlyBackend backend(options);
      EXPECT_LE(ExpectMatchesReference(backend, x, cent, c.d, c.m, nullptr), c.n * c.m / 100 + 2);
      EXPECT_LE(ExpectMatchesReference(backend, x, cent, c.d, c.m, bias.data()),
                c.n * c.m / 100 + 2);
    }
  }
}

TEST(GpuClusteringTest, StreamedChunksGiveBitwiseTheResidentResult) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(Seed());
  const size_t n = 5003, d = 72, k = 211, m = 3;
  const std::vector<float> x = Mixture(n, d, 20, rng), c = Gaussian(k, d, rng);
  std::vector<std::vector<uint32_t>> labels;
  std::vector<std::vector<float>> dists;
  for (const auto& [variant, options] : Variants(d)) {
    if (variant == "fp32") continue;
    labels.emplace_back(n * m);
    dists.emplace_back(n * m);
    ASSERT_TRUE(gpu::GpuAssignTopM(x.data(), n, c.data(), k, d, m, nullptr, labels.back().data(),
                                   dists.back().data(), options)
                    .ok());
  }
  auto retained = gpu::GpuRetainPoints(x.data(), n, d);
  ASSERT_NE(retained, nullptr);
  labels.emplace_back(n * m);
  dists.emplace_back(n * m);
  ASSERT_TRUE(gpu::GpuAssignTopM(x.data(), n, c.data(), k, d, m, nullptr, labels.back().data(),
                                 dists.back().data())
                  .ok());
  for (size_t v = 1; v < labels.size(); ++v) {
    EXPECT_EQ(labels[v], labels[0]) << "variant " << v;
    EXPECT_EQ(dists[v], dists[0]) << "variant " << v;
  }
}

// One resident chunk of more than 65,536 rows is scanned 128 points per block, short chunks 32
// points x 16 slices; many close centroids send points through the 32-candidate list and the
// full exact scan. Every way gives bitwise the exact fp32 path's labels and distances.
TEST(GpuClusteringTest, WideAndNarrowScansGiveTheExactPathsResult) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(Seed());
  const size_t n = 70001, d = 48, k = 2048;
  const std::vector<float> x = Mixture(n, d, 64, rng);
  std::vector<float> cent(x.begin(), x.begin() + k * d);
  for (float& v : cent) v += 0.01f * static_cast<float>(rng() % 5);
  gpu::GpuOptions fp32, narrow;
  fp32.precision = gpu::GpuPrecision::kFp32;
  narrow.device_budget_bytes = 3 * 4000 * (k * 4 + d * 8 + 512);    // ~4,000 rows per chunk
  for (size_t m : {size_t{1}, size_t{3}, size_t{8}, size_t{20}}) {  // each length of top list
    SCOPED_TRACE(::testing::Message() << "m=" << m);
    std::vector<uint32_t> want(n * m), got(n * m);
    std::vector<float> want_dist(n * m), got_dist(n * m);
    ASSERT_TRUE(gpu::GpuAssignTopM(x.data(), n, cent.data(), k, d, m, nullptr, want.data(),
                                   want_dist.data(), fp32)
                    .ok());
    for (const gpu::GpuOptions& options : {gpu::GpuOptions{}, narrow}) {
      ASSERT_TRUE(gpu::GpuAssignTopM(x.data(), n, cent.data(), k, d, m, nullptr, got.data(),
                                     got_dist.data(), options)
                      .ok());
      size_t differ = 0, first = n * m;
      for (size_t i = 0; i < n * m; ++i) {
        if (got[i] == want[i] && got_dist[i] == want_dist[i]) continue;
        first = std::min(first, i);
        ++differ;
      }
      EXPECT_EQ(differ, 0u) << "budget " << options.device_budget_bytes << ", first at " << first;
    }
  }
}

TEST(GpuClusteringTest, TiesGoToTheLowestIndex) {
  SKIP_WITHOUT_GPU();
  const size_t d = 40, k = 70, n = 200, m = 3;
  std::vector<float> centroids(k * d, 1.0f);             // all identical ...
  for (size_t j = 0; j < d; ++j) centroids[j] = 100.0f;  // ... but centroid 0, far away
  std::vector<float> points(n * d, 0.5f);
  for (const auto& [variant, options] : Variants(d)) {
    SCOPED_TRACE(variant);
    std::vector<uint32_t> labels(n * m, 99);
    ASSERT_TRUE(gpu::GpuAssignTopM(points.data(), n, centroids.data(), k, d, m, nullptr,
                                   labels.data(), nullptr, options)
                    .ok());
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(labels[i * m], 1u) << i;
      ASSERT_EQ(labels[i * m + 1], 2u) << i;
      ASSERT_EQ(labels[i * m + 2], 3u) << i;
    }
  }
}

TEST(GpuClusteringTest, RejectsNanNamingTheRow) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(Seed());
  const size_t n = 3000, d = 24, k = 50;
  std::vector<float> x = Gaussian(n, d, rng), c = Gaussian(k, d, rng);
  x[2718 * d + 3] = std::numeric_limits<float>::quiet_NaN();
  x[2900 * d + 1] = std::numeric_limits<float>::infinity();
  std::vector<uint32_t> labels(n);
  for (const auto& [variant, options] : Variants(d)) {
    const absl::Status s = gpu::GpuAssignTopM(x.data(), n, c.data(), k, d, 1, nullptr,
                                              labels.data(), nullptr, options);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << variant;
    EXPECT_NE(s.message().find("points[2718]"), std::string::npos) << variant << ": " << s;
  }
  c[7 * d] = std::numeric_limits<float>::quiet_NaN();
  const absl::Status s =
      gpu::GpuAssignTopM(x.data(), n, c.data(), k, d, 1, nullptr, labels.data(), nullptr);
  EXPECT_NE(s.message().find("centroids[7]"), std::string::npos) << s;
}

TEST(GpuClusteringTest, UpdateCentroidsMatchesFloat64AndRepeatsBitwise) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(Seed());
  for (auto [n, d, k] :
       {std::tuple<size_t, size_t, size_t>{3001, 19, 40}, {20000, 128, 7}, {777, 768, 1000}}) {
    const std::vector<float> x = OffsetBytes(n, d, rng);
    std::vector<uint32_t> labels(n);
    for (uint32_t& l : labels) l = rng() % (k - k / 10);  // the last tenth stays empty
    labels[n / 2] = static_cast<uint32_t>(k - 1);
    for (const auto& [variant, options] : Variants(d)) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " d=" << d << " k=" << k << " " << variant);
      DeviceOnlyBackend backend(options);
      ExpectUpdateMatchesReference(backend, x, d, labels, k);
      std::vector<float> a(k * d, 0.0f), b(k * d, 0.0f);
      ASSERT_TRUE(
          backend.UpdateCentroids(x.data(), n, d, labels.data(), k, a.data(), nullptr).ok());
      ASSERT_TRUE(
          backend.UpdateCentroids(x.data(), n, d, labels.data(), k, b.data(), nullptr).ok());
      EXPECT_EQ(a, b);
    }
    labels[n - 1] = static_cast<uint32_t>(k);
    std::vector<float> out(k * d);
    const absl::Status s =
        gpu::GpuUpdateCentroids(x.data(), n, d, labels.data(), k, out.data(), nullptr);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("labels[" + std::to_string(n - 1) + "]"), std::string::npos) << s;
  }
}

TEST(GpuClusteringTest, KMeansTwiceGivesBitwiseIdenticalCentroidsCloseToCpu) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(Seed());
  const size_t n = 60000, d = 64;
  const std::vector<float> x = Mixture(n, d, 40, rng);
  KMeansOptions options;
  options.k = 256;
  options.max_sample = n;
  auto gpu_backend = MakeGpuClusteringBackend(2);
  auto a = KMeans(*gpu_backend, x.data(), n, d, options);
  auto b = KMeans(*gpu_backend, x.data(), n, d, options);
  auto cpu_backend = MakeCpuClusteringBackend(2);
  auto cpu = KMeans(*cpu_backend, x.data(), n, d, options);
  ASSERT_TRUE(a.ok() && b.ok() && cpu.ok()) << a.status() << b.status() << cpu.status();
  EXPECT_EQ(a->centroids, b->centroids);
  EXPECT_EQ(a->labels, b->labels);
  EXPECT_NEAR(a->objective, cpu->objective, 0.02 * cpu->objective);
}

}  // namespace
}  // namespace shoal::index

// The plain API of gpu_kmeans.h: argument checks (with or without a device) and Unavailable
// without one; and, on the host, the TF32 error bound and the recheck rule of the tensor-core
// path, with TF32 rounding emulated. The kernels' results are checked against the float64
// reference in index/kmeans_gpu_test.cc. ctest label `gpu`.
#include "index/clustering/gpu/gpu_kmeans.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"
#include "index/clustering/gpu/gpu_error_bound.h"
#include "index/clustering/kmeans_testing.h"

namespace shoal::index::gpu {
namespace {

TEST(GpuKmeansTest, DescribesTheDevice) {
  std::cout << "device: " << GpuDescription() << "\n";
  EXPECT_FALSE(GpuDescription().empty());
}

TEST(GpuKmeansTest, RejectsBadArgumentsWithOrWithoutDevice) {
  const float x[64] = {};
  uint32_t label[2] = {};
  auto code = [](const absl::Status& s) { return s.code(); };
  constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(code(GpuAssignTopM(x, 1, x, 0, 4, 1, nullptr, label, nullptr)), kInvalid);
  EXPECT_EQ(code(GpuAssignTopM(x, 1, x, 1, 0, 1, nullptr, label, nullptr)), kInvalid);
  EXPECT_EQ(code(GpuAssignTopM(x, 1, x, 1, 4, 1, nullptr, nullptr, nullptr)), kInvalid);
  EXPECT_EQ(code(GpuAssignTopM(x, 1, x, 2, 4, 3, nullptr, label, nullptr)), kInvalid);  // m > k
  EXPECT_EQ(code(GpuAssignTopM(x, 1, x, 40, 1, kGpuMaxTopM + 1, nullptr, label, nullptr)),
            kInvalid);
  GpuOptions four_streams;
  four_streams.streams = 4;
  EXPECT_EQ(code(GpuAssignTopM(x, 1, x, 1, 4, 1, nullptr, label, nullptr, four_streams)), kInvalid);
  std::vector<float> nan_centroid(8, 0.0f);
  nan_centroid[5] = 0.0f / 0.0f;
  const absl::Status s = GpuAssignTopM(x, 1, nan_centroid.data(), 2, 4, 1, nullptr, label, nullptr);
  EXPECT_EQ(code(s), kInvalid);
  EXPECT_NE(s.message().find("centroids[1]"), std::string::npos) << s;
  EXPECT_TRUE(GpuAssignTopM(nullptr, 0, x, 1, 4, 1, nullptr, nullptr, nullptr).ok());

  float centroids[8];
  EXPECT_EQ(code(GpuUpdateCentroids(x, 1, 4, label, 0, centroids, nullptr)), kInvalid);
  EXPECT_EQ(code(GpuUpdateCentroids(x, 1, 0, label, 1, centroids, nullptr)), kInvalid);
  EXPECT_EQ(code(GpuUpdateCentroids(x, 1, 4, nullptr, 1, centroids, nullptr)), kInvalid);
  EXPECT_TRUE(GpuUpdateCentroids(nullptr, 0, 4, nullptr, 2, centroids, nullptr).ok());
}

TEST(GpuKmeansTest, ReportsUnavailableWithoutDevice) {
  if (GpuAvailable()) GTEST_SKIP() << "a GPU is present: " << GpuDescription();
  const float x[4] = {};
  uint32_t label = 0;
  float centroid[4];
  EXPECT_EQ(GpuAssignTopM(x, 1, x, 1, 4, 1, nullptr, &label, nullptr).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(GpuUpdateCentroids(x, 1, 4, &label, 1, centroid, nullptr).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(GpuRetainPoints(x, 1, 4), nullptr);
}

// Host emulation of one point's scores as the tensor-core path forms them, and the exact fp32
// costs as the CUDA-core path forms them (fmaf over increasing j).
struct Emulated {
  std::vector<float> score;  // k: fl(|c'|^2 + b) - 2 <tf32(x'), tf32(c')>
  std::vector<float> exact;  // k: sum fmaf(x - c, x - c) + b
  double x_norm2 = 0;        // |x'|^2 (x' as rounded)
  float r = 0;               // |x'| in float, as the kernel computes it
};

class Tf32Emulation {
 public:
  Tf32Emulation(const std::vector<float>& c, size_t d, const std::vector<float>& bias)
      : c_(c), d_(d), k_(c.size() / d), bias_(bias), shift_(d), shifted_(c.size()), lane_(k_) {
    for (size_t j = 0; j < d; ++j) {
      double mean = 0;
      for (size_t i = 0; i < k_; ++i) mean += c[i * d + j];
      shift_[j] = static_cast<float>(mean / k_);
    }
    float bmax = 0;
    for (size_t i = 0; i < k_; ++i) {
      float norm = 0;
      for (size_t j = 0; j < d; ++j) {
        shifted_[i * d + j] = c[i * d + j] - shift_[j];
        norm = std::fma(shifted_[i * d + j], shifted_[i * d + j], norm);
      }
      lane_[i] = norm + bias[i];
      cmax_ = std::max(cmax_, std::sqrt(norm));
      bmax = std::max(bmax, std::fabs(bias[i]));
    }
    bound_ = Tf32ErrorBound::For(static_cast<uint32_t>(d), bmax);
  }

  Emulated Score(const float* x) const {
    Emulated e;
    std::vector<float> xs(d_);
    float norm = 0;
    for (size_t j = 0; j < d_; ++j) {
      xs[j] = x[j] - shift_[j];
      e.x_norm2 += double(xs[j]) * xs[j];
      norm = std::fma(xs[j], xs[j], norm);
      xs[j] = RoundToTf32(xs[j]);
    }
    e.r = std::sqrt(norm);
    for (size_t i = 0; i < k_; ++i) {
      float dot = 0, exact = 0;
      for (size_t j = 0; j < d_; ++j) {
        dot = std::fma(xs[j], RoundToTf32(shifted_[i * d_ + j]), dot);
        const float diff = x[j] - c_[i * d_ + j];
        exact = std::fma(diff, diff, exact);
      }
      e.score.push_back(std::fma(-2.0f, dot, lane_[i]));
      e.exact.push_back(exact + bias_[i]);
    }
    return e;
  }

  float Bound(const Emulated& e) const { return bound_.ForPoint(e.r, cmax_); }

 private:
  const std::vector<float>& c_;
  size_t d_, k_;
  const std::vector<float>& bias_;
  std::vector<float> shift_, shifted_, lane_;
  float cmax_ = 0;
  Tf32ErrorBound bound_;
};

// The m best of `cost` by (cost, index).
std::vector<uint32_t> TopM(const std::vector<float>& cost, size_t m) {
  std::vector<uint32_t> ids(cost.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint32_t>(i);
  std::partial_sort(ids.begin(), ids.begin() + m, ids.end(), [&](uint32_t a, uint32_t b) {
    return cost[a] < cost[b] || (cost[a] == cost[b] && a < b);
  });
  ids.resize(m);
  return ids;
}

struct BoundCase {
  std::string data;
  size_t n, d, k;
};

std::vector<float> Data(const std::string& kind, size_t n, size_t d, std::mt19937& rng) {
  if (kind == "bytes+1000") return kmeans_testing::OffsetBytes(n, d, rng);
  if (kind == "unit") return kmeans_testing::UnitNorm(n, d, rng);
  if (kind == "mixture") return kmeans_testing::Mixture(n, d, 9, rng);
  return kmeans_testing::Gaussian(n, d, rng, 5.0f);
}

// Every (point, centroid) score, shifted by the point's constant |x'|^2, lies within the bound
// of the exact fp32 cost; and RefineKernel's rule (re-score the kept candidates within twice
// the bound of the m-th score when the list ends beyond that, else rescan all centroids
// exactly) gives exactly the exact path's labels.
TEST(GpuKmeansTest, Tf32BoundAndRecheckRuleHoldOnEmulatedScores) {
  std::mt19937 rng(base::TestSeed());
  for (const BoundCase& c : {BoundCase{"gaussian+5", 300, 128, 64},
                             {"bytes+1000", 300, 96, 48},
                             {"unit", 200, 768, 40},
                             {"mixture", 400, 33, 100}}) {
    const std::vector<float> x = Data(c.data, c.n, c.d, rng);
    std::vector<float> cent(x.begin(), x.begin() + c.k * c.d);         // rivals: data points ...
    for (float& v : cent) v += static_cast<float>(rng() % 5) * 0.01f;  // ... nudged
    for (bool with_bias : {false, true}) {
      std::vector<float> bias(c.k, 0.0f);
      if (with_bias) {
        for (float& b : bias) b = static_cast<float>(rng() % 100) * 0.01f * c.d;
      }
      const Tf32Emulation emu(cent, c.d, bias);
      size_t flagged = 0;
      double worst = 0;  // largest error / bound
      for (size_t i = 0; i < c.n; ++i) {
        const Emulated e = emu.Score(&x[i * c.d]);
        const float bound = emu.Bound(e);
        for (size_t j = 0; j < c.k; ++j) {
          const double error = std::fabs(e.score[j] + e.x_norm2 - e.exact[j]);
          worst = std::max(worst, error / bound);
          ASSERT_LE(error, bound) << c.data << " point " << i << " centroid " << j;
        }
        for (size_t m : {size_t{1}, size_t{4}, size_t{8}}) {
          // As RefineKernel with 32 kept (k-means keeps 32, top-m lists 128): rivals up to thr
          // re-scored exactly.
          const std::vector<uint32_t> list = TopM(e.score, 32);
          const float thr = e.score[list[m - 1]] + 2 * bound;
          std::vector<uint32_t> got;
          if (e.score[list.back()] > thr) {
            std::vector<float> rescored(c.k, INFINITY);
            for (uint32_t id : list) {
              if (e.score[id] <= thr) rescored[id] = e.exact[id];
            }
            got = TopM(rescored, m);
          } else {
            ++flagged;
            got = TopM(e.exact, m);
          }
          ASSERT_EQ(got, TopM(e.exact, m)) << c.data << " point " << i << " m " << m;
        }
      }
      std::cout << c.data << (with_bias ? " +bias" : "") << ": worst error " << worst
                << " of the bound, " << 100.0 * flagged / (3 * c.n) << "% need a full exact scan\n";
    }
  }
}

}  // namespace
}  // namespace shoal::index::gpu

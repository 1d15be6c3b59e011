// Test helpers shared by kmeans_test.cc (CPU backend) and gpu/gpu_kmeans_test.cc (CUDA
// backend): seeded inputs and checks of a ClusteringBackend against a float64 reference.
#ifndef SHOAL_INDEX_CLUSTERING_KMEANS_TESTING_H_
#define SHOAL_INDEX_CLUSTERING_KMEANS_TESTING_H_

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "index/clustering/kmeans.h"

namespace shoal::index::kmeans_testing {

inline std::vector<float> Gaussian(size_t n, size_t d, std::mt19937& rng, float offset = 0) {
  std::normal_distribution<float> g(0, 1);
  std::vector<float> v(n * d);
  for (float& x : v) x = offset + g(rng);
  return v;
}

// n points around `clusters` random centres (spread 10), noise sigma 1.
inline std::vector<float> Mixture(size_t n, size_t d, size_t clusters, std::mt19937& rng) {
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

// uint8-valued coordinates plus a large offset: ||c||^2 - 2<x,c> cancels badly unshifted.
inline std::vector<float> OffsetBytes(size_t n, size_t d, std::mt19937& rng, float offset = 1000) {
  std::vector<float> v(n * d);
  for (float& x : v) x = offset + static_cast<float>(rng() % 256);
  return v;
}

inline std::vector<float> UnitNorm(size_t n, size_t d, std::mt19937& rng) {
  std::vector<float> v = Gaussian(n, d, rng);
  for (size_t i = 0; i < n; ++i) {
    double norm = 0;
    for (size_t j = 0; j < d; ++j) norm += double(v[i * d + j]) * v[i * d + j];
    for (size_t j = 0; j < d; ++j)
      v[i * d + j] = static_cast<float>(v[i * d + j] / std::sqrt(norm));
  }
  return v;
}

inline double Dist64(const float* a, const float* b, size_t d) {
  double s = 0;
  for (size_t j = 0; j < d; ++j) s += (double(a[j]) - b[j]) * (double(a[j]) - b[j]);
  return s;
}

// Checks AssignTopM against a float64 brute force: at every rank the returned centroid's cost
// (distance + bias) equals the reference's within a relative bound (so a label differs from
// the reference's only where the exact costs are that close), the returned distance is its
// own exact distance within that bound, labels are distinct, and the objective (sum of the
// rank-0 costs) is within 1e-5 relative of the reference's. Returns the mismatched labels.
inline size_t ExpectMatchesReference(ClusteringBackend& backend, const std::vector<float>& x,
                                     const std::vector<float>& c, size_t d, size_t m,
                                     const float* bias) {
  const size_t n = x.size() / d, k = c.size() / d;
  std::vector<uint32_t> labels(n * m, 0xDEADBEEF);  // poisoned: every entry must be written
  std::vector<float> dists(n * m, -1.0f);
  const absl::Status status =
      backend.AssignTopM(x.data(), n, c.data(), k, d, m, bias, labels.data(), dists.data());
  EXPECT_TRUE(status.ok()) << status;
  if (!status.ok()) return n * m;
  size_t mismatched = 0;
  double objective = 0, ref_objective = 0;
  std::vector<std::pair<double, uint32_t>> ref(k);
  for (size_t i = 0; i < n; ++i) {
    double scale = 0;
    for (size_t j = 0; j < k; ++j) {
      const double dist = Dist64(&x[i * d], &c[j * d], d);
      ref[j] = {dist + (bias != nullptr ? bias[j] : 0.0), static_cast<uint32_t>(j)};
      scale = std::max(scale, dist + (bias != nullptr ? std::fabs(bias[j]) : 0.0));
    }
    std::sort(ref.begin(), ref.end());
    const double tol = 1e-5 * (scale + 1e-3);
    for (size_t r = 0; r < m; ++r) {
      const uint32_t got = labels[i * m + r];
      if (got >= k) {
        ADD_FAILURE() << "point " << i << " rank " << r << " label " << got;
        return n * m;
      }
      const double got_dist = Dist64(&x[i * d], &c[got * d], d);
      const double got_cost = got_dist + (bias != nullptr ? bias[got] : 0.0);
      if (std::fabs(got_cost - ref[r].first) > tol ||
          std::fabs(dists[i * m + r] - got_dist) > tol || (r > 0 && got == labels[i * m + r - 1])) {
        ADD_FAILURE() << "point " << i << " rank " << r << ": label " << got << " cost " << got_cost
                      << " distance " << dists[i * m + r] << " (exact " << got_dist
                      << "); reference label " << ref[r].second << " cost " << ref[r].first;
        return n * m;
      }
      mismatched += got != ref[r].second;
    }
    // In cost terms (distance + bias): a near-tie may pick a label whose distance differs by
    // the bias difference.
    objective += dists[i * m] + (bias != nullptr ? bias[labels[i * m]] : 0.0);
    ref_objective += ref[0].first;
  }
  EXPECT_NEAR(objective, ref_objective, 1e-5 * ref_objective + 1e-6);
  return mismatched;
}

// UpdateCentroids against float64 means: non-empty clusters within 1e-6 relative (of the
// cluster's coordinate scale), empty ones untouched, sizes exact.
inline void ExpectUpdateMatchesReference(ClusteringBackend& backend, const std::vector<float>& x,
                                         size_t d, const std::vector<uint32_t>& labels, size_t k) {
  const size_t n = x.size() / d;
  std::vector<double> sums(k * d, 0.0);
  std::vector<uint32_t> counts(k, 0);
  for (size_t i = 0; i < n; ++i) {
    ++counts[labels[i]];
    for (size_t j = 0; j < d; ++j) sums[labels[i] * d + j] += x[i * d + j];
  }
  std::vector<float> centroids(k * d, 12345.0f);
  std::vector<uint32_t> sizes(k, 777);
  ASSERT_TRUE(
      backend.UpdateCentroids(x.data(), n, d, labels.data(), k, centroids.data(), sizes.data())
          .ok());
  EXPECT_EQ(sizes, counts);
  for (size_t c = 0; c < k; ++c) {
    for (size_t j = 0; j < d; ++j) {
      const float got = centroids[c * d + j];
      if (counts[c] == 0) {
        ASSERT_EQ(got, 12345.0f) << "empty cluster " << c << " changed";
        continue;
      }
      const double want = sums[c * d + j] / counts[c];
      ASSERT_NEAR(got, want, 1e-6 * (std::fabs(want) + 1)) << "cluster " << c << " dim " << j;
    }
  }
}

}  // namespace shoal::index::kmeans_testing

#endif  // SHOAL_INDEX_CLUSTERING_KMEANS_TESTING_H_

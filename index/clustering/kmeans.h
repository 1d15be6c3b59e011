// Balanced k-means on the CPU or a CUDA GPU behind one seam, ClusteringBackend.
//
//   auto backend = shoal::index::MakeDefaultClusteringBackend(/*threads=*/0);
//   shoal::index::KMeansOptions options;
//   options.k = 1024;
//   SHOAL_ASSIGN_OR_RETURN(shoal::index::KMeansResult r,
//                          shoal::index::KMeans(*backend, x, n, d, options));
//   // r.centroids (k x d), r.labels (n), r.sizes (k)
//
// The hot loop is ClusteringBackend::AssignTopM: for every point the m nearest centroids by
// squared L2 plus a per-centroid bias, with the distance computation fused into a running
// top-m (the n x k matrix never exists). The CPU backend uses a register-blocked AVX-512
// kernel ranking by ||c||^2 - 2<x,c> + bias over L2-resident centroid tiles, then re-scores
// its few candidates with the exact kernel; AVX2/scalar CPUs (or SHOAL_CPU=avx2|scalar) take a
// plain per-pair scan with the same results up to float rounding. The CUDA backend
// (index/clustering/gpu/gpu_kmeans.h) ranks on TF32 tensor cores and re-scores near-ties in exact
// fp32.
//
// The balance penalty (SPANN): assignment cost = squared distance + lambda * size, where size
// is the cluster's size in the previous iteration, so assignment stays parallel.
#ifndef SHOAL_INDEX_CLUSTERING_KMEANS_H_
#define SHOAL_INDEX_CLUSTERING_KMEANS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shoal::index {

struct KMeansOptions {
  uint32_t k = 0;
  uint32_t iterations = 10;
  uint64_t seed = 1;
  // Balance penalty: assignment cost = squared distance + lambda * current size of the cluster
  // (the size counted over the training sample). < 0: choose lambda automatically to minimise
  // the spread (std/mean) of cluster sizes (SPANN's search over a few candidate values, tried
  // on the sample for a few iterations each); 0: plain k-means.
  float lambda = -1;
  uint32_t threads = 0;   // 0 = hardware concurrency (k-means itself is sequential; the
                          // backend's own thread count drives assignment)
  size_t max_sample = 0;  // train on at most this many points (0 = 256 * k), then assign all
};

struct KMeansResult {
  std::vector<float> centroids;  // k x d, row-major
  std::vector<uint32_t> labels;  // n (final assignment of every input point, with the penalty)
  std::vector<uint32_t> sizes;   // k
  double objective = 0;          // sum of squared distances to assigned centroids (no penalty)
  float lambda = 0;              // penalty used
};

// The seam between index build and the hardware: the CPU (AVX-512 fused kernel) or a CUDA
// device (index/clustering/gpu).
class ClusteringBackend {
 public:
  virtual ~ClusteringBackend() = default;
  virtual std::string name() const = 0;  // "cpu-avx512", "cpu-avx2", "cpu-scalar", "cuda"
  // For each of n points, the m nearest of k centroids by squared L2 + bias[c] (bias may be
  // nullptr), closest first, ties to the lower centroid index; labels and distances hold n*m
  // (distances WITHOUT the bias). Fused: never materialises the n x k matrix. Thread-safe.
  // Errors: InvalidArgument for k == 0, d == 0, m == 0, m > k, k >= 2^32 or a null pointer
  // with n > 0. n == 0 is a no-op.
  // NaN/Inf in points, centroids or bias: InvalidArgument naming the row ("points[i]").
  virtual absl::Status AssignTopM(const float* points, size_t n, const float* centroids, size_t k,
                                  size_t d, size_t m, const float* bias, uint32_t* labels,
                                  float* distances) = 0;

  // centroids[c] (k x d) = mean of the points labelled c; sizes[c] = their count (sizes may be
  // null). Centroids of empty clusters are left as they are. Bitwise repeatable for the same
  // input: fixed summation order, no float atomics (the default sums in double in point
  // order). Errors: InvalidArgument (k == 0, d == 0, a null pointer with n > 0, "labels[i]"
  // >= k). Thread-safe.
  virtual absl::Status UpdateCentroids(const float* points, size_t n, size_t d,
                                       const uint32_t* labels, size_t k, float* centroids,
                                       uint32_t* sizes);

  // True when AssignTopM of this shape runs on an accelerator, where an exact top-m over all k
  // centroids costs less than a tree descent per point on the CPU (BuildSpann's assignment of
  // every vector to its nearest leaves then asks the backend). False for the CPU backend.
  virtual bool AssignsOnDevice(size_t n, size_t k, size_t d, size_t m) const { return false; }

  // A hint: `points` (n x d) will be passed unchanged to the calls that follow until the
  // returned handle is dropped, so a GPU backend may keep them in device memory. Null when
  // nothing is kept (the default).
  virtual std::shared_ptr<const void> RetainPoints(const float* points, size_t n, size_t d) {
    return nullptr;
  }
};

// The CPU backend at the best kernel level base::Cpu() allows. threads = 0 uses hardware
// concurrency; small calls use fewer threads.
std::unique_ptr<ClusteringBackend> MakeCpuClusteringBackend(uint32_t threads);
// The GPU backend when a device is present (index/clustering/gpu), the CPU one otherwise. The GPU
// backend runs assignment (m <= gpu::kGpuMaxTopM) and the centroid update on the device and hands
// calls too small to pay for a launch (and larger m) to the CPU backend.
std::unique_ptr<ClusteringBackend> MakeDefaultClusteringBackend(uint32_t threads);
// The GPU backend whatever the device count (its calls then fail with Unavailable); for
// benchmarks and tests that want the device path explicitly.
std::unique_ptr<ClusteringBackend> MakeGpuClusteringBackend(uint32_t threads);

// Seeded, deterministic for a given (input, options, backend) and independent of the thread
// count: k-means++ seeding from (a subsample of) the sample when affordable, random otherwise;
// Lloyd iterations with the balance penalty; empty clusters re-seeded deterministically with
// the farthest point of the largest cluster. Errors: InvalidArgument naming the field: k == 0
// ("k"), k > n, d == 0 ("d"), x null, NaN/Inf in x ("points[i][j]"); backend errors pass
// through. Thread-safe (no shared state besides the backend, which is thread-safe).
absl::StatusOr<KMeansResult> KMeans(ClusteringBackend& backend, const float* x, size_t n, size_t d,
                                    const KMeansOptions& options);

}  // namespace shoal::index

#endif  // SHOAL_INDEX_CLUSTERING_KMEANS_H_

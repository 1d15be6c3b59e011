// GPU k-means building blocks on a CUDA device (after Flash-KMeans): fused top-m assignment on
// tensor cores, a deterministic centroid update, and streaming of point sets larger than the
// device memory budget. This header is plain C++ (no CUDA types); when Shoal is built without
// CUDA the same functions exist and report that no GPU is available, so callers never need #if.
//
//   if (shoal::index::gpu::GpuAvailable()) {
//     auto keep = shoal::index::gpu::GpuRetainPoints(points, n, d, {});  // optional
//     SHOAL_RETURN_IF_ERROR(shoal::index::gpu::GpuAssignTopM(points, n, centroids, k, d, 1,
//                                                            nullptr, labels, dists, {}));
//     SHOAL_RETURN_IF_ERROR(shoal::index::gpu::GpuUpdateCentroids(points, n, d, labels, k,
//                                                                 centroids, sizes, {}));
//   }
//
// Assignment, chunk by chunk of points (at most 1 GiB of dot products at once): cuBLAS's TF32
// SGEMM (tensor cores) gives the dot products of x' and c' (points and centroids shifted by the
// centroids' mean, so data with a large offset does not cancel); a scan finds each point's m-th
// best approximate score = |c'|^2 + bias[c] - 2<x',c'> and lists every centroid within twice
// the TF32 error bound of it; those are re-scored in exact fp32. A point with more such rivals
// than its list holds is re-assigned by an exact fp32 scan over all centroids, so the result
// equals the exact fp32 path's (GpuPrecision::kFp32, also used below sm_80). cuBLAS is loaded
// on first use; without it a fused kernel (128 x 64 tiles, WMMA) ranks the centroids instead.
// Update: labels are counting-sorted (stable radix sort) into per-cluster segments, reduced in
// a fixed order in double, so centroids are bitwise repeatable (no float atomics).
//
// Memory: an assignment's chunk buffers are kept for the next call once it returns (at most
// min(4 GiB, 1/8 of the device) of device memory and 1 GiB pinned, freed when an allocation
// fails): allocating them each time cost more than a 1M-point assignment's kernels.
//
// Thread safety: every function may be called concurrently (each call uses its own device
// buffers and streams on the calling thread's current device).
#ifndef SHOAL_INDEX_CLUSTERING_GPU_GPU_KMEANS_H_
#define SHOAL_INDEX_CLUSTERING_GPU_GPU_KMEANS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"

namespace shoal::index::gpu {

// Largest m GpuAssignTopM takes (the top list lives in registers).
inline constexpr size_t kGpuMaxTopM = 31;

enum class GpuPrecision {
  kTf32,  // tensor cores + exact fp32 recheck of points near a tie (sm_80+; else kFp32)
  kFp32,  // exact fp32 on CUDA cores throughout
};

struct GpuOptions {
  GpuPrecision precision = GpuPrecision::kTf32;
  // Device bytes the point chunks (and their per-point scratch) may take at once. Point sets
  // that do not fit stream in chunks from pinned host memory, `streams` chunks in flight
  // (copy of one overlapping compute of another). 0 = half the device's free memory.
  size_t device_budget_bytes = 0;
  int streams = 3;  // 1..3
};

// True if a CUDA device is usable. Never crashes or throws without a driver, without a
// device, or when built without CUDA; it then returns false.
bool GpuAvailable();
// One line about device 0, e.g. "NVIDIA H100 80GB HBM3, sm_90, 132 SMs, 79 GiB", or why none.
std::string GpuDescription();

// For each of n points (row-major, d floats, host memory) the m nearest of k centroids by
// squared L2 + bias[c] (bias may be null), closest first, ties to the lower index; labels and
// distances (may be null) get n*m entries, distances without the bias, in exact fp32.
// Errors: InvalidArgument (k == 0 or >= 2^32-1, d == 0, m == 0, m > k, m > kGpuMaxTopM, a
// null pointer with n > 0, options out of range, NaN/Inf in "points[i]", "centroids[c]" or
// "bias[c]"); Unavailable (no device or built without CUDA); Internal (a CUDA call failed).
// n == 0 is a no-op.
absl::Status GpuAssignTopM(const float* points, size_t n, const float* centroids, size_t k,
                           size_t d, size_t m, const float* bias, uint32_t* labels,
                           float* distances, const GpuOptions& options = {});

// Nearest centroid only (m = 1, no bias). Same contract as GpuAssignTopM.
absl::Status GpuAssignNearest(const float* points, size_t n, const float* centroids, size_t k,
                              size_t dim, uint32_t* labels, float* distances);

// centroids[c] = mean of the points labelled c (sums in double, in row order within a chunk of
// the stream, chunks in order), sizes[c] = their count (sizes may be null); centroids of empty
// clusters are left as they are. Bitwise repeatable for the same input and options.
// Errors: InvalidArgument (k == 0, d == 0, null pointer with n > 0, "labels[i]" >= k);
// Unavailable; Internal.
absl::Status GpuUpdateCentroids(const float* points, size_t n, size_t d, const uint32_t* labels,
                                size_t k, float* centroids, uint32_t* sizes,
                                const GpuOptions& options = {});

// Uploads points (n x d) once and keeps them on the device while the returned handle lives:
// GpuAssignTopM and GpuUpdateCentroids called with the same pointer, n and d then read the
// device copy instead of copying again. The caller must not change the points meanwhile.
// Returns null (not an error) when there is no device, the points exceed the budget, or they
// hold NaN/Inf (the calls then stream them, and report the bad row).
std::shared_ptr<const void> GpuRetainPoints(const float* points, size_t n, size_t d,
                                            const GpuOptions& options = {});

}  // namespace shoal::index::gpu

#endif  // SHOAL_INDEX_CLUSTERING_GPU_GPU_KMEANS_H_

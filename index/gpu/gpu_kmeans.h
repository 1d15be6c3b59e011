// GPU k-means backend, first piece: fused nearest-centroid assignment on a CUDA device.
// This header is plain C++ (no CUDA types); when Shoal is built without CUDA the same functions
// exist and report that no GPU is available, so callers never need #if.
//
//   if (shoal::index::gpu::GpuAvailable()) {
//     absl::Status s = shoal::index::gpu::GpuAssignNearest(points, n, centroids, k, dim,
//                                                          labels.data(), dists.data());
//   }
//
// Thread safety: both functions may be called concurrently (each call uses its own device
// buffers on the current device of the calling thread).
#ifndef SHOAL_INDEX_GPU_GPU_KMEANS_H_
#define SHOAL_INDEX_GPU_GPU_KMEANS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

namespace shoal::index::gpu {

// True if a CUDA device is usable (device count > 0). Never crashes or throws without a
// driver, without a device, or when built without CUDA; it then returns false.
bool GpuAvailable();

// For each of the `n` points (row-major, `dim` floats each, host memory) finds the nearest of
// the `k` centroids (row-major, host memory) by squared L2: labels[i] gets its index (ties go
// to the lowest index) and, if `distances` is not null, distances[i] the squared distance.
// The distance computation and the argmin are fused on the device: no n*k matrix is formed.
// Errors: InvalidArgument (k == 0, k > 2^32-1, dim == 0, or a null pointer with n > 0);
// Unavailable (no device, no driver, built without CUDA); Internal (a CUDA call failed).
// n == 0 is a no-op that returns OK.
absl::Status GpuAssignNearest(const float* points, size_t n, const float* centroids, size_t k,
                              size_t dim, uint32_t* labels, float* distances);

}  // namespace shoal::index::gpu

#endif  // SHOAL_INDEX_GPU_GPU_KMEANS_H_

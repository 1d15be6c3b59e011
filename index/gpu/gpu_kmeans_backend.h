// Private to index/gpu: the device side of gpu_kmeans.h, implemented by gpu_kmeans.cu (CUDA)
// or gpu_kmeans_nocuda.cc (no CUDA). Kept free of absl and CUDA types so nvcc compiles only
// CUDA code and g++ only sees plain C++.
#ifndef SHOAL_INDEX_GPU_GPU_KMEANS_BACKEND_H_
#define SHOAL_INDEX_GPU_GPU_KMEANS_BACKEND_H_

#include <cstddef>
#include <cstdint>

namespace shoal::index::gpu::backend {

// Whether this build has a CUDA backend at all.
bool Compiled();
// Number of CUDA devices; 0 when there is no driver or device (errors are swallowed).
int DeviceCount();
// Runs the fused assignment; arguments are already validated (n > 0, k > 0, dim > 0).
// Returns nullptr on success, else a static description of the failed CUDA call.
const char* AssignNearest(const float* points, size_t n, const float* centroids, size_t k,
                          size_t dim, uint32_t* labels, float* distances);

}  // namespace shoal::index::gpu::backend

#endif  // SHOAL_INDEX_GPU_GPU_KMEANS_BACKEND_H_

// Private to index/clustering/gpu: the device side of gpu_kmeans.h, implemented by the .cu files
// (CUDA) or gpu_kmeans_nocuda.cc (no CUDA). Kept free of absl and CUDA types so nvcc compiles only
// CUDA code and g++ only sees plain C++. Arguments arrive validated (n > 0, k > 0, d > 0,
// 1 <= m <= min(k, kGpuMaxTopM), finite centroids and bias, non-null pointers).
#ifndef SHOAL_INDEX_CLUSTERING_GPU_GPU_KMEANS_BACKEND_H_
#define SHOAL_INDEX_CLUSTERING_GPU_GPU_KMEANS_BACKEND_H_

#include <cstddef>
#include <cstdint>

namespace shoal::index::gpu::backend {

// Outcome of a device call: error is null on success, else a static description of the failed
// CUDA call; bad_row >= 0 names the first input row found invalid (NaN/Inf point, label >= k).
struct Outcome {
  const char* error = nullptr;
  int64_t bad_row = -1;
};

struct Config {
  bool tf32 = true;
  size_t budget_bytes = 0;  // 0 = half the free device memory
  int streams = 3;
};

// Whether this build has a CUDA backend at all.
bool Compiled();
// Number of CUDA devices; 0 when there is no driver or device (errors are swallowed).
int DeviceCount();
// Free-form description of device 0.
const char* Describe();

Outcome AssignTopM(const float* points, size_t n, const float* centroids, size_t k, size_t d,
                   size_t m, const float* bias, uint32_t* labels, float* distances,
                   const Config& config);

Outcome UpdateCentroids(const float* points, size_t n, size_t d, const uint32_t* labels, size_t k,
                        float* centroids, uint32_t* sizes, const Config& config);

// A device copy of host points, registered by host pointer until Release. Null when the points
// do not fit the budget, hold NaN/Inf, or a CUDA call fails.
void* Retain(const float* points, size_t n, size_t d, const Config& config);
void Release(void* handle);

}  // namespace shoal::index::gpu::backend

#endif  // SHOAL_INDEX_CLUSTERING_GPU_GPU_KMEANS_BACKEND_H_

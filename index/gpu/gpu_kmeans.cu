// CUDA backend of gpu_kmeans.h: fused distance + argmin (after Flash-KMeans' first idea).
//
// One thread owns one point. A block of kThreads points walks the centroids in tiles of
// kTileCentroids; for each tile it streams the dimensions in chunks of kTileDims through shared
// memory (the points' chunk and the centroids' chunk), keeps the kTileCentroids partial
// distances in registers, and folds the finished tile into a running (best, argmin) pair. The
// n*k distance matrix never exists. Centroids are visited in increasing index and replaced only
// on a strictly smaller distance, so ties go to the lowest index.
//
// Not yet: tensor cores, streaming from pinned memory, top-m for replication (later issues).
#include <cuda_runtime.h>

#include <cmath>

#include "index/gpu/gpu_kmeans_backend.h"

namespace shoal::index::gpu::backend {
namespace {

constexpr int kThreads = 128;
constexpr int kTileCentroids = 32;
constexpr int kTileDims = 32;

__global__ void AssignNearestKernel(const float* __restrict__ points, size_t n,
                                    const float* __restrict__ centroids, size_t k, size_t dim,
                                    uint32_t* __restrict__ labels, float* __restrict__ distances) {
  __shared__ float point_tile[kThreads][kTileDims + 1];  // +1: no bank conflicts per row
  __shared__ float centroid_tile[kTileCentroids][kTileDims];
  const size_t first = static_cast<size_t>(blockIdx.x) * kThreads;
  const int t = threadIdx.x;
  float best = INFINITY;
  uint32_t best_index = 0;
  for (size_t c0 = 0; c0 < k; c0 += kTileCentroids) {
    float acc[kTileCentroids];
#pragma unroll
    for (int c = 0; c < kTileCentroids; ++c) acc[c] = 0.0f;
    for (size_t d0 = 0; d0 < dim; d0 += kTileDims) {
      __syncthreads();  // the previous chunk is consumed
      // Consecutive threads read consecutive dimensions: coalesced loads. Padding reads 0 on
      // both sides, so it adds nothing to a distance.
      for (int i = t; i < kThreads * kTileDims; i += kThreads) {
        const size_t row = first + i / kTileDims, d = d0 + i % kTileDims;
        point_tile[i / kTileDims][i % kTileDims] = row < n && d < dim ? points[row * dim + d] : 0;
      }
      for (int i = t; i < kTileCentroids * kTileDims; i += kThreads) {
        const size_t c = c0 + i / kTileDims, d = d0 + i % kTileDims;
        centroid_tile[i / kTileDims][i % kTileDims] = c < k && d < dim ? centroids[c * dim + d] : 0;
      }
      __syncthreads();
#pragma unroll 4
      for (int d = 0; d < kTileDims; ++d) {
        const float x = point_tile[t][d];
#pragma unroll
        for (int c = 0; c < kTileCentroids; ++c) {  // same address across the warp: broadcast
          const float diff = x - centroid_tile[c][d];
          acc[c] = fmaf(diff, diff, acc[c]);
        }
      }
    }
#pragma unroll
    for (int c = 0; c < kTileCentroids; ++c) {
      if (c0 + c < k && acc[c] < best) {
        best = acc[c];
        best_index = static_cast<uint32_t>(c0 + c);
      }
    }
  }
  const size_t row = first + t;
  if (row < n) {
    labels[row] = best_index;
    if (distances != nullptr) distances[row] = best;
  }
}

// Owns one device allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  cudaError_t Allocate(size_t bytes) { return cudaMalloc(&ptr_, bytes); }
  template <typename T>
  T* get() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

}  // namespace

bool Compiled() { return true; }

int DeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  return count;
}

#define SHOAL_CUDA_TRY(call)                        \
  do {                                              \
    const cudaError_t shoal_cuda_error_ = (call);   \
    if (shoal_cuda_error_ != cudaSuccess) {         \
      return cudaGetErrorString(shoal_cuda_error_); \
    }                                               \
  } while (false)

const char* AssignNearest(const float* points, size_t n, const float* centroids, size_t k,
                          size_t dim, uint32_t* labels, float* distances) {
  DeviceBuffer d_points, d_centroids, d_labels, d_distances;
  SHOAL_CUDA_TRY(d_points.Allocate(n * dim * sizeof(float)));
  SHOAL_CUDA_TRY(d_centroids.Allocate(k * dim * sizeof(float)));
  SHOAL_CUDA_TRY(d_labels.Allocate(n * sizeof(uint32_t)));
  SHOAL_CUDA_TRY(d_distances.Allocate(n * sizeof(float)));
  SHOAL_CUDA_TRY(
      cudaMemcpy(d_points.get<float>(), points, n * dim * sizeof(float), cudaMemcpyHostToDevice));
  SHOAL_CUDA_TRY(cudaMemcpy(d_centroids.get<float>(), centroids, k * dim * sizeof(float),
                            cudaMemcpyHostToDevice));
  const size_t blocks = (n + kThreads - 1) / kThreads;
  AssignNearestKernel<<<static_cast<unsigned>(blocks), kThreads>>>(
      d_points.get<float>(), n, d_centroids.get<float>(), k, dim, d_labels.get<uint32_t>(),
      d_distances.get<float>());
  SHOAL_CUDA_TRY(cudaGetLastError());
  SHOAL_CUDA_TRY(
      cudaMemcpy(labels, d_labels.get<uint32_t>(), n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  if (distances != nullptr) {
    SHOAL_CUDA_TRY(
        cudaMemcpy(distances, d_distances.get<float>(), n * sizeof(float), cudaMemcpyDeviceToHost));
  }
  return nullptr;
}

#undef SHOAL_CUDA_TRY

}  // namespace shoal::index::gpu::backend

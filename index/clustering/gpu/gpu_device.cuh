// Private to index/clustering/gpu's .cu files: RAII device/pinned buffers, the CUDA error macro,
// the register-resident top list, and the registry of retained point sets.
#ifndef SHOAL_INDEX_CLUSTERING_GPU_GPU_DEVICE_CUH_
#define SHOAL_INDEX_CLUSTERING_GPU_GPU_DEVICE_CUH_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "index/clustering/gpu/gpu_kmeans_backend.h"

// Returns Outcome{error string} from the enclosing function when a CUDA call fails.
#define SHOAL_CUDA_TRY(call)                                     \
  do {                                                           \
    const cudaError_t shoal_cuda_error_ = (call);                \
    if (shoal_cuda_error_ != cudaSuccess) {                      \
      return Outcome{cudaGetErrorString(shoal_cuda_error_), -1}; \
    }                                                            \
  } while (false)

namespace shoal::index::gpu::backend {

constexpr uint32_t kNoLabel = 0xFFFFFFFFu;

// Idle allocations kept for later calls: cudaMalloc/cudaFree and cudaMallocHost/cudaFreeHost
// of an assignment's chunk buffers cost more than a small assignment's kernels. Take returns a
// kept block of `bytes` to twice that on the current device (or pinned host memory), else a new
// one; when the device is out of memory the kept blocks are freed and the allocation retried.
// Give keeps a block no work is using any more, up to min(4 GiB, 1/8 of the device) of device
// memory and 1 GiB pinned, freeing the oldest beyond that.
void* TakeCached(bool pinned, size_t bytes, cudaError_t* error);
void GiveCached(bool pinned, void* ptr, size_t bytes);

// One device allocation. AllocateCached draws on the kept blocks and gives its block back to
// them when destroyed: only for buffers whose work is finished by then.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Free(); }
  cudaError_t Allocate(size_t bytes) {
    Free();
    return cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes);
  }
  cudaError_t AllocateCached(size_t bytes) {
    Free();
    cudaError_t error = cudaSuccess;
    ptr_ = TakeCached(false, bytes == 0 ? 1 : bytes, &error);
    cached_bytes_ = bytes == 0 ? 1 : bytes;
    return error;
  }
  template <typename T>
  T* get() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void Free() {
    if (ptr_ != nullptr && cached_bytes_ != 0) {
      GiveCached(false, ptr_, cached_bytes_);
    } else if (ptr_ != nullptr) {
      cudaFree(ptr_);
    }
    ptr_ = nullptr;
    cached_bytes_ = 0;
  }

  void* ptr_ = nullptr;
  size_t cached_bytes_ = 0;  // 0: from cudaMalloc
};

// One page-locked host allocation (the staging area of streamed copies), from the kept blocks.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (ptr_ != nullptr) GiveCached(true, ptr_, bytes_);
  }
  cudaError_t Allocate(size_t bytes) {
    if (ptr_ != nullptr) GiveCached(true, ptr_, bytes_);
    cudaError_t error = cudaSuccess;
    bytes_ = bytes == 0 ? 1 : bytes;
    ptr_ = TakeCached(true, bytes_, &error);
    return error;
  }
  template <typename T>
  T* get() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Owns a stream and an event.
class Stream {
 public:
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (event_ != nullptr) cudaEventDestroy(event_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  cudaError_t Create() {
    const cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    return e != cudaSuccess ? e : cudaEventCreateWithFlags(&event_, cudaEventDisableTiming);
  }
  cudaStream_t get() const { return stream_; }
  cudaEvent_t event() const { return event_; }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t event_ = nullptr;
};

// A running best list of KEEP (score, id) pairs in registers, sorted ascending by (score, id);
// every index is a compile-time constant after unrolling, so nothing spills to local memory
// by indexing. Ties go to the lower id whatever the order of offers.
template <int KEEP>
struct TopList {
  float score[KEEP];
  uint32_t id[KEEP];

  __device__ __forceinline__ void Init() {
#pragma unroll
    for (int j = 0; j < KEEP; ++j) {
      score[j] = __int_as_float(0x7f800000);  // +inf
      id[j] = kNoLabel;
    }
  }
  __device__ __forceinline__ void Offer(float s, uint32_t c) {
    if (!(s < score[KEEP - 1] || (s == score[KEEP - 1] && c < id[KEEP - 1]))) return;
    score[KEEP - 1] = s;
    id[KEEP - 1] = c;
#pragma unroll
    for (int j = KEEP - 1; j > 0; --j) {
      const bool up = score[j] < score[j - 1] || (score[j] == score[j - 1] && id[j] < id[j - 1]);
      if (up) {
        const float ts = score[j];
        score[j] = score[j - 1];
        score[j - 1] = ts;
        const uint32_t ti = id[j];
        id[j] = id[j - 1];
        id[j - 1] = ti;
      }
    }
  }
};

// Rows per chunk when `bytes_per_row` of device memory per row (over `slots` chunks in flight)
// must fit `budget` (0 = half the free device memory); at least 1, at most n.
size_t ChunkRows(size_t n, size_t bytes_per_row, int slots, size_t budget);

// The retained device copy of `points` (exact pointer, n and d), or null.
const float* FindRetained(const float* points, size_t n, size_t d);

// The lowest row of a rows x d device matrix holding NaN/Inf, plus `first_row`, folded by
// atomicMin into *bad (deterministic: a minimum). Launch on `stream`.
void LaunchFindNonFinite(const float* rows, size_t count, size_t d, uint64_t first_row,
                         unsigned long long* bad, cudaStream_t stream);

}  // namespace shoal::index::gpu::backend

#endif  // SHOAL_INDEX_CLUSTERING_GPU_GPU_DEVICE_CUH_

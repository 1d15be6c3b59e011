// Private to index/clustering/gpu's .cu files: cuBLAS's TF32 SGEMM for the assignment's dot
// products. cuBLAS is opened with dlopen on first use, so the processes that never cluster on a
// GPU (shoald serving queries, every test binary) do not map its ~600 MB of libraries; without
// it (not installed, or an older major version) the assignment falls back to its own kernel.
#ifndef SHOAL_INDEX_CLUSTERING_GPU_GPU_CUBLAS_CUH_
#define SHOAL_INDEX_CLUSTERING_GPU_GPU_CUBLAS_CUH_

#include <cuda_runtime.h>

namespace shoal::index::gpu::backend {

// A cuBLAS handle of the current device, taken from a process-wide pool and returned to it on
// destruction (handles are costly to create; a handle serves one thread at a time).
class CublasGemm {
 public:
  CublasGemm();  // ok() is false when cuBLAS cannot be loaded or a handle created
  ~CublasGemm();
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;

  bool ok() const { return handle_ != nullptr; }
  // C (m x n, column-major, leading dimension m) = A^T B on `stream`, on TF32 tensor cores with
  // fp32 accumulation, for A (k x m, column-major, leading dimension k: m rows of k floats) and
  // B (k x n, likewise). Inputs already rounded to TF32 are used exactly. Null or an error.
  const char* TransposedTimes(cudaStream_t stream, int m, int n, int k, const float* a,
                              const float* b, float* c) const;

 private:
  void* handle_ = nullptr;  // cublasHandle_t
  int device_ = 0;
};

}  // namespace shoal::index::gpu::backend

#endif  // SHOAL_INDEX_CLUSTERING_GPU_GPU_CUBLAS_CUH_

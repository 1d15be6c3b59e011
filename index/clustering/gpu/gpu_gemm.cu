// cuBLAS SGEMM timing for gpu_gemm.h: C (n x m, column-major) = B^T A on random device data,
// i.e. every one of m rows (length k) dotted with every one of n rows, as an assignment does.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <vector>

#include "index/clustering/gpu/gpu_gemm_backend.h"

namespace shoal::index::gpu::backend {
namespace {

__global__ void FillKernel(float* out, size_t count, unsigned seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    unsigned x = static_cast<unsigned>(i) * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    out[i] = static_cast<float>(x & 0xFFFF) / 65536.0f - 0.5f;
  }
}

// Frees everything it holds on every return path.
struct Resources {
  float *a = nullptr, *b = nullptr, *c = nullptr;
  cublasHandle_t handle = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  ~Resources() {
    if (start != nullptr) cudaEventDestroy(start);
    if (stop != nullptr) cudaEventDestroy(stop);
    if (handle != nullptr) cublasDestroy(handle);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
  }
};

}  // namespace

const char* GemmSeconds(size_t m, size_t n, size_t k, bool tf32, int repeats, double* seconds) {
  Resources r;
  if (cudaMalloc(&r.a, m * k * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&r.b, n * k * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&r.c, m * n * sizeof(float)) != cudaSuccess) {
    cudaGetLastError();
    return "cudaMalloc failed";
  }
  FillKernel<<<1024, 256>>>(r.a, m * k, 1u);
  FillKernel<<<1024, 256>>>(r.b, n * k, 2u);
  if (cublasCreate(&r.handle) != CUBLAS_STATUS_SUCCESS) return "cublasCreate failed";
  if (cublasSetMathMode(r.handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH) !=
      CUBLAS_STATUS_SUCCESS) {
    return "cublasSetMathMode failed";
  }
  if (cudaEventCreate(&r.start) != cudaSuccess || cudaEventCreate(&r.stop) != cudaSuccess) {
    return "cudaEventCreate failed";
  }
  const float alpha = 1.0f, beta = 0.0f;
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  double best = 0;
  for (int run = 0; run <= repeats; ++run) {  // run 0 warms up
    cudaEventRecord(r.start);
    // Column-major: B (k x n) transposed times A (k x m) = C (n x m).
    if (cublasSgemm(r.handle, CUBLAS_OP_T, CUBLAS_OP_N, ni, mi, ki, &alpha, r.b, ki, r.a, ki, &beta,
                    r.c, ni) != CUBLAS_STATUS_SUCCESS) {
      return "cublasSgemm failed";
    }
    cudaEventRecord(r.stop);
    if (cudaEventSynchronize(r.stop) != cudaSuccess) return "GEMM did not complete";
    float ms = 0;
    cudaEventElapsedTime(&ms, r.start, r.stop);
    if (run > 0 && (best == 0 || ms * 1e-3 < best)) best = ms * 1e-3;
  }
  *seconds = best;
  return nullptr;
}

}  // namespace shoal::index::gpu::backend

// The cuBLAS GEMM rate of an assignment-shaped product, for `shoal_bench kmeans` to compare the
// fused kernel against (library shoal_index_gpu_gemm: only benchmarks link cuBLAS).
//
//   absl::StatusOr<double> tflops = shoal::index::gpu::CublasGemmTflops(65536, 1024, 128, true);
#ifndef SHOAL_INDEX_CLUSTERING_GPU_GPU_GEMM_H_
#define SHOAL_INDEX_CLUSTERING_GPU_GPU_GEMM_H_

#include <cstddef>

#include "absl/status/statusor.h"

namespace shoal::index::gpu {

// TFLOP/s (2 m n k per product) of cublasSgemm computing the m x n dot products of m rows
// against n rows of length k, on device-resident random data, best of `repeats` timed runs
// after a warm-up; tf32 selects CUBLAS_TF32_TENSOR_OP_MATH, else pedantic fp32.
// Errors: InvalidArgument (a zero size or repeats < 1), Unavailable (no device / no CUDA),
// Internal (a CUDA or cuBLAS call failed, e.g. out of memory).
absl::StatusOr<double> CublasGemmTflops(size_t m, size_t n, size_t k, bool tf32, int repeats = 3);

}  // namespace shoal::index::gpu

#endif  // SHOAL_INDEX_CLUSTERING_GPU_GPU_GEMM_H_

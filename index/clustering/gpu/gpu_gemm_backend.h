// Private to index/clustering/gpu: the device half of gpu_gemm.h (gpu_gemm.cu or
// gpu_gemm_nocuda.cc).
#ifndef SHOAL_INDEX_CLUSTERING_GPU_GPU_GEMM_BACKEND_H_
#define SHOAL_INDEX_CLUSTERING_GPU_GPU_GEMM_BACKEND_H_

#include <cstddef>

namespace shoal::index::gpu::backend {

// Best seconds of one GEMM over `repeats` runs into *seconds; null on success, else a
// static description of what failed. Arguments are validated.
const char* GemmSeconds(size_t m, size_t n, size_t k, bool tf32, int repeats, double* seconds);

}  // namespace shoal::index::gpu::backend

#endif  // SHOAL_INDEX_CLUSTERING_GPU_GPU_GEMM_BACKEND_H_

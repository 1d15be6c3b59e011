// Without CUDA there is no cuBLAS; gpu_gemm.cc reports Unavailable before getting here.
#include "index/clustering/gpu/gpu_gemm_backend.h"

namespace shoal::index::gpu::backend {

const char* GemmSeconds(size_t, size_t, size_t, bool, int, double*) { return "built without CUDA"; }

}  // namespace shoal::index::gpu::backend

#include "index/clustering/gpu/gpu_gemm.h"

#include "absl/strings/str_cat.h"
#include "index/clustering/gpu/gpu_gemm_backend.h"
#include "index/clustering/gpu/gpu_kmeans.h"

namespace shoal::index::gpu {

absl::StatusOr<double> CublasGemmTflops(size_t m, size_t n, size_t k, bool tf32, int repeats) {
  if (m == 0 || n == 0 || k == 0) return absl::InvalidArgumentError("m, n, k: must be positive");
  if (repeats < 1) return absl::InvalidArgumentError("repeats: must be at least 1");
  if (!GpuAvailable()) return absl::UnavailableError(GpuDescription());
  double seconds = 0;
  if (const char* error = backend::GemmSeconds(m, n, k, tf32, repeats, &seconds);
      error != nullptr) {
    return absl::InternalError(absl::StrCat("CublasGemmTflops: ", error));
  }
  return 2.0 * static_cast<double>(m) * n * k / seconds / 1e12;
}

}  // namespace shoal::index::gpu

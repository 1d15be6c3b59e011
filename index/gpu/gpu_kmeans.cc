// Argument checks and Status conversion for gpu_kmeans.h; the device work is in the backend.
#include "index/gpu/gpu_kmeans.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "index/gpu/gpu_kmeans_backend.h"

namespace shoal::index::gpu {

bool GpuAvailable() { return backend::DeviceCount() > 0; }

absl::Status GpuAssignNearest(const float* points, size_t n, const float* centroids, size_t k,
                              size_t dim, uint32_t* labels, float* distances) {
  if (k == 0) return absl::InvalidArgumentError("k: need at least one centroid");
  if (k > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("k: ", k, " does not fit a uint32 label"));
  }
  if (dim == 0) return absl::InvalidArgumentError("dim: must be positive");
  if (n == 0) return absl::OkStatus();
  if (points == nullptr || centroids == nullptr || labels == nullptr) {
    return absl::InvalidArgumentError("points, centroids and labels must not be null");
  }
  if (!backend::Compiled()) return absl::UnavailableError("Shoal was built without CUDA");
  if (!GpuAvailable()) return absl::UnavailableError("no CUDA device");
  if (const char* error = backend::AssignNearest(points, n, centroids, k, dim, labels, distances);
      error != nullptr) {
    return absl::InternalError(absl::StrCat("GpuAssignNearest: ", error));
  }
  return absl::OkStatus();
}

}  // namespace shoal::index::gpu

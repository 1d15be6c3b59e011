// Argument checks and Status conversion for gpu_kmeans.h; the device work is in the backend.
#include "index/clustering/gpu/gpu_kmeans.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "index/clustering/gpu/gpu_kmeans_backend.h"
#include "index/distance/finite_check.h"

namespace shoal::index::gpu {
namespace {

backend::Config ConfigOf(const GpuOptions& options) {
  return {options.precision == GpuPrecision::kTf32, options.device_budget_bytes, options.streams};
}

absl::Status CheckOptions(const GpuOptions& options) {
  if (options.streams < 1 || options.streams > 3) {
    return absl::InvalidArgumentError(absl::StrCat("streams: ", options.streams, " not in [1, 3]"));
  }
  return absl::OkStatus();
}

absl::Status ToStatus(const backend::Outcome& outcome, const char* call, const char* bad_what) {
  if (outcome.bad_row >= 0) {
    return absl::InvalidArgumentError(absl::StrCat(bad_what, "[", outcome.bad_row, "]: ",
                                                   std::string_view(bad_what) == "points"
                                                       ? "holds NaN or Inf"
                                                       : "is not a centroid index < k"));
  }
  if (outcome.error != nullptr) {
    return absl::InternalError(absl::StrCat(call, ": ", outcome.error));
  }
  return absl::OkStatus();
}

absl::Status CheckDevice() {
  if (!backend::Compiled()) return absl::UnavailableError("Shoal was built without CUDA");
  if (!GpuAvailable()) return absl::UnavailableError("no CUDA device");
  return absl::OkStatus();
}

}  // namespace

bool GpuAvailable() { return backend::DeviceCount() > 0; }

std::string GpuDescription() {
  if (!backend::Compiled()) return "n/a (built without CUDA)";
  if (!GpuAvailable()) return "n/a (no device)";
  return backend::Describe();
}

absl::Status GpuAssignTopM(const float* points, size_t n, const float* centroids, size_t k,
                           size_t d, size_t m, const float* bias, uint32_t* labels,
                           float* distances, const GpuOptions& options) {
  if (k == 0) return absl::InvalidArgumentError("k: need at least one centroid");
  if (k >= std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("k: ", k, " >= 2^32 - 1"));
  }
  if (d == 0) return absl::InvalidArgumentError("d: must be positive");
  if (m == 0 || m > k || m > kGpuMaxTopM) {
    return absl::InvalidArgumentError(
        absl::StrCat("m: ", m, " not in [1, min(k = ", k, ", ", kGpuMaxTopM, ")]"));
  }
  if (auto s = CheckOptions(options); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  if (points == nullptr || centroids == nullptr || labels == nullptr) {
    return absl::InvalidArgumentError("points, centroids and labels must not be null");
  }
  if (n >= std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("n: ", n, " >= 2^32 - 1"));
  }
  if (auto s = CheckFiniteRows(centroids, k, d, "centroids"); !s.ok()) return s;
  if (bias != nullptr) {
    if (auto s = CheckFiniteRows(bias, k, 1, "bias"); !s.ok()) return s;
  }
  if (auto s = CheckDevice(); !s.ok()) return s;
  // NaN/Inf in the points is found on the device, while they stream past.
  return ToStatus(backend::AssignTopM(points, n, centroids, k, d, m, bias, labels, distances,
                                      ConfigOf(options)),
                  "GpuAssignTopM", "points");
}

absl::Status GpuAssignNearest(const float* points, size_t n, const float* centroids, size_t k,
                              size_t dim, uint32_t* labels, float* distances) {
  return GpuAssignTopM(points, n, centroids, k, dim, 1, nullptr, labels, distances);
}

absl::Status GpuUpdateCentroids(const float* points, size_t n, size_t d, const uint32_t* labels,
                                size_t k, float* centroids, uint32_t* sizes,
                                const GpuOptions& options) {
  if (k == 0) return absl::InvalidArgumentError("k: need at least one centroid");
  if (k >= std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("k: ", k, " >= 2^32 - 1"));
  }
  if (d == 0) return absl::InvalidArgumentError("d: must be positive");
  if (auto s = CheckOptions(options); !s.ok()) return s;
  if (centroids == nullptr) return absl::InvalidArgumentError("centroids must not be null");
  if (n == 0) {
    if (sizes != nullptr) std::fill(sizes, sizes + k, 0u);
    return absl::OkStatus();
  }
  if (points == nullptr || labels == nullptr) {
    return absl::InvalidArgumentError("points and labels must not be null");
  }
  if (n >= std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("n: ", n, " >= 2^32 - 1"));
  }
  if (auto s = CheckDevice(); !s.ok()) return s;
  return ToStatus(
      backend::UpdateCentroids(points, n, d, labels, k, centroids, sizes, ConfigOf(options)),
      "GpuUpdateCentroids", "labels");
}

std::shared_ptr<const void> GpuRetainPoints(const float* points, size_t n, size_t d,
                                            const GpuOptions& options) {
  if (points == nullptr || n == 0 || d == 0 || !CheckOptions(options).ok() || !GpuAvailable()) {
    return nullptr;
  }
  void* handle = backend::Retain(points, n, d, ConfigOf(options));
  if (handle == nullptr) return nullptr;
  return std::shared_ptr<const void>(handle,
                                     [](const void* h) { backend::Release(const_cast<void*>(h)); });
}

}  // namespace shoal::index::gpu

// CheckFiniteRows: InvalidArgument naming the first row of a rows x width float matrix that holds
// NaN or Inf ("points[12]: holds nan at column 3"). Header-only so that the CPU k-means
// (shoal_index) and the CUDA backend (shoal_index_gpu, which shoal_index links) share it.
#ifndef SHOAL_INDEX_DISTANCE_FINITE_CHECK_H_
#define SHOAL_INDEX_DISTANCE_FINITE_CHECK_H_

#include <cmath>
#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace shoal::index {

inline absl::Status CheckFiniteRows(const float* values, size_t rows, size_t width,
                                    const char* what) {
  for (size_t i = 0; i < rows * width; ++i) {
    if (!std::isfinite(values[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, "[", i / width, "]: holds ", values[i], " at column ", i % width));
    }
  }
  return absl::OkStatus();
}

}  // namespace shoal::index

#endif  // SHOAL_INDEX_DISTANCE_FINITE_CHECK_H_

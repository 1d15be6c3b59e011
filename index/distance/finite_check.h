// CheckFiniteRows: InvalidArgument naming the first row of a rows x width float matrix that holds
// NaN or Inf ("points[12]: holds nan at column 3"). For the CPU k-means and the CUDA backend
// (index/clustering/gpu), which both link shoal_index_distance.
#ifndef SHOAL_INDEX_DISTANCE_FINITE_CHECK_H_
#define SHOAL_INDEX_DISTANCE_FINITE_CHECK_H_

#include <cmath>
#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "index/distance/distance.h"

namespace shoal::index {

inline absl::Status CheckFiniteRows(const float* values, size_t rows, size_t width,
                                    const char* what) {
  // The kernel says whether all are finite; the plain loop names the first that is not.
  if (AllFinite(values, rows * width)) return absl::OkStatus();
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

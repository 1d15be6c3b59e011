// RowSource: the rows of one vector file for `shoal ingest`, over the dataset readers of
// include/shoal/dataset.h (.fvecs .bvecs .fbin .u8bin .npy, idx(.gz); .ivecs/.ibin too) plus
// ann-benchmarks HDF5 (.hdf5/.h5: the `train` dataset, loaded whole).
//
//   SHOAL_ASSIGN_OR_RETURN(auto source, OpenRowSource("base.fvecs", "auto"));
//   std::vector<float> rows(100 * source->cols());
//   SHOAL_RETURN_IF_ERROR(source->ReadRows(0, 100, absl::MakeSpan(rows)));
//
// Errors name the file (and the record, for a bad record). Not thread-safe.
#ifndef SHOAL_CLI_INGEST_SOURCE_H_
#define SHOAL_CLI_INGEST_SOURCE_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace shoal::cli {

class RowSource {
 public:
  virtual ~RowSource() = default;
  virtual const std::string& path() const = 0;
  virtual size_t rows() const = 0;
  virtual size_t cols() const = 0;
  // Rows [first, first + count) as floats; `out` holds count * cols() values.
  virtual absl::Status ReadRows(size_t first, size_t count, absl::Span<float> out) = 0;
};

// `format`: "auto" (from the extension), or one of fvecs bvecs ivecs fbin u8bin ibin npy idx
// hdf5, which must agree with the extension (the readers pick the layout by extension); an
// InvalidArgument naming --format otherwise.
absl::StatusOr<std::unique_ptr<RowSource>> OpenRowSource(const std::string& path,
                                                         const std::string& format);

}  // namespace shoal::cli

#endif  // SHOAL_CLI_INGEST_SOURCE_H_

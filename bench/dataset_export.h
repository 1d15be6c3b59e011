// Writes vectors and ground-truth ids in the big-ann binary layout (uint32 rows, uint32 cols,
// then rows * cols little-endian values, row-major): `.fbin` for float32, `.ibin` for int32.
// That is the layout shoal::ReadVectors/ReadIntVectors read back and SPTAG's SSDServing reads
// as VectorType=DEFAULT / TruthType=DEFAULT, so peers outside the process see the same data.
//
//   SHOAL_RETURN_IF_ERROR(WriteFbin("/data/base.fbin", ds.train));
//   SHOAL_RETURN_IF_ERROR(WriteIbin("/data/truth.ibin", gt.neighbors));
//
// Errors: InvalidArgument when a shape does not fit uint32 (the field named), an id is outside
// int32, or the data is smaller than rows * cols; Internal when the file cannot be written
// (path and errno text). The file is written to PATH.tmp and renamed, so a failed write
// leaves no partial PATH. Thread safety: free functions, no shared state.
#ifndef SHOAL_BENCH_DATASET_EXPORT_H_
#define SHOAL_BENCH_DATASET_EXPORT_H_

#include <string>

#include "absl/status/status.h"
#include "bench/recall.h"
#include "shoal/dataset.h"

namespace shoal::bench {

// All rows of `m` (float32).
absl::Status WriteFbin(const std::string& path, const Matrix& m);

// `rows` rows of `m` from row `first` (e.g. the first nq test queries, or the warm-up queries
// after them); InvalidArgument if first + rows > m.rows.
absl::Status WriteFbinRows(const std::string& path, const Matrix& m, size_t rows, size_t first = 0);

// The ids of `n` (nq x k, closest first) as int32; distances are not written.
absl::Status WriteIbin(const std::string& path, const Neighbors& n);

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_DATASET_EXPORT_H_

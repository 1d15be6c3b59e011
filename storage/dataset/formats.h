// Header parsers of the flat vector formats: each checks a file's header against the file's
// size and describes its rows as a RowLayout. Internal to storage/dataset; errors as in
// include/shoal/dataset.h.
#ifndef SHOAL_STORAGE_DATASET_FORMATS_H_
#define SHOAL_STORAGE_DATASET_FORMATS_H_

#include <string>

#include "absl/status/statusor.h"
#include "storage/dataset/byte_source.h"
#include "storage/dataset/row_layout.h"

namespace shoal::storage {

enum class FileFormat { kFvecs, kBvecs, kIvecs, kFbin, kU8bin, kIbin, kNpy, kIdx };

// From the extension (a trailing ".gz" is looked through); InvalidArgument if unknown.
absl::StatusOr<FileFormat> FormatFromPath(const std::string& path);

// .fvecs/.bvecs/.ivecs: the first record's dimension sets the row size; every record must
// repeat it. Plain files only (the row count comes from the file size).
absl::StatusOr<RowLayout> ParseVecsLayout(ByteSource& source, ElementType type);
// .fbin/.u8bin/.ibin: uint32 rows, uint32 cols, then exactly rows * cols elements.
absl::StatusOr<RowLayout> ParseBinLayout(ByteSource& source, ElementType type);
// idx (MNIST): 0, 0, type 0x08 (ubyte), ndims; big-endian uint32 dims; rows = dims[0].
absl::StatusOr<RowLayout> ParseIdxLayout(ByteSource& source);
// .npy 1.0/2.0/3.0; little-endian f4 f8 u1 i4 i8; C order; shape (n,) or (n, d).
absl::StatusOr<RowLayout> ParseNpyLayout(ByteSource& source);

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_DATASET_FORMATS_H_

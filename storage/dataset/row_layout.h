// The one shape every flat vector file shares: `rows` fixed-size rows of `cols` elements
// starting at `data_offset`, each optionally prefixed by an int32 copy of `cols` (*vecs).
// Format parsers (formats.h) turn a header into a RowLayout; LayoutReader reads any of them.
// Internal to storage/dataset.
#ifndef SHOAL_STORAGE_DATASET_ROW_LAYOUT_H_
#define SHOAL_STORAGE_DATASET_ROW_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shoal/dataset.h"
#include "storage/dataset/byte_source.h"

namespace shoal::storage {

enum class ElementType { kFloat32, kFloat64, kUint8, kInt32, kInt64 };

size_t ElementSize(ElementType type);
bool IsInteger(ElementType type);

struct RowLayout {
  size_t rows = 0;
  size_t cols = 0;
  uint64_t data_offset = 0;
  ElementType type = ElementType::kFloat32;
  bool dim_prefix = false;  // each row starts with int32 == cols

  uint64_t RowBytes() const { return (dim_prefix ? 4 : 0) + cols * ElementSize(type); }
};

// Checks that `layout` fits in `source`: no overflow, and the data ends within the file
// (exactly at its end when `exact_end`; within the decompression bound for gzip).
absl::Status CheckLayoutFits(const ByteSource& source, const RowLayout& layout, bool exact_end);

// Reads rows of a RowLayout from a ByteSource; the VectorReader behind every non-HDF5 format.
std::unique_ptr<VectorReader> NewLayoutReader(std::unique_ptr<ByteSource> source,
                                              const RowLayout& layout);

// Reads exactly n bytes at offset or fails with DataLoss "PATH: truncated WHAT at offset O:
// need N bytes, L left".
absl::Status ReadExactly(ByteSource& source, uint64_t offset, char* buf, size_t n,
                         const std::string& what);

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_DATASET_ROW_LAYOUT_H_

// Header parsers of the formats with fixed binary headers: *vecs, big-ann *bin, idx.
#include <array>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "storage/dataset/formats.h"

namespace shoal::storage {
namespace {

// Larger dimensions are taken for corrupt headers rather than data.
constexpr int64_t kMaxVecsDimension = 1 << 22;

uint32_t LoadBigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// Called when a *vecs file is not a whole number of records: finds the first record whose
// dimension differs from the first one, which explains the size better than "truncated".
absl::Status ExplainVecsSize(ByteSource& source, int32_t dim, uint64_t row_bytes) {
  const uint64_t rows = source.size() / row_bytes;
  for (uint64_t r = 1; r <= rows; ++r) {
    const uint64_t offset = r * row_bytes;
    if (source.size() - offset < 4) break;
    int32_t d = 0;
    SHOAL_RETURN_IF_ERROR(
        ReadExactly(source, offset, reinterpret_cast<char*>(&d), 4, absl::StrCat("record ", r)));
    if (d != dim) {
      return absl::InvalidArgumentError(absl::StrCat(source.path(), ": record ", r, " at offset ",
                                                     offset, " has dimension ", d, ", expected ",
                                                     dim, " (the first record's)"));
    }
  }
  const uint64_t offset = rows * row_bytes;
  return absl::DataLossError(absl::StrCat(source.path(), ": truncated record ", rows, " at offset ",
                                          offset, ": need ", row_bytes, " bytes, ",
                                          source.size() - offset, " left"));
}

}  // namespace

absl::StatusOr<FileFormat> FormatFromPath(const std::string& path) {
  std::string name = path;
  if (absl::EndsWith(name, ".gz")) name.resize(name.size() - 3);
  static constexpr std::array<std::pair<const char*, FileFormat>, 7> kExtensions = {{
      {".fvecs", FileFormat::kFvecs},
      {".bvecs", FileFormat::kBvecs},
      {".ivecs", FileFormat::kIvecs},
      {".fbin", FileFormat::kFbin},
      {".u8bin", FileFormat::kU8bin},
      {".ibin", FileFormat::kIbin},
      {".npy", FileFormat::kNpy},
  }};
  for (const auto& [extension, format] : kExtensions) {
    if (absl::EndsWith(name, extension)) return format;
  }
  if (absl::EndsWith(name, "-ubyte") || absl::EndsWith(name, ".idx") ||
      absl::EndsWith(name, ".idx1") || absl::EndsWith(name, ".idx3")) {
    return FileFormat::kIdx;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path,
      ": unknown vector file extension (want .fvecs .bvecs .ivecs .fbin .u8bin .ibin .npy "
      "or an idx file ending in -ubyte/.idx, optionally .gz)"));
}

absl::StatusOr<RowLayout> ParseVecsLayout(ByteSource& source, ElementType type) {
  if (!source.size_exact()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source.path(), ": gzip-compressed *vecs files are not supported"));
  }
  RowLayout layout{.type = type, .dim_prefix = true};
  if (source.size() == 0) return layout;
  int32_t dim = 0;
  SHOAL_RETURN_IF_ERROR(
      ReadExactly(source, 0, reinterpret_cast<char*>(&dim), 4, "record 0 dimension"));
  if (dim <= 0 || dim > kMaxVecsDimension) {
    return absl::InvalidArgumentError(absl::StrCat(source.path(), ": record 0 at offset 0 has ",
                                                   "dimension ", dim, " (want 1..",
                                                   kMaxVecsDimension, ")"));
  }
  layout.cols = static_cast<size_t>(dim);
  const uint64_t row_bytes = layout.RowBytes();
  if (source.size() % row_bytes != 0) return ExplainVecsSize(source, dim, row_bytes);
  layout.rows = source.size() / row_bytes;
  return layout;
}

absl::StatusOr<RowLayout> ParseBinLayout(ByteSource& source, ElementType type) {
  uint32_t header[2] = {0, 0};
  SHOAL_RETURN_IF_ERROR(ReadExactly(source, 0, reinterpret_cast<char*>(header), 8, "header"));
  RowLayout layout{.rows = header[0], .cols = header[1], .data_offset = 8, .type = type};
  if (layout.cols == 0 && layout.rows != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source.path(), ": header at offset 0 has ", layout.rows, " rows of 0 dims"));
  }
  SHOAL_RETURN_IF_ERROR(CheckLayoutFits(source, layout, /*exact_end=*/true));
  return layout;
}

absl::StatusOr<RowLayout> ParseIdxLayout(ByteSource& source) {
  unsigned char magic[4];
  SHOAL_RETURN_IF_ERROR(ReadExactly(source, 0, reinterpret_cast<char*>(magic), 4, "idx magic"));
  const uint32_t value = LoadBigEndian32(magic);
  const int ndims = magic[3];
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || ndims < 1 || ndims > 4) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: wrong idx magic 0x%08x at offset 0 (want unsigned-byte data: 0x00000801 labels, "
        "0x00000803 images)",
        source.path(), value));
  }
  unsigned char dims[16];
  SHOAL_RETURN_IF_ERROR(
      ReadExactly(source, 4, reinterpret_cast<char*>(dims), 4 * ndims, "idx dimensions"));
  RowLayout layout{
      .cols = 1, .data_offset = 4 + 4 * static_cast<uint64_t>(ndims), .type = ElementType::kUint8};
  layout.rows = LoadBigEndian32(dims);
  for (int i = 1; i < ndims; ++i) {
    // Each factor < 2^32 and at most 3 of them: the product is checked by CheckLayoutFits
    // only if it fits size_t, so check it here.
    if (__builtin_mul_overflow(layout.cols, size_t{LoadBigEndian32(dims + 4 * i)}, &layout.cols)) {
      return absl::InvalidArgumentError(
          absl::StrCat(source.path(), ": idx dimensions at offset 4 overflow"));
    }
  }
  SHOAL_RETURN_IF_ERROR(CheckLayoutFits(source, layout, /*exact_end=*/true));
  return layout;
}

}  // namespace shoal::storage

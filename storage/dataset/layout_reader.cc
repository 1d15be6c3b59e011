// LayoutReader: VectorReader over a RowLayout. Reads rows in chunks of a few MiB, checks each
// *vecs dimension prefix, and converts elements to float or int32.
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "storage/dataset/row_layout.h"

namespace shoal::storage {
namespace {

static_assert(std::endian::native == std::endian::little,
              "dataset readers assume a little-endian host");

constexpr size_t kChunkBytes = 4u << 20;

template <typename T>
T Load(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

// Converts one row of `cols` elements; false if an int64 does not fit the output type.
template <typename Out>
bool ConvertRow(const char* src, ElementType type, size_t cols, Out* out) {
  switch (type) {
    case ElementType::kFloat32:
      for (size_t j = 0; j < cols; ++j) out[j] = static_cast<Out>(Load<float>(src + 4 * j));
      return true;
    case ElementType::kFloat64:
      for (size_t j = 0; j < cols; ++j) out[j] = static_cast<Out>(Load<double>(src + 8 * j));
      return true;
    case ElementType::kUint8:
      for (size_t j = 0; j < cols; ++j) out[j] = static_cast<Out>(static_cast<uint8_t>(src[j]));
      return true;
    case ElementType::kInt32:
      for (size_t j = 0; j < cols; ++j) out[j] = static_cast<Out>(Load<int32_t>(src + 4 * j));
      return true;
    case ElementType::kInt64:
      for (size_t j = 0; j < cols; ++j) {
        int64_t v = Load<int64_t>(src + 8 * j);
        if constexpr (std::is_integral_v<Out>) {
          if (v < std::numeric_limits<Out>::min() || v > std::numeric_limits<Out>::max()) {
            return false;
          }
        }
        out[j] = static_cast<Out>(v);
      }
      return true;
  }
  return false;
}

class LayoutReader : public VectorReader {
 public:
  LayoutReader(std::unique_ptr<ByteSource> source, const RowLayout& layout)
      : source_(std::move(source)), layout_(layout) {}

  const std::string& path() const override { return source_->path(); }
  size_t rows() const override { return layout_.rows; }
  size_t cols() const override { return layout_.cols; }
  bool is_integer() const override { return IsInteger(layout_.type); }

  absl::Status ReadRows(size_t first, size_t count, absl::Span<float> out) override {
    return Read(first, count, out);
  }
  absl::Status ReadIntRows(size_t first, size_t count, absl::Span<int32_t> out) override {
    if (!is_integer()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path(), ": holds floating-point values, not integers"));
    }
    return Read(first, count, out);
  }

 private:
  template <typename Out>
  absl::Status Read(size_t first, size_t count, absl::Span<Out> out);
  absl::Status CheckRow(size_t row, const char* record) const;

  std::unique_ptr<ByteSource> source_;
  RowLayout layout_;
  std::vector<char> buffer_;
};

template <typename Out>
absl::Status LayoutReader::Read(size_t first, size_t count, absl::Span<Out> out) {
  if (first > layout_.rows || count > layout_.rows - first) {
    return absl::InvalidArgumentError(absl::StrCat(path(), ": rows [", first, ", ", first + count,
                                                   ") out of range (", layout_.rows, " rows)"));
  }
  if (out.size() != count * layout_.cols) {
    return absl::InvalidArgumentError(absl::StrCat(path(), ": output holds ", out.size(),
                                                   " values, need ", count * layout_.cols));
  }
  const uint64_t row_bytes = layout_.RowBytes();
  const size_t prefix = layout_.dim_prefix ? 4 : 0;
  const size_t chunk_rows = std::max<size_t>(1, kChunkBytes / std::max<uint64_t>(row_bytes, 1));
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(chunk_rows, count - done);
    const size_t row = first + done;
    buffer_.resize(n * row_bytes);
    const uint64_t offset = layout_.data_offset + row * row_bytes;
    SHOAL_ASSIGN_OR_RETURN(size_t got, source_->ReadAt(offset, buffer_.data(), buffer_.size()));
    if (got < buffer_.size()) {
      const size_t bad = got / row_bytes;
      return absl::DataLossError(
          absl::StrCat(path(), ": truncated ", layout_.dim_prefix ? "record " : "row ", row + bad,
                       " at offset ", offset + bad * row_bytes, ": need ", row_bytes, " bytes, ",
                       got - bad * row_bytes, " left"));
    }
    for (size_t i = 0; i < n; ++i) {
      const char* record = buffer_.data() + i * row_bytes;
      if (prefix != 0) SHOAL_RETURN_IF_ERROR(CheckRow(row + i, record));
      Out* dst = out.data() + (done + i) * layout_.cols;
      if (!ConvertRow(record + prefix, layout_.type, layout_.cols, dst)) {
        return absl::InvalidArgumentError(absl::StrCat(path(), ": row ", row + i, " at offset ",
                                                       offset + i * row_bytes,
                                                       " holds a value outside the int32 range"));
      }
    }
    done += n;
  }
  return absl::OkStatus();
}

absl::Status LayoutReader::CheckRow(size_t row, const char* record) const {
  const int32_t dim = Load<int32_t>(record);
  if (dim == static_cast<int64_t>(layout_.cols)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      path(), ": record ", row, " at offset ", layout_.data_offset + row * layout_.RowBytes(),
      " has dimension ", dim, ", expected ", layout_.cols, " (the first record's)"));
}

}  // namespace

size_t ElementSize(ElementType type) {
  switch (type) {
    case ElementType::kUint8:
      return 1;
    case ElementType::kFloat32:
    case ElementType::kInt32:
      return 4;
    case ElementType::kFloat64:
    case ElementType::kInt64:
      return 8;
  }
  return 1;
}

bool IsInteger(ElementType type) {
  return type == ElementType::kUint8 || type == ElementType::kInt32 || type == ElementType::kInt64;
}

absl::Status CheckLayoutFits(const ByteSource& source, const RowLayout& layout, bool exact_end) {
  // data_bytes = rows * cols * element size + rows * prefix size, all overflow-checked.
  uint64_t elements = 0, data_bytes = 0, prefix_bytes = 0, end = 0;
  const uint64_t prefix = layout.dim_prefix ? 4 : 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(layout.rows), static_cast<uint64_t>(layout.cols),
                             &elements) ||
      __builtin_mul_overflow(elements, static_cast<uint64_t>(ElementSize(layout.type)),
                             &data_bytes) ||
      __builtin_mul_overflow(static_cast<uint64_t>(layout.rows), prefix, &prefix_bytes) ||
      __builtin_add_overflow(data_bytes, prefix_bytes, &data_bytes) ||
      __builtin_add_overflow(data_bytes, layout.data_offset, &end)) {
    return absl::InvalidArgumentError(absl::StrCat(source.path(), ": header claims ", layout.rows,
                                                   " x ", layout.cols, " elements from offset ",
                                                   layout.data_offset, ", which overflows"));
  }
  if (end > source.size()) {
    std::string message =
        absl::StrCat(source.path(), ": header claims ", layout.rows, " x ", layout.cols, " (",
                     data_bytes, " bytes from offset ", layout.data_offset, ") but the file ",
                     source.size_exact() ? "has " : "can hold at most ", source.size(), " bytes");
    if (!source.size_exact()) return absl::InvalidArgumentError(message);
    return absl::DataLossError(message);
  }
  if (exact_end && source.size_exact() && end < source.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source.path(), ": ", source.size() - end, " trailing bytes at offset ", end));
  }
  return absl::OkStatus();
}

absl::Status ReadExactly(ByteSource& source, uint64_t offset, char* buf, size_t n,
                         const std::string& what) {
  SHOAL_ASSIGN_OR_RETURN(size_t got, source.ReadAt(offset, buf, n));
  if (got == n) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(source.path(), ": truncated ", what, " at offset ",
                                          offset, ": need ", n, " bytes, ", got, " left"));
}

std::unique_ptr<VectorReader> NewLayoutReader(std::unique_ptr<ByteSource> source,
                                              const RowLayout& layout) {
  return std::make_unique<LayoutReader>(std::move(source), layout);
}

}  // namespace shoal::storage

// .npy header parser. The header is a Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 784), }
// padded with spaces and a newline; only the three keys NumPy writes are read.
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "storage/dataset/formats.h"

namespace shoal::storage {
namespace {

constexpr uint32_t kMaxHeaderBytes = 1 << 20;

// The text after `'key':` (or "key":), with leading spaces removed; nullopt if absent.
std::optional<absl::string_view> ValueOf(absl::string_view header, absl::string_view key) {
  for (char quote : {'\'', '"'}) {
    const std::string quoted = absl::StrCat(std::string(1, quote), key, std::string(1, quote));
    size_t at = header.find(quoted);
    if (at == absl::string_view::npos) continue;
    size_t colon = header.find(':', at + quoted.size());
    if (colon == absl::string_view::npos) return std::nullopt;
    return absl::StripLeadingAsciiWhitespace(header.substr(colon + 1));
  }
  return std::nullopt;
}

std::optional<ElementType> ParseDescr(absl::string_view value) {
  if (value.empty() || (value[0] != '\'' && value[0] != '"')) return std::nullopt;
  size_t end = value.find(value[0], 1);
  if (end == absl::string_view::npos) return std::nullopt;
  absl::string_view descr = value.substr(1, end - 1);
  if (descr == "<f4") return ElementType::kFloat32;
  if (descr == "<f8") return ElementType::kFloat64;
  if (descr == "|u1" || descr == "<u1" || descr == "u1") return ElementType::kUint8;
  if (descr == "<i4") return ElementType::kInt32;
  if (descr == "<i8") return ElementType::kInt64;
  return std::nullopt;
}

// "(60000, 784)" -> {60000, 784}; "(5,)" -> {5}.
std::optional<std::vector<uint64_t>> ParseShape(absl::string_view value) {
  if (value.empty() || value[0] != '(') return std::nullopt;
  size_t end = value.find(')');
  if (end == absl::string_view::npos) return std::nullopt;
  std::vector<uint64_t> dims;
  for (absl::string_view part : absl::StrSplit(value.substr(1, end - 1), ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (part.empty()) continue;
    uint64_t dim = 0;
    if (!absl::SimpleAtoi(part, &dim)) return std::nullopt;
    dims.push_back(dim);
  }
  return dims;
}

absl::Status BadHeader(const ByteSource& source, uint64_t offset, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(source.path(), ": bad .npy header at offset ", offset, ": ", why));
}

}  // namespace

absl::StatusOr<RowLayout> ParseNpyLayout(ByteSource& source) {
  unsigned char preamble[12];
  SHOAL_RETURN_IF_ERROR(
      ReadExactly(source, 0, reinterpret_cast<char*>(preamble), 10, ".npy preamble"));
  if (std::memcmp(preamble, "\x93NUMPY", 6) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source.path(), ": wrong .npy magic at offset 0 (want \\x93NUMPY)"));
  }
  const int major = preamble[6];
  if (major < 1 || major > 3) {
    return BadHeader(source, 6, absl::StrCat("unsupported version ", major, ".", preamble[7]));
  }
  uint64_t header_start = 10;
  uint32_t header_len = preamble[8] | (uint32_t{preamble[9]} << 8);
  if (major >= 2) {
    SHOAL_RETURN_IF_ERROR(
        ReadExactly(source, 10, reinterpret_cast<char*>(preamble) + 10, 2, ".npy header length"));
    header_len |= (uint32_t{preamble[10]} << 16) | (uint32_t{preamble[11]} << 24);
    header_start = 12;
  }
  if (header_len > kMaxHeaderBytes) {
    return BadHeader(source, 8, absl::StrCat("header length ", header_len, " is absurd"));
  }
  std::string header(header_len, '\0');
  SHOAL_RETURN_IF_ERROR(
      ReadExactly(source, header_start, header.data(), header_len, ".npy header"));

  RowLayout layout{.data_offset = header_start + header_len};
  std::optional<absl::string_view> descr = ValueOf(header, "descr");
  std::optional<ElementType> type = descr ? ParseDescr(*descr) : std::nullopt;
  if (!type) {
    return BadHeader(source, header_start,
                     absl::StrCat("unsupported or missing descr in ", header,
                                  " (want little-endian f4 f8 u1 i4 i8)"));
  }
  layout.type = *type;
  std::optional<absl::string_view> fortran = ValueOf(header, "fortran_order");
  if (!fortran || !absl::StartsWith(*fortran, "False")) {
    return BadHeader(source, header_start, "fortran_order arrays are not supported");
  }
  std::optional<absl::string_view> shape_text = ValueOf(header, "shape");
  std::optional<std::vector<uint64_t>> shape = shape_text ? ParseShape(*shape_text) : std::nullopt;
  if (!shape || shape->empty() || shape->size() > 2) {
    return BadHeader(source, header_start, "shape must be (n,) or (n, d)");
  }
  layout.rows = (*shape)[0];
  layout.cols = shape->size() == 2 ? (*shape)[1] : 1;
  SHOAL_RETURN_IF_ERROR(CheckLayoutFits(source, layout, /*exact_end=*/true));
  return layout;
}

}  // namespace shoal::storage

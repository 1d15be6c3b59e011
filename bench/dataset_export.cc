#include "bench/dataset_export.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace shoal::bench {
namespace {

absl::Status CheckShape(const std::string& path, size_t rows, size_t cols) {
  constexpr size_t kMax = std::numeric_limits<uint32_t>::max();
  if (rows > kMax)
    return absl::InvalidArgumentError(absl::StrCat(path, ": rows ", rows, " > 2^32-1"));
  if (cols > kMax)
    return absl::InvalidArgumentError(absl::StrCat(path, ": cols ", cols, " > 2^32-1"));
  return absl::OkStatus();
}

// Header then `rows * cols` elements of `data`, via PATH.tmp and a rename.
absl::Status WriteBin(const std::string& path, size_t rows, size_t cols, const void* data,
                      size_t element_size) {
  SHOAL_RETURN_IF_ERROR(CheckShape(path, rows, cols));
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return absl::InternalError(absl::StrCat(tmp, ": ", std::strerror(errno)));
  const uint32_t header[2] = {static_cast<uint32_t>(rows), static_cast<uint32_t>(cols)};
  const size_t count = rows * cols;
  bool ok = std::fwrite(header, sizeof(header), 1, f) == 1 &&
            (count == 0 || std::fwrite(data, element_size, count, f) == count);
  const int write_errno = errno;
  ok = std::fclose(f) == 0 && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    return absl::InternalError(absl::StrCat(tmp, ": write failed: ", std::strerror(write_errno)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    std::remove(tmp.c_str());
    return absl::InternalError(absl::StrCat(path, ": rename: ", std::strerror(rename_errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFbin(const std::string& path, const Matrix& m) {
  return WriteFbinRows(path, m, m.rows);
}

absl::Status WriteFbinRows(const std::string& path, const Matrix& m, size_t rows, size_t first) {
  if (first > m.rows || rows > m.rows - first) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": rows ", rows, " from row ", first, " > the matrix's ", m.rows));
  }
  if (m.data.size() < (first + rows) * m.cols) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": data holds ", m.data.size(),
                                                   " floats, fewer than (first + rows) * cols"));
  }
  return WriteBin(path, rows, m.cols, m.data.data() + first * m.cols, sizeof(float));
}

absl::Status WriteIbin(const std::string& path, const Neighbors& n) {
  if (n.ids.size() < n.nq * n.k) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ids holds ", n.ids.size(), " values, fewer than nq * k"));
  }
  std::vector<int32_t> ids(n.nq * n.k);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (n.ids[i] < std::numeric_limits<int32_t>::min() ||
        n.ids[i] > std::numeric_limits<int32_t>::max()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": id ", n.ids[i], " at position ", i, " is outside int32"));
    }
    ids[i] = static_cast<int32_t>(n.ids[i]);
  }
  return WriteBin(path, n.nq, n.k, ids.data(), sizeof(int32_t));
}

}  // namespace shoal::bench

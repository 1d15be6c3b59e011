// Helpers for the dataset tests: write small files of each format into a fresh temp dir.
#ifndef SHOAL_STORAGE_DATASET_TEST_FILES_H_
#define SHOAL_STORAGE_DATASET_TEST_FILES_H_

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/test_temp_dir.h"
#include "gtest/gtest.h"

namespace shoal::storage::testing {

// A fresh directory for one test; all of them are removed when the test process exits.
inline std::string MakeTempDir() {
  static std::vector<std::unique_ptr<base::TestTempDir>> dirs;
  dirs.push_back(std::make_unique<base::TestTempDir>("shoal_dataset"));
  return dirs.back()->path();
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline void WriteGzip(const std::string& path, const std::string& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(file), Z_OK);
}

template <typename T>
void Append(std::string* out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out->append(bytes, sizeof(T));
}

inline void AppendBigEndian32(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

// rows x cols values: value(i, j) = i * 100 + j (+ 0.5 for floats).
template <typename T>
std::vector<T> Pattern(size_t rows, size_t cols) {
  std::vector<T> v(rows * cols);
  for (size_t i = 0; i < rows; ++i) {
    for (size_t j = 0; j < cols; ++j) {
      v[i * cols + j] =
          static_cast<T>(i * 100 + j) + static_cast<T>(std::is_floating_point_v<T> ? 0.5 : 0);
    }
  }
  return v;
}

// *vecs: each row = int32 cols + cols values of T.
template <typename T>
std::string Vecs(const std::vector<T>& values, size_t cols) {
  std::string out;
  for (size_t i = 0; i < values.size() / cols; ++i) {
    Append<int32_t>(&out, static_cast<int32_t>(cols));
    for (size_t j = 0; j < cols; ++j) Append<T>(&out, values[i * cols + j]);
  }
  return out;
}

// big-ann *bin: uint32 rows, uint32 cols, row-major values.
template <typename T>
std::string Bin(const std::vector<T>& values, uint32_t rows, uint32_t cols) {
  std::string out;
  Append<uint32_t>(&out, rows);
  Append<uint32_t>(&out, cols);
  for (T v : values) Append<T>(&out, v);
  return out;
}

// .npy with the given version, descr and shape text; header padded to 64 bytes as NumPy does.
inline std::string NpyHeader(int major, const std::string& descr, const std::string& shape,
                             bool fortran = false) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                     ", 'shape': " + shape + ", }";
  const size_t preamble = major == 1 ? 10 : 12;
  while ((preamble + dict.size() + 1) % 64 != 0) dict.push_back(' ');
  dict.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  if (major == 1) {
    Append<uint16_t>(&out, static_cast<uint16_t>(dict.size()));
  } else {
    Append<uint32_t>(&out, static_cast<uint32_t>(dict.size()));
  }
  return out + dict;
}

template <typename T>
std::string Npy(int major, const std::string& descr, const std::vector<T>& values, size_t rows,
                size_t cols) {
  std::string out = NpyHeader(major, descr, absl::StrCat("(", rows, ", ", cols, ")"));
  for (T v : values) Append<T>(&out, v);
  return out;
}

// A test whose files live in a fresh temporary directory: Write(name, bytes) returns the path.
class TempFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& bytes) {
    std::string path = dir_ + "/" + name;
    WriteFile(path, bytes);
    return path;
  }
  std::string dir_ = MakeTempDir();
};

}  // namespace shoal::storage::testing

#endif  // SHOAL_STORAGE_DATASET_TEST_FILES_H_

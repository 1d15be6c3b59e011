// Positioned reads from a dataset file, plain or gzip-compressed (detected by its magic bytes).
// Internal to storage/dataset. Not thread-safe (a gzip stream keeps a cursor).
#ifndef SHOAL_STORAGE_DATASET_BYTE_SOURCE_H_
#define SHOAL_STORAGE_DATASET_BYTE_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace shoal::storage {

class ByteSource {
 public:
  // NotFound for a missing file, Internal for other OS or zlib failures.
  static absl::StatusOr<std::unique_ptr<ByteSource>> Open(const std::string& path);

  virtual ~ByteSource() = default;
  const std::string& path() const { return path_; }
  // True when `size()` is exact; false for gzip, where it is only an upper bound
  // (compressed size times deflate's maximum ratio).
  virtual bool size_exact() const = 0;
  virtual uint64_t size() const = 0;
  virtual bool compressed() const = 0;
  // Reads up to `n` bytes at `offset` (into the decompressed stream for gzip); returns how
  // many were read, fewer only at the end of the data.
  virtual absl::StatusOr<size_t> ReadAt(uint64_t offset, char* buf, size_t n) = 0;

 protected:
  explicit ByteSource(std::string path) : path_(std::move(path)) {}

 private:
  std::string path_;
};

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_DATASET_BYTE_SOURCE_H_

#include "storage/io/block_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace shoal::storage {
namespace internal {

void AlignedFree::operator()(uint8_t* p) const { std::free(p); }

AlignedBuffer AllocateAligned(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, kPageSize, bytes == 0 ? kPageSize : bytes) != 0) throw std::bad_alloc();
  return AlignedBuffer(static_cast<uint8_t*>(p));
}

absl::Status ValidateRequests(std::span<const ReadRequest> requests) {
  for (size_t i = 0; i < requests.size(); ++i) {
    const ReadRequest& r = requests[i];
    if (r.length == 0 || r.offset % kPageSize != 0 || r.length % kPageSize != 0) {
      return absl::InvalidArgumentError(absl::StrCat("read request ", i, " (offset ", r.offset,
                                                     ", length ", r.length,
                                                     ") is not a non-empty run of whole pages"));
    }
  }
  return absl::OkStatus();
}

absl::Status ShortReadError(const std::string& path, const ReadRequest& r, uint64_t got) {
  return absl::DataLossError(absl::StrCat(path, ": read at offset ", r.offset, " length ", r.length,
                                          ": short read, got ", got, " bytes (past end of file)"));
}

absl::Status ErrnoError(const std::string& path, const ReadRequest& r, int err) {
  std::string msg = absl::StrCat(path, ": read at offset ", r.offset, " length ", r.length, ": ",
                                 std::strerror(err));
  return err == EIO ? absl::UnavailableError(msg) : absl::InternalError(msg);
}

}  // namespace internal

absl::StatusOr<std::unique_ptr<BlockReader>> BlockReader::Open(const std::string& path,
                                                               IoBackend backend,
                                                               uint32_t max_in_flight) {
  if (max_in_flight == 0 || max_in_flight > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_in_flight must be in [1, 4096], got ", max_in_flight));
  }
  bool direct = true;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (fd < 0 && errno == EINVAL) {  // The file system does not do O_DIRECT.
    direct = false;
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) {
    const int err = errno;
    std::string msg = absl::StrCat("open ", path, ": ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(msg) : absl::InternalError(msg);
  }
  if (backend != IoBackend::kPread) {
    // SHOAL_IO_URING=off makes io_uring look unavailable (tests; operators ruling it out).
    const char* env = std::getenv("SHOAL_IO_URING");
    auto uring = env != nullptr && std::string_view(env) == "off"
                     ? absl::StatusOr<std::unique_ptr<BlockReader>>(
                           absl::UnavailableError("io_uring disabled by SHOAL_IO_URING=off"))
                     : internal::NewUringReader(fd, direct, path, max_in_flight);
    if (uring.ok() || backend == IoBackend::kIoUring) {
      if (!uring.ok()) ::close(fd);
      return uring;
    }
  }
  return internal::NewPreadReader(fd, direct, path);
}

}  // namespace shoal::storage

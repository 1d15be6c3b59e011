#include "storage/dataset/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace shoal::storage {
namespace {

// Deflate cannot compress by more than about 1032:1, so a gzip file of c bytes holds at most
// this many bytes per compressed byte; headers are checked against that bound.
constexpr uint64_t kMaxDeflateRatio = 1032;

absl::Status ErrnoStatus(const std::string& path, const char* what, int err) {
  std::string message = absl::StrCat(path, ": ", what, ": ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(message);
  return absl::InternalError(message);
}

class PosixSource : public ByteSource {
 public:
  PosixSource(std::string path, int fd, uint64_t size)
      : ByteSource(std::move(path)), fd_(fd), size_(size) {}
  ~PosixSource() override { close(fd_); }

  bool size_exact() const override { return true; }
  uint64_t size() const override { return size_; }
  bool compressed() const override { return false; }

  absl::StatusOr<size_t> ReadAt(uint64_t offset, char* buf, size_t n) override {
    size_t done = 0;
    while (done < n) {
      ssize_t got = pread(fd_, buf + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return ErrnoStatus(path(), "pread", errno);
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }

 private:
  int fd_;
  uint64_t size_;
};

class GzipSource : public ByteSource {
 public:
  GzipSource(std::string path, gzFile file, uint64_t bound)
      : ByteSource(std::move(path)), file_(file), bound_(bound) {}
  ~GzipSource() override { gzclose(file_); }

  bool size_exact() const override { return false; }
  uint64_t size() const override { return bound_; }
  bool compressed() const override { return true; }

  absl::StatusOr<size_t> ReadAt(uint64_t offset, char* buf, size_t n) override {
    // gzseek emulates seeking: forward by decompressing, backward by rewinding.
    if (static_cast<uint64_t>(gztell(file_)) != offset &&
        gzseek(file_, static_cast<z_off_t>(offset), SEEK_SET) < 0) {
      return GzError("gzseek", offset);
    }
    size_t done = 0;
    while (done < n) {
      unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
      int got = gzread(file_, buf + done, chunk);
      if (got < 0) return GzError("gzread", offset + done);
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    if (done < n) {
      // A short read is either the end of the data or a corrupt/truncated stream.
      int err = Z_OK;
      const char* message = gzerror(file_, &err);
      if (err != Z_OK && err != Z_BUF_ERROR) {
        return absl::DataLossError(
            absl::StrCat(path(), ": gzip stream corrupt at offset ", offset + done, ": ", message));
      }
      gzclearerr(file_);
    }
    return done;
  }

 private:
  absl::Status GzError(const char* what, uint64_t offset) {
    int err = Z_OK;
    const char* message = gzerror(file_, &err);
    std::string text =
        absl::StrCat(path(), ": ", what, " failed at offset ", offset, ": ", message);
    if (err == Z_DATA_ERROR) return absl::DataLossError(text);
    return absl::InternalError(text);
  }

  gzFile file_;
  uint64_t bound_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ByteSource>> ByteSource::Open(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(path, "open", errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return ErrnoStatus(path, "fstat", err);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  unsigned char magic[2] = {0, 0};
  ssize_t got = pread(fd, magic, 2, 0);
  if (got != 2 || magic[0] != 0x1f || magic[1] != 0x8b) {
    return std::make_unique<PosixSource>(path, fd, size);
  }
  gzFile file = gzdopen(fd, "rb");  // takes ownership of fd
  if (file == nullptr) {
    close(fd);
    return absl::InternalError(absl::StrCat(path, ": gzdopen failed"));
  }
  gzbuffer(file, 1 << 17);
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  uint64_t bound = size > max / kMaxDeflateRatio ? max : size * kMaxDeflateRatio;
  return std::make_unique<GzipSource>(path, file, bound);
}

}  // namespace shoal::storage

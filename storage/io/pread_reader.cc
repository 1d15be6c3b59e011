// The portable BlockReader: one pread(2) per request, in request order, into an aligned buffer.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <utility>

#include "storage/io/block_reader.h"

namespace shoal::storage::internal {
namespace {

// Reads r into buf until done or EOF; returns the bytes read or -errno.
int64_t ReadFully(int fd, uint8_t* buf, const ReadRequest& r) {
  uint64_t done = 0;
  while (done < r.length) {
    ssize_t n = ::pread(fd, buf + done, r.length - done, static_cast<off_t>(r.offset + done));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return -errno;
    }
    if (n == 0) break;
    done += static_cast<uint64_t>(n);
    // With O_DIRECT a read ending off a page boundary ended at EOF; asking for the rest at an
    // unaligned offset would fail with EINVAL instead of returning 0.
    if (done % kPageSize != 0) break;
  }
  return static_cast<int64_t>(done);
}

class PreadReader final : public BlockReader {
 public:
  PreadReader(int fd, bool direct, std::string path)
      : fd_(fd), direct_(direct), path_(std::move(path)) {}
  ~PreadReader() override { ::close(fd_); }

  std::string backend() const override { return direct_ ? "pread" : "pread-buffered"; }
  const std::string& path() const override { return path_; }
  uint64_t bytes_read() const override { return bytes_read_.load(std::memory_order_relaxed); }

  absl::Status ReadBatch(std::span<const ReadRequest> requests,
                         const ReadCallback& on_read) override {
    if (absl::Status s = ValidateRequests(requests); !s.ok()) return s;
    uint32_t largest = 0;
    for (const ReadRequest& r : requests) largest = std::max(largest, r.length);
    // A per-thread buffer, taken out of its slot while in use so that a reentrant call (from
    // on_read) gets its own.
    thread_local AlignedBuffer cached;
    thread_local size_t cached_size = 0;
    AlignedBuffer buf = std::move(cached);
    size_t size = std::exchange(cached_size, 0);
    if (!buf || size < largest) {
      buf = AllocateAligned(largest);
      size = largest;
    }
    absl::Status status;
    for (size_t i = 0; i < requests.size() && status.ok(); ++i) {
      const ReadRequest& r = requests[i];
      int64_t got = ReadFully(fd_, buf.get(), r);
      if (got < 0) {
        status = ErrnoError(path_, r, static_cast<int>(-got));
        break;
      }
      bytes_read_.fetch_add(static_cast<uint64_t>(got), std::memory_order_relaxed);
      if (static_cast<uint64_t>(got) < r.length) {
        status = ShortReadError(path_, r, static_cast<uint64_t>(got));
        break;
      }
      status = on_read(i, std::span<const uint8_t>(buf.get(), r.length));
    }
    if (size > cached_size) {
      cached = std::move(buf);
      cached_size = size;
    }
    return status;
  }

 private:
  const int fd_;
  const bool direct_;
  const std::string path_;
  std::atomic<uint64_t> bytes_read_{0};
};

}  // namespace

absl::StatusOr<std::unique_ptr<BlockReader>> NewPreadReader(int fd, bool direct,
                                                            const std::string& path) {
  return std::make_unique<PreadReader>(fd, direct, path);
}

}  // namespace shoal::storage::internal

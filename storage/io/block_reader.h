// BlockReader reads page-aligned ranges of one file with O_DIRECT, through io_uring (registered
// buffers and file, one submission per batch, a bounded number in flight) or plain pread(2).
// Both backends return identical bytes and identical errors for the same requests.
//
//   SHOAL_ASSIGN_OR_RETURN(auto reader, BlockReader::Open(path, IoBackend::kAuto));
//   std::vector<ReadRequest> reqs = {{0, 4096}, {8192, 8192}};
//   SHOAL_RETURN_IF_ERROR(reader->ReadBatch(reqs, [&](size_t i, std::span<const uint8_t> b) {
//     return Use(i, b);   // b is valid only during the call
//   }));
//
// Thread safety: all methods may be called from any number of threads at once. The io_uring
// backend keeps a pool of rings per reader (a thread takes a free ring for the duration of a
// ReadBatch, so there are at most as many rings as concurrent callers, each with its own
// registered buffers); all rings are torn down with the reader.
//
// Buffers (io_uring): each ring owns one registered arena cut into slots of one size, the
// smallest power of two >= the largest request seen (>= 16 KiB); the arena grows (and is
// re-registered) when a larger request comes, up to 4 MiB per ring: the number of slots, and so
// the reads in flight, is min(max_in_flight, 4 MiB / slot). Requests over 1 MiB are read with a
// plain IORING_OP_READ into an ordinary aligned buffer. Where the kernel refuses to pin the arena
// (RLIMIT_MEMLOCK), unregistered buffers are used the same way.
//
// O_DIRECT: where the file system refuses it (EINVAL, e.g. some tmpfs), the file is opened
// without it and backend() says "pread-buffered" / "io_uring-buffered".
#ifndef SHOAL_STORAGE_IO_BLOCK_READER_H_
#define SHOAL_STORAGE_IO_BLOCK_READER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shoal::storage {

enum class IoBackend { kAuto, kIoUring, kPread };

inline constexpr size_t kPageSize = 4096;

// One read: `length` bytes at `offset`; both multiples of kPageSize, length > 0.
struct ReadRequest {
  uint64_t offset = 0;
  uint32_t length = 0;
};

class BlockReader {
 public:
  using ReadCallback = std::function<absl::Status(size_t index, std::span<const uint8_t> bytes)>;

  // Opens `path` for reading. kAuto: io_uring when the kernel allows it, else pread (logs
  // nothing; backend() says which). kIoUring: Unavailable when the kernel refuses io_uring
  // (or the environment variable SHOAL_IO_URING=off says to act as if it did).
  // NotFound when the file does not exist; Internal for other open errors.
  // max_in_flight (1..4096) bounds the reads one ReadBatch keeps in flight (io_uring).
  static absl::StatusOr<std::unique_ptr<BlockReader>> Open(const std::string& path,
                                                           IoBackend backend,
                                                           uint32_t max_in_flight = 64);
  virtual ~BlockReader() = default;

  // "io_uring" or "pread" ("-buffered" appended when O_DIRECT was refused).
  virtual std::string backend() const = 0;
  virtual const std::string& path() const = 0;

  // Issues all requests (io_uring: in one submission when they fit max_in_flight, else refilling
  // as completions arrive) and calls on_read(i, bytes) for request i as each completes, in any
  // order, on the calling thread. `bytes` is valid only during the call.
  // Errors: InvalidArgument for a misaligned or empty request (nothing is read);
  // DataLoss "PATH: read at offset OFF length LEN: short read, got N bytes (past end of file)";
  // Unavailable (EIO) or Internal (other errno) naming path and offset. After an error no new
  // reads start; in-flight reads drain; the error of the lowest-indexed failed request is
  // returned (the same for both backends). An error returned by on_read stops the batch the
  // same way and is returned unless an I/O error was seen first.
  virtual absl::Status ReadBatch(std::span<const ReadRequest> requests,
                                 const ReadCallback& on_read) = 0;

  // Bytes read through this reader since open (for stats).
  virtual uint64_t bytes_read() const = 0;
};

namespace internal {
// Backend factories behind BlockReader::Open (fd is owned by the reader).
absl::StatusOr<std::unique_ptr<BlockReader>> NewPreadReader(int fd, bool direct,
                                                            const std::string& path);
// Unavailable when io_uring cannot be set up; the fd is not closed then.
absl::StatusOr<std::unique_ptr<BlockReader>> NewUringReader(int fd, bool direct,
                                                            const std::string& path,
                                                            uint32_t max_in_flight);
// Shared by both backends so their errors are identical.
absl::Status ValidateRequests(std::span<const ReadRequest> requests);
absl::Status ShortReadError(const std::string& path, const ReadRequest& r, uint64_t got);
absl::Status ErrnoError(const std::string& path, const ReadRequest& r, int err);
// An aligned (kPageSize) heap buffer.
struct AlignedFree {
  void operator()(uint8_t* p) const;
};
using AlignedBuffer = std::unique_ptr<uint8_t[], AlignedFree>;
AlignedBuffer AllocateAligned(size_t bytes);
}  // namespace internal

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_IO_BLOCK_READER_H_

// The io_uring BlockReader. See block_reader.h for the buffer scheme; here, why:
// - One arena per ring, registered once (re-registered only when it grows), so a batch costs
//   one io_uring_submit_and_wait per wave of completions and no per-read pinning.
// - Rings are pooled per reader rather than bound to threads, so a reentrant ReadBatch (from
//   on_read) or a thread that goes away never strands a ring, and ~BlockReader frees them all.
//   That rules out IORING_SETUP_SINGLE_ISSUER (a ring may move between threads).
// - No SQPOLL: it would burn one of two cores.
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "storage/io/block_reader.h"

namespace shoal::storage::internal {
namespace {

constexpr size_t kMinSlot = 16 << 10;
constexpr size_t kMaxSlot = 1 << 20;
constexpr size_t kMaxArena = 4 << 20;

// One read in flight.
struct Op {
  size_t index = 0;
  uint8_t* buf = nullptr;
  uint32_t done = 0;
  int64_t slot = -1;  // -1: `own` holds the buffer.
  AlignedBuffer own;
};

struct Ring {
  io_uring ring{};
  bool initialized = false;
  bool file_registered = false;
  bool buffers_registered = false;
  AlignedBuffer arena;
  size_t slot_bytes = 0;
  std::vector<uint32_t> free_slots;
  std::vector<Op> ops;  // max_in_flight of them, reused by every batch.
  std::vector<uint32_t> free_ops;

  ~Ring() {
    if (initialized) io_uring_queue_exit(&ring);
  }
};

absl::StatusOr<std::unique_ptr<Ring>> NewRingFor(int fd, uint32_t max_in_flight) {
  auto ring = std::make_unique<Ring>();
  const unsigned entries = std::bit_ceil(max_in_flight);
  int rc = io_uring_queue_init(entries, &ring->ring, IORING_SETUP_COOP_TASKRUN);
  if (rc == -EINVAL) rc = io_uring_queue_init(entries, &ring->ring, 0);  // Kernel < 5.19.
  if (rc < 0) {
    return absl::UnavailableError(
        absl::StrCat("io_uring_queue_init(", entries, "): ", std::strerror(-rc)));
  }
  ring->initialized = true;
  ring->ops.resize(max_in_flight);
  ring->file_registered = io_uring_register_files(&ring->ring, &fd, 1) == 0;
  return ring;
}

struct BatchRun;

class UringReader final : public BlockReader {
 public:
  UringReader(int fd, bool direct, std::string path, uint32_t max_in_flight)
      : fd_(fd), direct_(direct), path_(std::move(path)), max_in_flight_(max_in_flight) {}
  ~UringReader() override {
    free_rings_.clear();
    ::close(fd_);
  }

  std::string backend() const override { return direct_ ? "io_uring" : "io_uring-buffered"; }
  const std::string& path() const override { return path_; }
  uint64_t bytes_read() const override { return bytes_read_.load(std::memory_order_relaxed); }

  absl::StatusOr<std::unique_ptr<Ring>> NewRing() const { return NewRingFor(fd_, max_in_flight_); }

  void ReleaseRing(std::unique_ptr<Ring> ring) {
    absl::MutexLock lock(&mu_);
    free_rings_.push_back(std::move(ring));
  }

  absl::Status ReadBatch(std::span<const ReadRequest> requests,
                         const ReadCallback& on_read) override;

 private:
  absl::StatusOr<std::unique_ptr<Ring>> AcquireRing() {
    {
      absl::MutexLock lock(&mu_);
      if (!free_rings_.empty()) {
        auto ring = std::move(free_rings_.back());
        free_rings_.pop_back();
        return ring;
      }
    }
    return NewRing();
  }

  // Submits the queued reads and waits for one completion at least. False (with run.io_error
  // set) when the ring failed: it must then be abandoned.
  bool SubmitAndWait(BatchRun& run) const;
  // Handles every completion there is: requeues the rest of a partial read, records an error,
  // or hands the bytes to on_read, then frees the op.
  void Reap(BatchRun& run, const ReadCallback& on_read);

  // Makes the ring's slots at least `bytes` long (no reads may be in flight).
  void EnsureSlots(Ring& r, size_t bytes) const {
    if (r.slot_bytes >= bytes && r.arena) return;
    size_t slot = std::max(kMinSlot, std::bit_ceil(bytes));
    size_t slots = std::clamp<size_t>(kMaxArena / slot, 1, max_in_flight_);
    if (r.buffers_registered) io_uring_unregister_buffers(&r.ring);
    r.arena = AllocateAligned(slot * slots);
    r.slot_bytes = slot;
    r.free_slots.clear();
    for (size_t i = slots; i-- > 0;) r.free_slots.push_back(static_cast<uint32_t>(i));
    iovec iov{r.arena.get(), slot * slots};
    r.buffers_registered = io_uring_register_buffers(&r.ring, &iov, 1) == 0;
  }

  const int fd_;
  const bool direct_;
  const std::string path_;
  const uint32_t max_in_flight_;
  std::atomic<uint64_t> bytes_read_{0};
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Ring>> free_rings_ ABSL_GUARDED_BY(mu_);
};

void PrepRead(Ring& r, Op& op, const ReadRequest& req, uint64_t user_data) {
  io_uring_sqe* sqe = io_uring_get_sqe(&r.ring);  // Never null: SQ >= ops in flight.
  const uint32_t len = req.length - op.done;
  const uint64_t off = req.offset + op.done;
  uint8_t* dst = op.buf + op.done;
  const int fd = r.file_registered ? 0 : -1;
  if (op.slot >= 0 && r.buffers_registered) {
    io_uring_prep_read_fixed(sqe, fd, dst, len, off, 0);
  } else {
    io_uring_prep_read(sqe, fd, dst, len, off);
  }
  io_uring_sqe_set_data64(sqe, user_data);
  if (r.file_registered) sqe->flags |= IOSQE_FIXED_FILE;
}

// One ReadBatch call on one ring: which requests have been handed out, which ops are in flight,
// and the error to return (the I/O error of the lowest failed request, else the callback's).
struct BatchRun {
  BatchRun(Ring& ring, std::span<const ReadRequest> reqs) : r(ring), requests(reqs) {
    r.free_ops.clear();
    for (size_t i = std::min(r.ops.size(), requests.size()); i-- > 0;) {
      r.free_ops.push_back(static_cast<uint32_t>(i));
    }
  }

  // Hands requests to free ops (and arena slots, or a buffer of their own when a request is
  // longer than a slot) and queues their reads, until ops or slots run out or the batch stops.
  void Fill() {
    while (!stop && next < requests.size() && !r.free_ops.empty()) {
      const ReadRequest& q = requests[next];
      const bool fits = q.length <= r.slot_bytes;
      if (fits && r.free_slots.empty()) break;
      const uint32_t id = r.free_ops.back();
      r.free_ops.pop_back();
      Op& op = r.ops[id];
      op.index = next;
      op.done = 0;
      if (fits) {
        op.slot = r.free_slots.back();
        r.free_slots.pop_back();
        op.buf = r.arena.get() + static_cast<size_t>(op.slot) * r.slot_bytes;
      } else {
        op.slot = -1;
        op.own = AllocateAligned(q.length);
        op.buf = op.own.get();
      }
      PrepRead(r, op, q, id);
      ++in_flight;
      ++next;
    }
  }

  void Release(uint32_t id) {
    Op& op = r.ops[id];
    if (op.slot >= 0) r.free_slots.push_back(static_cast<uint32_t>(op.slot));
    op.own.reset();
    op.slot = -1;
    r.free_ops.push_back(id);
    --in_flight;
  }

  void Fail(size_t index, absl::Status s) {
    if (index < io_error_index) {
      io_error_index = index;
      io_error = std::move(s);
    }
    stop = true;
  }

  Ring& r;
  const std::span<const ReadRequest> requests;
  size_t next = 0;
  size_t in_flight = 0;
  size_t io_error_index = std::numeric_limits<size_t>::max();
  absl::Status io_error;
  absl::Status cb_error;
  bool stop = false;
};

absl::Status UringReader::ReadBatch(std::span<const ReadRequest> requests,
                                    const ReadCallback& on_read) {
  if (absl::Status s = ValidateRequests(requests); !s.ok()) return s;
  if (requests.empty()) return absl::OkStatus();
  auto acquired = AcquireRing();
  if (!acquired.ok()) return acquired.status();
  std::unique_ptr<Ring> ring = *std::move(acquired);
  uint32_t largest = 0;
  for (const ReadRequest& q : requests) largest = std::max(largest, q.length);
  EnsureSlots(*ring, std::min<size_t>(largest, kMaxSlot));

  BatchRun run(*ring, requests);
  bool ring_broken = false;
  while (true) {
    run.Fill();
    if (run.in_flight == 0) break;
    if (!SubmitAndWait(run)) {
      ring_broken = true;
      break;
    }
    Reap(run, on_read);
  }
  if (ring_broken) {
    // The ring is in an unknown state. Abandon it and leak its buffers rather than free
    // memory the kernel might still write into.
    for (Op& op : ring->ops) (void)op.own.release();
    (void)ring->arena.release();
    ring.reset();
  } else {
    ReleaseRing(std::move(ring));
  }
  if (!run.cb_error.ok()) return run.cb_error;
  return run.io_error;
}

bool UringReader::SubmitAndWait(BatchRun& run) const {
  int rc;
  do {
    rc = io_uring_submit_and_wait(&run.r.ring, 1);
  } while (rc == -EINTR || rc == -EAGAIN);
  if (rc < 0 && rc != -EBUSY) {  // EBUSY: completions to reap first; the loop comes back.
    run.io_error =
        absl::InternalError(absl::StrCat(path_, ": io_uring_submit: ", std::strerror(-rc)));
    return false;
  }
  return true;
}

void UringReader::Reap(BatchRun& run, const ReadCallback& on_read) {
  Ring& r = run.r;
  io_uring_cqe* cqe;
  unsigned head, seen = 0;
  io_uring_for_each_cqe(&r.ring, head, cqe) {
    ++seen;
    const uint32_t id = static_cast<uint32_t>(io_uring_cqe_get_data64(cqe));
    Op& op = r.ops[id];
    const ReadRequest& q = run.requests[op.index];
    const int res = cqe->res;
    if (res == -EAGAIN || res == -EINTR) {
      PrepRead(r, op, q, id);
      continue;
    }
    if (res < 0) {
      run.Fail(op.index, ErrnoError(path_, q, -res));
      run.Release(id);
      continue;
    }
    op.done += static_cast<uint32_t>(res);
    bytes_read_.fetch_add(static_cast<uint64_t>(res), std::memory_order_relaxed);
    if (op.done < q.length) {
      // Only a read ending at a page boundary can be continued (see pread_reader.cc).
      if (res > 0 && op.done % kPageSize == 0) {
        PrepRead(r, op, q, id);
        continue;
      }
      run.Fail(op.index, ShortReadError(path_, q, op.done));
      run.Release(id);
      continue;
    }
    if (!run.stop) {
      absl::Status s = on_read(op.index, std::span<const uint8_t>(op.buf, q.length));
      if (!s.ok()) {
        if (run.cb_error.ok() && run.io_error.ok()) run.cb_error = std::move(s);
        run.stop = true;
      }
    }
    run.Release(id);
  }
  io_uring_cq_advance(&r.ring, seen);
}

}  // namespace

absl::StatusOr<std::unique_ptr<BlockReader>> NewUringReader(int fd, bool direct,
                                                            const std::string& path,
                                                            uint32_t max_in_flight) {
  // The first ring is made here so that Open learns whether the kernel allows io_uring.
  absl::StatusOr<std::unique_ptr<Ring>> ring = NewRingFor(fd, max_in_flight);
  if (!ring.ok()) return ring.status();
  auto reader = std::make_unique<UringReader>(fd, direct, path, max_in_flight);
  reader->ReleaseRing(*std::move(ring));
  return reader;
}

}  // namespace shoal::storage::internal

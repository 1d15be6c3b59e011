// IngestBudget: bytes of Ingest batches being applied at once, over all streams, and the limit
// above which a stream answers "retry later" (IngestResponse.retry_after_ms) instead of
// applying a batch. A batch is always admitted when nothing else is in flight, so a single
// batch larger than the budget still makes progress.
//
//   if (!budget.TryAcquire(bytes)) { ...ask the client to back off...; }
//   ... apply ...
//   budget.Release(bytes);
//
// Thread-safe (lock-free).
#ifndef SHOAL_RPC_INGEST_BUDGET_H_
#define SHOAL_RPC_INGEST_BUDGET_H_

#include <atomic>
#include <cstdint>

namespace shoal::rpc {

class IngestBudget {
 public:
  explicit IngestBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}

  bool TryAcquire(uint64_t bytes) {
    uint64_t current = inflight_.load(std::memory_order_relaxed);
    do {
      if (current > 0 && current + bytes > limit_) return false;
    } while (!inflight_.compare_exchange_weak(current, current + bytes, std::memory_order_acq_rel));
    return true;
  }
  void Release(uint64_t bytes) { inflight_.fetch_sub(bytes, std::memory_order_acq_rel); }

  uint64_t inflight() const { return inflight_.load(std::memory_order_relaxed); }
  uint64_t limit() const { return limit_; }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> inflight_{0};
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_INGEST_BUDGET_H_

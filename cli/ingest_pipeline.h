// The hand-off between `shoal ingest`'s reader thread and its sender threads: a bounded queue
// of batches and the first error, which stops everyone. Thread-safe.
#ifndef SHOAL_CLI_INGEST_PIPELINE_H_
#define SHOAL_CLI_INGEST_PIPELINE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "shoal/v1/vector_service.pb.h"

namespace shoal::cli {

struct Batch {
  uint64_t first = 0;  // row number of request.records(0)
  ::shoal::v1::UpsertRequest request;
};

class Pipeline {
 public:
  explicit Pipeline(size_t capacity) : capacity_(capacity) {}

  // Blocks while the queue is full; false when the pipeline failed (stop producing).
  bool Push(Batch batch) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &Pipeline::HasRoomOrFailed));
    if (!error_.ok()) return false;
    queue_.push_back(std::move(batch));
    return true;
  }
  // No more batches will come.
  void Close() {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }
  // The next batch; with `wait` blocks until there is one. nullopt when there is none now
  // (`wait` false), or when the queue is closed and drained, or failed (then *done is set).
  std::optional<Batch> Pop(bool wait, bool* done) {
    absl::MutexLock lock(&mu_);
    if (wait) mu_.Await(absl::Condition(this, &Pipeline::HasBatchOrEnded));
    *done = !error_.ok() || (closed_ && queue_.empty());
    if (!error_.ok() || queue_.empty()) return std::nullopt;
    Batch batch = std::move(queue_.front());
    queue_.pop_front();
    return batch;
  }
  void Fail(const absl::Status& status) {
    absl::MutexLock lock(&mu_);
    if (error_.ok()) error_ = status;
  }
  absl::Status error() {
    absl::MutexLock lock(&mu_);
    return error_;
  }

 private:
  bool HasRoomOrFailed() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return queue_.size() < capacity_ || !error_.ok();
  }
  bool HasBatchOrEnded() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || closed_ || !error_.ok();
  }

  const size_t capacity_;
  absl::Mutex mu_;
  std::deque<Batch> queue_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::cli

#endif  // SHOAL_CLI_INGEST_PIPELINE_H_

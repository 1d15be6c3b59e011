// RetryBackoff: how long background index maintenance waits after a failed round before it
// tries the same work again — the retry policy taken out of the maintenance loop, as RocksDB's
// db/error_handler.h takes background-error handling out of DBImpl.
//
// A failed maintenance step (an I/O error: EIO, ENOSPC) changes nothing a reader sees and leaves
// the updater usable (index/spann/spann_updater.h), so the policy is simply to retry: 200 ms after
// the first failure, twice as long after each further one, up to 3.2 s; a success resets it. The
// caller cuts a wait short when a flush asks for the work at once.
//
//   RetryBackoff backoff;
//   absl::Duration wait = backoff.OnRound(status);   // zero after a success
//   if (wait > absl::ZeroDuration()) WaitForFlushOrClose(wait);
//
// Thread safety: none; one maintenance thread owns it.
#ifndef SHOAL_DB_RETRY_BACKOFF_H_
#define SHOAL_DB_RETRY_BACKOFF_H_

#include <algorithm>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace shoal::db {

class RetryBackoff {
 public:
  static constexpr absl::Duration kFirstWait = absl::Milliseconds(200);
  static constexpr int kMaxDoublings = 4;

  // Records a round's outcome; returns the wait before the next round (zero after a success).
  absl::Duration OnRound(const absl::Status& round) {
    if (round.ok()) {
      failures_ = 0;
      return absl::ZeroDuration();
    }
    ++failures_;
    return kFirstWait * (1 << std::min(failures_ - 1, kMaxDoublings));
  }
  // Consecutive failed rounds.
  int failures() const { return failures_; }

 private:
  int failures_ = 0;
};

}  // namespace shoal::db

#endif  // SHOAL_DB_RETRY_BACKOFF_H_

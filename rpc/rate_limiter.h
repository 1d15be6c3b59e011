// RateLimiter: a token bucket per caller (the API key's name): each request takes one token,
// buckets refill at `requests_per_second` up to `burst` tokens. A request finding its bucket
// empty is refused with RESOURCE_EXHAUSTED saying when to retry.
//
//   RateLimiter limiter(/*requests_per_second=*/100, /*burst=*/200);
//   if (absl::Status s = limiter.Admit("ingest", absl::Now()); !s.ok()) return s;
//
// requests_per_second == 0 turns limiting off. Thread-safe.
#ifndef SHOAL_RPC_RATE_LIMITER_H_
#define SHOAL_RPC_RATE_LIMITER_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace shoal::rpc {

class RateLimiter {
 public:
  // burst 0 = max(1, requests_per_second).
  RateLimiter(double requests_per_second, double burst);

  // Takes a token from `caller`'s bucket at time `now`, or RESOURCE_EXHAUSTED.
  absl::Status Admit(const std::string& caller, absl::Time now);

  bool enabled() const { return rate_ > 0; }

 private:
  struct Bucket {
    double tokens = 0;
    absl::Time updated;
  };
  const double rate_;
  const double burst_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Bucket> buckets_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_RATE_LIMITER_H_

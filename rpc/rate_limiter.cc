#include "rpc/rate_limiter.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace shoal::rpc {

RateLimiter::RateLimiter(double requests_per_second, double burst)
    : rate_(std::max(0.0, requests_per_second)),
      burst_(burst > 0 ? burst : std::max(1.0, requests_per_second)) {}

absl::Status RateLimiter::Admit(const std::string& caller, absl::Time now) {
  if (rate_ <= 0) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = buckets_.try_emplace(caller);
  Bucket& bucket = it->second;
  if (inserted) {
    bucket.tokens = burst_;
  } else {
    const double elapsed = std::max(0.0, absl::ToDoubleSeconds(now - bucket.updated));
    bucket.tokens = std::min(burst_, bucket.tokens + elapsed * rate_);
  }
  bucket.updated = now;
  if (bucket.tokens >= 1) {
    bucket.tokens -= 1;
    return absl::OkStatus();
  }
  const double wait_ms = std::ceil((1 - bucket.tokens) / rate_ * 1000);
  return absl::ResourceExhaustedError(absl::StrCat("rate limit: key \"", caller, "\" is over ",
                                                   rate_, " requests/s (burst ", burst_,
                                                   "); retry in ", wait_ms, " ms"));
}

}  // namespace shoal::rpc

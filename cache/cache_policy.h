// CachePolicy (shoal/cache.h) as the engine uses it: validation, the defaults filled in, the
// load-adaptive band, and the policy's durable encoding.
//
//   SHOAL_RETURN_IF_ERROR(cache::ValidatePolicy(policy, "policy"));
//   CachePolicy p = cache::Resolve(policy);          // NaN / -1 limits made explicit
//   double t = cache::ThresholdUnderLoad(p, 0.95);   // in [p.min_threshold, p.threshold]
//
// The band, exactly: with f = clamp((load - load_high) / (1 - load_high), 0, 1),
//   threshold(load) = threshold - f * (threshold - min_threshold)
//   ttl(load)       = ttl + f * (max_ttl - ttl)          (ttl 0: no expiry at any load)
// so f = 0 (load <= load_high) gives the policy's own values and f = 1 (load 1) the limits;
// neither can leave [min_threshold, threshold] or [ttl, max_ttl]. Pure functions; thread-safe.
#ifndef SHOAL_CACHE_CACHE_POLICY_H_
#define SHOAL_CACHE_CACHE_POLICY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shoal/cache.h"

namespace shoal::cache {

// InvalidArgument naming `field`.<member> for a value out of range (see shoal/cache.h).
absl::Status ValidatePolicy(const CachePolicy& policy, std::string_view field);
// "" (the default policy) or a name matching [A-Za-z_][A-Za-z0-9_-]{0,63}; InvalidArgument
// naming `field` otherwise.
absl::Status ValidateCategory(std::string_view category, std::string_view field);
// The policy with min_threshold, max_threshold and max_ttl_seconds made explicit.
CachePolicy Resolve(const CachePolicy& policy);

// f in [0, 1] (0 at or below load_high). `load` outside [0, 1] is clamped.
double LoadFactor(const CachePolicy& resolved, double load);
// `share` in [0, 1] (clamped) is how much of the band may be used: f becomes share * f
// (threshold_learning.h: the budgeted band).
double ThresholdUnderLoad(const CachePolicy& resolved, double load, double share = 1);
// TTL in microseconds at that load; 0 = no expiry.
int64_t TtlMicrosUnderLoad(const CachePolicy& resolved, double load, double share = 1);
// The longest TTL any load can give (max_ttl); 0 = no expiry. Entries older are swept.
int64_t HardTtlMicros(const CachePolicy& resolved);

std::string EncodePolicy(const CachePolicy& policy);
// DataLoss naming `where` when the bytes are not a policy.
absl::StatusOr<CachePolicy> DecodePolicy(std::string_view bytes, std::string_view where);

}  // namespace shoal::cache

#endif  // SHOAL_CACHE_CACHE_POLICY_H_

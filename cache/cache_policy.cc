#include "cache/cache_policy.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "storage/records/record_codec.h"

namespace shoal {

const char* CacheEvictionName(CacheEviction eviction) {
  switch (eviction) {
    case CacheEviction::kLru:
      return "lru";
    case CacheEviction::kLfu:
      return "lfu";
    case CacheEviction::kFifo:
      return "fifo";
  }
  return "unknown";
}

namespace cache {
namespace {

constexpr uint8_t kPolicyVersion = 1;
constexpr int64_t kMaxTtlSeconds = int64_t{100} * 365 * 86400;  // keeps microseconds in int64

absl::Status Bad(std::string_view field, std::string_view member, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(field), ".", std::string(member), ": ", std::string(why)));
}

bool InUnit(double v) { return std::isfinite(v) && v >= 0 && v <= 1; }

void PutDouble(std::string* out, double v) {
  storage::PutFixed64BE(out, std::bit_cast<uint64_t>(v));
}
double GetDouble(const char* p) { return std::bit_cast<double>(storage::GetFixed64BE(p)); }

}  // namespace

absl::Status ValidateCategory(std::string_view c, std::string_view field) {
  bool ok = c.size() <= kMaxNameBytes;
  for (size_t i = 0; ok && i < c.size(); ++i) {
    const char ch = c[i];
    ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_' ||
         (i > 0 && ((ch >= '0' && ch <= '9') || ch == '-'));
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(field), ": must be \"\" or match [A-Za-z_][A-Za-z0-9_-]{0,63}"));
}

CachePolicy Resolve(const CachePolicy& policy) {
  CachePolicy p = policy;
  if (std::isnan(p.min_threshold)) p.min_threshold = p.threshold;
  if (std::isnan(p.max_threshold)) p.max_threshold = 1.0;
  if (p.max_ttl_seconds < 0) p.max_ttl_seconds = p.ttl_seconds;
  return p;
}

absl::Status ValidatePolicy(const CachePolicy& policy, std::string_view field) {
  const CachePolicy p = Resolve(policy);
  if (!InUnit(p.threshold)) return Bad(field, "threshold", "must be a similarity in [0, 1]");
  if (!InUnit(p.min_threshold) || p.min_threshold > p.threshold) {
    return Bad(field, "min_threshold", "must be in [0, threshold]");
  }
  if (!InUnit(p.max_threshold) || p.max_threshold < p.threshold) {
    return Bad(field, "max_threshold", "must be in [threshold, 1]");
  }
  if (p.ttl_seconds < 0 || p.ttl_seconds > kMaxTtlSeconds) {
    return Bad(field, "ttl_seconds", "must be in [0, 100 years] (0 = no expiry)");
  }
  if (p.max_ttl_seconds > kMaxTtlSeconds || p.max_ttl_seconds < p.ttl_seconds) {
    return Bad(field, "max_ttl_seconds", "must be at least ttl_seconds and at most 100 years");
  }
  if (p.ttl_seconds == 0 && p.max_ttl_seconds != 0) {
    return Bad(field, "max_ttl_seconds", "must be 0 when ttl_seconds is 0 (no expiry)");
  }
  if (!std::isfinite(p.load_high) || p.load_high < 0 || p.load_high >= 1) {
    return Bad(field, "load_high", "must be in [0, 1)");
  }
  if (!std::isfinite(p.target_false_hit_rate) || p.target_false_hit_rate < 0 ||
      p.target_false_hit_rate >= 1) {
    return Bad(field, "target_false_hit_rate", "must be in [0, 1) (0 = no learning)");
  }
  const int e = static_cast<int>(p.eviction);
  if (e < 0 || e > 2) return Bad(field, "eviction", "must be lru, lfu or fifo");
  return absl::OkStatus();
}

double LoadFactor(const CachePolicy& p, double load) {
  if (!std::isfinite(load)) return 0;
  load = std::clamp(load, 0.0, 1.0);
  if (load <= p.load_high) return 0;
  return std::clamp((load - p.load_high) / (1.0 - p.load_high), 0.0, 1.0);
}

double ThresholdUnderLoad(const CachePolicy& p, double load, double share) {
  const double f = LoadFactor(p, load) * std::clamp(share, 0.0, 1.0);
  return std::clamp(p.threshold - f * (p.threshold - p.min_threshold), p.min_threshold,
                    p.threshold);
}

int64_t TtlMicrosUnderLoad(const CachePolicy& p, double load, double share) {
  if (p.ttl_seconds == 0) return 0;
  const double f = LoadFactor(p, load) * std::clamp(share, 0.0, 1.0);
  const double ttl = static_cast<double>(p.ttl_seconds) +
                     f * static_cast<double>(p.max_ttl_seconds - p.ttl_seconds);
  return std::clamp(static_cast<int64_t>(ttl * 1e6), p.ttl_seconds * int64_t{1000000},
                    p.max_ttl_seconds * int64_t{1000000});
}

int64_t HardTtlMicros(const CachePolicy& p) { return p.max_ttl_seconds * int64_t{1000000}; }

std::string EncodePolicy(const CachePolicy& p) {
  std::string out(1, static_cast<char>(kPolicyVersion));
  out.push_back(p.enabled ? 1 : 0);
  out.push_back(p.refresh_ttl_on_hit ? 1 : 0);
  out.push_back(static_cast<char>(p.eviction));
  PutDouble(&out, p.threshold);
  storage::PutFixed64BE(&out, static_cast<uint64_t>(p.ttl_seconds));
  storage::PutFixed64BE(&out, p.max_entries);
  storage::PutFixed64BE(&out, p.max_bytes);
  PutDouble(&out, p.min_threshold);
  storage::PutFixed64BE(&out, static_cast<uint64_t>(p.max_ttl_seconds));
  PutDouble(&out, p.load_high);
  PutDouble(&out, p.target_false_hit_rate);
  PutDouble(&out, p.max_threshold);
  return out;
}

absl::StatusOr<CachePolicy> DecodePolicy(std::string_view b, std::string_view where) {
  constexpr size_t kSize = 4 + 9 * 8;
  if (b.size() != kSize || b[0] != kPolicyVersion || static_cast<uint8_t>(b[3]) > 2) {
    return absl::DataLossError(absl::StrCat("cache policy row ", std::string(where),
                                            " is corrupt (", b.size(), " bytes)"));
  }
  CachePolicy p;
  p.enabled = b[1] != 0;
  p.refresh_ttl_on_hit = b[2] != 0;
  p.eviction = static_cast<CacheEviction>(b[3]);
  const char* d = b.data() + 4;
  p.threshold = GetDouble(d);
  p.ttl_seconds = static_cast<int64_t>(storage::GetFixed64BE(d + 8));
  p.max_entries = storage::GetFixed64BE(d + 16);
  p.max_bytes = storage::GetFixed64BE(d + 24);
  p.min_threshold = GetDouble(d + 32);
  p.max_ttl_seconds = static_cast<int64_t>(storage::GetFixed64BE(d + 40));
  p.load_high = GetDouble(d + 48);
  p.target_false_hit_rate = GetDouble(d + 56);
  p.max_threshold = GetDouble(d + 64);
  return p;
}

}  // namespace cache
}  // namespace shoal

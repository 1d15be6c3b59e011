#include "db/tenant_stats.h"

#include <algorithm>
#include <cmath>

namespace shoal::db {

int TenantStats::BucketOf(double micros) {
  if (!(micros > 1)) return 0;  // NaN too
  const double b = std::floor(std::log2(micros) * kBucketsPerOctave);
  return b >= kBuckets - 1 ? kBuckets - 1 : static_cast<int>(b);
}

double TenantStats::MicrosOf(int bucket) { return std::exp2((bucket + 0.5) / kBucketsPerOctave); }

TenantStats::Recent& TenantStats::MakeRecent() {
  if (recent_ == nullptr) recent_ = std::make_unique<Recent>();
  return *recent_;
}

bool TenantStats::TakeSearchToken(double rate, absl::Time now) {
  if (rate <= 0) return true;
  absl::MutexLock lock(&mu_);
  Recent& r = MakeRecent();
  const double burst = std::max(rate, 1.0);
  if (!r.started) {
    r.tokens = burst;
    r.started = true;
  } else {
    r.tokens = std::min(burst, r.tokens + absl::ToDoubleSeconds(now - r.last) * rate);
  }
  r.last = now;
  if (r.tokens < 1) return false;
  r.tokens -= 1;
  return true;
}

void TenantStats::RecordSearch(double micros, uint64_t buckets) {
  absl::MutexLock lock(&mu_);
  ++searches_;
  buckets_ += buckets;
  Recent& r = MakeRecent();
  ++r.latencies[BucketOf(micros)];
  if (++r.counted < kWindow) return;
  // A bucket holds at most kWindow (< 2^16) searches between halvings.
  r.counted = 0;
  for (uint16_t& c : r.latencies) {
    c /= 2;
    r.counted += c;
  }
}

void TenantStats::Fill(TenantInfo* info) const {
  std::array<uint16_t, kBuckets> counts;
  {
    absl::MutexLock lock(&mu_);
    info->searches = searches_;
    info->buckets_scanned = buckets_;
    if (recent_ == nullptr) return;
    counts = recent_->latencies;
  }
  uint64_t total = 0;
  for (uint16_t c : counts) total += c;
  if (total == 0) return;
  // The latency of the search ranked floor(q x total) from the fastest (as the window did).
  auto at = [&](double q) {
    const uint64_t rank = std::min(total - 1, static_cast<uint64_t>(q * total));
    uint64_t below = 0;
    for (int b = 0; b < kBuckets; ++b) {
      below += counts[b];
      if (below > rank) return MicrosOf(b);
    }
    return MicrosOf(kBuckets - 1);
  };
  info->search_p50_us = at(0.50);
  info->search_p99_us = at(0.99);
}

size_t TenantStats::HeapBytes() const {
  absl::MutexLock lock(&mu_);
  return recent_ != nullptr ? sizeof(Recent) : 0;
}

}  // namespace shoal::db

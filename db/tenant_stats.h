// A collection's tenants as Collection keeps them in RAM: each tenant's catalog row
// (storage::StoredTenant: id, state, quotas) and its search statistics and rate limit.
//
//   TenantEntry& t = ...;
//   if (!t.stats.TakeSearchToken(t.meta.quotas.max_searches_per_second, absl::Now())) ...;
//   t.stats.RecordSearch(latency_us, buckets_scanned);
//   t.stats.Fill(&info);   // searches, p50 / p99, buckets scanned
//
// Thread safety: TenantStats is thread-safe (its own mutex: searches record into it while they
// hold the collection state's lock shared). TenantEntry::meta is guarded by the collection
// state's lock.
#ifndef SHOAL_DB_TENANT_STATS_H_
#define SHOAL_DB_TENANT_STATS_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "shoal/tenants.h"
#include "storage/records/record_store.h"

namespace shoal::db {

class TenantStats {
 public:
  // The percentiles follow about the most recent kWindow searches (see the histogram below).
  static constexpr size_t kWindow = 4096;
  // Latency buckets: 2^(1/8) wide (a percentile is reported as its bucket's geometric middle,
  // within 4.5% of the latency it stands for), from 1 us up to 2^30 us.
  static constexpr int kBucketsPerOctave = 8;
  static constexpr int kBuckets = 30 * kBucketsPerOctave;

  // A token bucket of `rate` tokens per second and a burst of one second (at least one token);
  // rate <= 0 = unlimited. False when the bucket is empty (the search is refused).
  bool TakeSearchToken(double rate, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_) {
    if (rate <= 0) return true;
    absl::MutexLock lock(&mu_);
    const double burst = std::max(rate, 1.0);
    if (!started_) {
      tokens_ = burst;
      started_ = true;
    } else {
      tokens_ = std::min(burst, tokens_ + absl::ToDoubleSeconds(now - last_) * rate);
    }
    last_ = now;
    if (tokens_ < 1) return false;
    tokens_ -= 1;
    return true;
  }
  void RecordSearch(double micros, uint64_t buckets) ABSL_LOCKS_EXCLUDED(mu_);
  // Fills searches, search_p50_us, search_p99_us and buckets_scanned.
  void Fill(TenantInfo* info) const ABSL_LOCKS_EXCLUDED(mu_);
  // RAM of the latencies kept (the rest is sizeof(TenantStats)).
  size_t HeapBytes() const ABSL_LOCKS_EXCLUDED(mu_);

  // The bucket of a latency, and the latency a bucket stands for.
  static int BucketOf(double micros);
  static double MicrosOf(int bucket);

 private:
  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  double tokens_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_ ABSL_GUARDED_BY(mu_);
  uint64_t searches_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t buckets_ ABSL_GUARDED_BY(mu_) = 0;
  // Searches per latency bucket (480 bytes; a window of kWindow float latencies would take
  // 16 KiB), made on the tenant's first search: most tenants of a large collection are idle and
  // pay a null pointer. When it has counted kWindow searches every count is halved, so older
  // searches weigh less and the percentiles follow the recent ones.
  std::unique_ptr<std::array<uint16_t, kBuckets>> latencies_ ABSL_GUARDED_BY(mu_);
  uint32_t counted_ ABSL_GUARDED_BY(mu_) = 0;  // searches in latencies_ since the last halving
};

struct TenantEntry {
  storage::StoredTenant meta;
  TenantStats stats;
};

}  // namespace shoal::db

#endif  // SHOAL_DB_TENANT_STATS_H_

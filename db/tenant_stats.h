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
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "shoal/tenants.h"
#include "storage/records/record_store.h"

namespace shoal::db {

class TenantStats {
 public:
  // Latencies kept for the percentiles: the most recent searches.
  static constexpr size_t kWindow = 4096;

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
  void RecordSearch(double micros, uint64_t buckets) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    ++searches_;
    buckets_ += buckets;
    if (window_.size() < kWindow) {
      window_.push_back(static_cast<float>(micros));
    } else {
      window_[next_] = static_cast<float>(micros);
      next_ = (next_ + 1) % kWindow;
    }
  }
  // Fills searches, search_p50_us, search_p99_us and buckets_scanned.
  void Fill(TenantInfo* info) const ABSL_LOCKS_EXCLUDED(mu_) {
    std::vector<float> w;
    {
      absl::MutexLock lock(&mu_);
      info->searches = searches_;
      info->buckets_scanned = buckets_;
      w = window_;
    }
    if (w.empty()) return;
    auto at = [&](double q) {
      const size_t i = std::min(w.size() - 1, static_cast<size_t>(q * w.size()));
      std::nth_element(w.begin(), w.begin() + i, w.end());
      return static_cast<double>(w[i]);
    };
    info->search_p50_us = at(0.50);
    info->search_p99_us = at(0.99);
  }

 private:
  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  double tokens_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_ ABSL_GUARDED_BY(mu_);
  uint64_t searches_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t buckets_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<float> window_ ABSL_GUARDED_BY(mu_);
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;
};

struct TenantEntry {
  storage::StoredTenant meta;
  TenantStats stats;
};

}  // namespace shoal::db

#endif  // SHOAL_DB_TENANT_STATS_H_

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
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "shoal/tenants.h"
#include "storage/records/record_store.h"

namespace shoal::db {

class TenantStats {
 public:
  // The percentiles follow about the most recent kWindow searches (see Recent below).
  static constexpr size_t kWindow = 4096;
  // Latency buckets: 2^(1/8) wide (a percentile is reported as its bucket's geometric middle,
  // within 4.5% of the latency it stands for), from 1 us up to 2^30 us.
  static constexpr int kBucketsPerOctave = 8;
  static constexpr int kBuckets = 30 * kBucketsPerOctave;

  // A token bucket of `rate` tokens per second and a burst of one second (at least one token);
  // rate <= 0 = unlimited. False when the bucket is empty (the search is refused).
  bool TakeSearchToken(double rate, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  void RecordSearch(double micros, uint64_t buckets) ABSL_LOCKS_EXCLUDED(mu_);
  // Fills searches, search_p50_us, search_p99_us and buckets_scanned.
  void Fill(TenantInfo* info) const ABSL_LOCKS_EXCLUDED(mu_);
  // RAM beyond sizeof(TenantStats): the recent searches' state, once the tenant searched.
  size_t HeapBytes() const ABSL_LOCKS_EXCLUDED(mu_);

  // The bucket of a latency, and the latency a bucket stands for.
  static int BucketOf(double micros);
  static double MicrosOf(int bucket);

 private:
  // Made on the tenant's first search: most tenants of a large collection are idle and pay a
  // null pointer. Latencies per bucket (480 bytes; a window of kWindow float latencies would
  // take 16 KiB): when it has counted kWindow searches every count is halved, so older searches
  // weigh less and the percentiles follow the recent ones.
  struct Recent {
    bool started = false;  // the token bucket
    double tokens = 0;
    absl::Time last;
    uint32_t counted = 0;  // searches in `latencies` since the last halving
    std::array<uint16_t, kBuckets> latencies{};
  };
  Recent& MakeRecent() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  uint64_t searches_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t buckets_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<Recent> recent_ ABSL_GUARDED_BY(mu_);
};

struct TenantEntry {
  storage::StoredTenant meta;
  TenantStats stats;
};

// The tenants of a collection by name: the entries themselves, looked up by a name without
// copying it (a slot is the entry's pointer: 16 bytes, not a name and a pointer).
struct TenantNameHash {
  using is_transparent = void;
  size_t operator()(std::string_view name) const { return absl::Hash<std::string_view>()(name); }
  size_t operator()(const std::shared_ptr<TenantEntry>& t) const { return (*this)(t->meta.name); }
};
struct TenantNameEq {
  using is_transparent = void;
  static std::string_view NameOf(std::string_view name) { return name; }
  static std::string_view NameOf(const std::shared_ptr<TenantEntry>& t) { return t->meta.name; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return NameOf(a) == NameOf(b);
  }
};
using TenantsByName =
    absl::flat_hash_set<std::shared_ptr<TenantEntry>, TenantNameHash, TenantNameEq>;

}  // namespace shoal::db

#endif  // SHOAL_DB_TENANT_STATS_H_

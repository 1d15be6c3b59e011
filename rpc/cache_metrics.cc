#include "rpc/cache_metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "rpc/db_host.h"
#include "shoal/db.h"

namespace shoal::rpc {
namespace {

using Labels = std::vector<prometheus::ClientMetric::Label>;

prometheus::MetricFamily Family(const std::string& name, const std::string& help,
                                prometheus::MetricType type) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  return f;
}

void Add(prometheus::MetricFamily& f, Labels labels, double value) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  if (f.type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(std::move(m));
}

class CacheCollector final : public prometheus::Collectable {
 public:
  explicit CacheCollector(DbHost* host) : host_(host) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    using T = prometheus::MetricType;
    auto entries = Family("shoal_cache_entries", "Entries per cache and category.", T::Gauge);
    auto bytes = Family("shoal_cache_bytes", "Entry bytes per cache and category.", T::Gauge);
    auto lookups = Family("shoal_cache_lookups_total",
                          "Cache lookups by result (exact_hit, semantic_hit, miss).", T::Counter);
    auto stores = Family("shoal_cache_stores_total", "Entries stored.", T::Counter);
    auto feedback = Family("shoal_cache_feedback_total",
                           "Feedback on hits by verdict (correct, wrong = false hit).", T::Counter);
    auto removals = Family("shoal_cache_removals_total",
                           "Entries removed by reason (evicted_entries, evicted_bytes, expired, "
                           "invalidated).",
                           T::Counter);
    auto offset = Family("shoal_cache_threshold_offset",
                         "Learned threshold offset of the category (similarity units).", T::Gauge);
    auto band_share = Family("shoal_cache_band_share",
                             "Share of the load-adaptive band the category may use (0..1): what "
                             "keeps its false hits within the target rate + 1 point.",
                             T::Gauge);
    auto learned_ttl = Family("shoal_cache_learned_ttl_seconds",
                              "TTL the category learned from stale answers (0: none; the "
                              "policy's TTL applies).",
                              T::Gauge);
    auto quarantined =
        Family("shoal_cache_quarantined",
               "1 when the cache could not be loaded at open and serves nothing.", T::Gauge);
    auto builds =
        Family("shoal_cache_index_builds",
               "Shards whose clustered index is being rebuilt in the background.", T::Gauge);
    auto build_failures = Family("shoal_cache_index_build_failures_total",
                                 "Background index builds that failed since open.", T::Counter);
    auto latency = Family("shoal_cache_lookup_seconds", "Cache lookup latency.", T::Histogram);
    DbHost::Lease lease = host_->Acquire();
    if (lease.ok()) {
      absl::StatusOr<std::vector<CacheInfo>> caches = lease->ListCaches();
      for (const CacheInfo& info : caches.ok() ? *caches : std::vector<CacheInfo>{}) {
        const Labels cache = {{"cache", info.spec.name}};
        Add(quarantined, cache, info.quarantine.empty() ? 0 : 1);
        Add(builds, cache, static_cast<double>(info.index_builds));
        Add(build_failures, cache, static_cast<double>(info.index_build_failures));
        absl::StatusOr<CacheStats> stats = lease->GetCacheStats(info.spec.name);
        if (!stats.ok()) continue;
        const std::string& name = info.spec.name;
        for (const CacheCategoryStats& c : stats->categories) {
          const CacheCounters& k = c.counters;
          const Labels l = {{"cache", name}, {"category", c.category}};
          auto with = [&](const char* key, const char* value) {
            Labels out = l;
            out.push_back({key, value});
            return out;
          };
          Add(entries, l, static_cast<double>(k.entries));
          Add(bytes, l, static_cast<double>(k.bytes));
          Add(lookups, with("result", "exact_hit"), static_cast<double>(k.exact_hits));
          Add(lookups, with("result", "semantic_hit"), static_cast<double>(k.hits - k.exact_hits));
          Add(lookups, with("result", "miss"), static_cast<double>(k.misses));
          Add(stores, l, static_cast<double>(k.stores));
          Add(feedback, with("verdict", "correct"), static_cast<double>(k.correct_reports));
          Add(feedback, with("verdict", "wrong"), static_cast<double>(k.false_hit_reports));
          Add(removals, with("reason", "evicted_entries"),
              static_cast<double>(k.evicted_by_entries));
          Add(removals, with("reason", "evicted_bytes"), static_cast<double>(k.evicted_by_bytes));
          Add(removals, with("reason", "expired"), static_cast<double>(k.expirations));
          Add(removals, with("reason", "invalidated"), static_cast<double>(k.invalidated));
          Add(offset, l, c.threshold_offset);
          Add(band_share, l, c.band_share);
          Add(learned_ttl, l, c.learned_ttl_seconds);
        }
        prometheus::ClientMetric h;
        h.label = {{"cache", name}};
        uint64_t cumulative = 0;
        for (size_t b = 0; b < stats->latency_counts.size(); ++b) {
          cumulative += stats->latency_counts[b];
          const double bound = b < stats->latency_bounds_us.size()
                                   ? stats->latency_bounds_us[b] / 1e6
                                   : std::numeric_limits<double>::infinity();
          h.histogram.bucket.push_back({cumulative, bound});
        }
        h.histogram.sample_count = cumulative;
        h.histogram.sample_sum = stats->latency_sum_us / 1e6;
        latency.metric.push_back(std::move(h));
      }
    }
    return {entries, bytes,      lookups,     stores,      feedback, removals,      offset,
            latency, band_share, learned_ttl, quarantined, builds,   build_failures};
  }

 private:
  DbHost* const host_;
};

}  // namespace

std::shared_ptr<prometheus::Collectable> MakeCacheCollector(DbHost* host) {
  return std::make_shared<CacheCollector>(host);
}

}  // namespace shoal::rpc

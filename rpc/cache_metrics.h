// Prometheus series of the semantic caches, read from the DB (GetCacheStats of every cache)
// when Prometheus scrapes — nothing is recorded on the lookup path:
//   shoal_cache_entries{cache,category}                          gauge
//   shoal_cache_bytes{cache,category}                            gauge
//   shoal_cache_lookups_total{cache,category,result}             counter; result: exact_hit,
//                                                                semantic_hit, miss
//   shoal_cache_stores_total{cache,category}                     counter
//   shoal_cache_feedback_total{cache,category,verdict}           counter; correct, wrong
//   shoal_cache_removals_total{cache,category,reason}            counter; evicted_entries,
//                                                                evicted_bytes, expired,
//                                                                invalidated
//   shoal_cache_threshold_offset{cache,category}                 gauge (learned)
//   shoal_cache_learned_ttl_seconds{cache,category}              gauge (learned; 0 = none)
//   shoal_cache_lookup_seconds{cache}                            histogram
// Partitions are not labels (their number is unbounded); GetCacheStats reports them.
// Thread-safe.
#ifndef SHOAL_RPC_CACHE_METRICS_H_
#define SHOAL_RPC_CACHE_METRICS_H_

#include <memory>

namespace prometheus {
class Collectable;
}  // namespace prometheus

namespace shoal::rpc {

class DbHost;

// `host` is not owned and must outlive the collector.
std::shared_ptr<prometheus::Collectable> MakeCacheCollector(DbHost* host);

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_CACHE_METRICS_H_

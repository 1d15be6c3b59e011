// SemanticCache's private parts, shared by semantic_cache.cc (lookups, stores, feedback) and
// semantic_cache_admin.cc (load, policies, invalidation, sweeps, stats). Not an API.
#ifndef SHOAL_CACHE_SEMANTIC_CACHE_INTERNAL_H_
#define SHOAL_CACHE_SEMANTIC_CACHE_INTERNAL_H_

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include "cache/semantic_cache.h"
#include "cache/shard_index.h"

namespace shoal::cache {

// CacheCounters as atomics, so lookups (under the cache's reader lock) count without a
// writer lock. Each field is exact on its own; a Load() taken while calls run may mix moments.
struct AtomicCounters {
  std::atomic<uint64_t> lookups{0};
  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> exact_hits{0};
  std::atomic<uint64_t> misses{0};
  std::atomic<uint64_t> stores{0};
  std::atomic<uint64_t> false_hit_reports{0};
  std::atomic<uint64_t> correct_reports{0};
  std::atomic<uint64_t> evicted_by_entries{0};
  std::atomic<uint64_t> evicted_by_bytes{0};
  std::atomic<uint64_t> invalidated{0};
  std::atomic<uint64_t> expirations{0};
  std::atomic<uint64_t> entries{0};
  std::atomic<uint64_t> bytes{0};
  CacheCounters Load() const;
};

struct SemanticCache::Category {
  std::string name;
  bool own_policy = false;
  CachePolicy policy;  // resolved: its own, or the cache's default
  CachePolicy raw;     // as set (NaN / -1 defaults kept), for GetPolicy
  // Eviction order (OrderKey, id; lazily: an entry hit since it was ordered sits too early
  // until Victims reorders it) and expiry order (ttl_start_us, id) of its entries.
  std::set<std::pair<uint64_t, uint64_t>> order;
  std::set<std::pair<int64_t, uint64_t>> expiry;
  AtomicCounters counters;
  CategoryLearning learning;
};

struct SemanticCache::Shard {
  Shard(const CachePartition& p, Category* c, size_t dimension, index::Metric metric)
      : partition(p), category(c), index(dimension, metric) {}
  CachePartition partition;
  Category* category;
  ShardIndex index;               // entry id -> vector (exact while small, clustered once large)
  uint64_t saved_generation = 0;  // index.generation() whose model is saved (SaveIndexModel)
  absl::flat_hash_map<std::string, uint64_t> exact;  // prompt hash -> entry id
  AtomicCounters counters;
};

struct SemanticCache::Entry {
  uint64_t id = 0;
  Shard* shard = nullptr;
  std::string prompt_hash;
  uint64_t response_hash = 0;
  int64_t created_us = 0;
  uint64_t bytes = 0;
  EntryMeta meta;  // meta.hits is stale: `hits` counts (PutMeta writes it)
  // Written by hits under the reader lock (lazy LRU/LFU): the LRU tick of the last store or
  // hit, the hit count, the similarity of the last hit.
  std::atomic<uint64_t> last_access{0};
  std::atomic<uint64_t> hits{0};
  std::atomic<float> last_similarity{std::numeric_limits<float>::quiet_NaN()};
  // The key under which it sits in its category's `order` (writer lock): OrderKey as of when
  // it was last ordered; hits since leave it stale until eviction looks at it.
  std::pair<uint64_t, uint64_t> order_key;
};

// Adds n to one counter of a shard and of its category (n may wrap to subtract).
inline void Bump(SemanticCache::Shard* s, std::atomic<uint64_t> AtomicCounters::*field,
                 uint64_t n = 1) {
  (s->counters.*field).fetch_add(n, std::memory_order_relaxed);
  (s->category->counters.*field).fetch_add(n, std::memory_order_relaxed);
}

inline uint64_t Lookups(const SemanticCache::Category& c) {
  return c.counters.lookups.load(std::memory_order_relaxed);
}

// Bytes an entry is charged against its category's max_bytes.
inline uint64_t EntryBytes(size_t dimension, size_t response, size_t prompt_hash) {
  constexpr uint64_t kOverhead = 64;  // metadata, maps, order sets
  return dimension * sizeof(float) + response + prompt_hash + kOverhead;
}

std::string ShardKey(const CachePartition& partition, std::string_view category);
// Appends ShardKey(partition, category) to *key (lookups reuse a buffer).
void AppendShardKey(const CachePartition& partition, std::string_view category, std::string* key);

}  // namespace shoal::cache

#endif  // SHOAL_CACHE_SEMANTIC_CACHE_INTERNAL_H_

// ByteLruCache: a thread-safe LRU cache of std::shared_ptr<const V> by key, bounded by bytes.
// Each entry is charged a caller-given size; Insert evicts least-recently-used entries to stay
// within the budget. Used for decoded posting lists and vector pages.
//
//   ByteLruCache<uint64_t, std::vector<uint8_t>> cache(256 << 20);
//   if (auto hit = cache.Lookup(posting_id)) return *hit;
//   auto value = std::make_shared<const std::vector<uint8_t>>(ReadIt());
//   cache.Insert(posting_id, value, value->size());
//
// Sharding (as RocksDB's LRUCache): the cache is split into shards by key hash, each with its
// own absl::Mutex, LRU list and budget_bytes/shards bytes; so LRU order is per shard, and an
// entry larger than a shard's budget is not cached. The shard count is reduced (to a power of
// two) so that each shard gets at least 1 MiB; budgets under 2 MiB have one shard, i.e. exact
// LRU. Values stay alive while a caller holds them even after eviction.
//
// Thread safety: every method may be called from any number of threads.
#ifndef SHOAL_STORAGE_CACHES_LRU_CACHE_H_
#define SHOAL_STORAGE_CACHES_LRU_CACHE_H_

#include <atomic>
#include <bit>
#include <cstddef>
#include <list>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/synchronization/mutex.h"

namespace shoal::storage {

template <typename K, typename V, typename Hash = absl::Hash<K>>
class ByteLruCache {
 public:
  static constexpr size_t kMinShardBytes = 1 << 20;

  explicit ByteLruCache(size_t budget_bytes, size_t shards = 16)
      : budget_(budget_bytes), shards_(ShardCount(budget_bytes, shards)) {
    for (Shard& s : shards_) s.budget = budget_bytes / shards_.size();
  }
  ByteLruCache(const ByteLruCache&) = delete;
  ByteLruCache& operator=(const ByteLruCache&) = delete;

  // The value under `key` (now the most recently used), or null.
  std::shared_ptr<const V> Lookup(const K& key) {
    Shard& s = ShardOf(key);
    absl::MutexLock lock(&s.mu);
    auto it = s.index.find(key);
    if (it == s.index.end()) return nullptr;
    s.lru.splice(s.lru.begin(), s.lru, it->second);
    return it->second->value;
  }

  // Caches `value` under `key` (replacing any previous one) charged `charge` bytes, evicting
  // least-recently-used entries of its shard as needed. Not cached if charge > shard budget
  // (a previous value under the key is dropped then).
  void Insert(const K& key, std::shared_ptr<const V> value, size_t charge) {
    Shard& s = ShardOf(key);
    // The new node is allocated, and dropped nodes and values destroyed, outside the lock: a
    // holder preempted inside (the nice-19 maintenance thread re-caching postings) holds up
    // every search that looks up the shard, so the hold does no malloc or free.
    List node;
    node.push_front(Entry{key, std::move(value), charge});
    List dropped;
    absl::MutexLock lock(&s.mu);
    if (auto it = s.index.find(key); it != s.index.end()) RemoveLocked(s, it, &dropped);
    if (charge > s.budget) return;
    s.lru.splice(s.lru.begin(), node);
    s.index.emplace(key, s.lru.begin());
    s.charged += charge;
    charged_.fetch_add(charge, std::memory_order_relaxed);
    EvictLocked(s, &dropped);
  }

  void Erase(const K& key) {
    Shard& s = ShardOf(key);
    List dropped;
    absl::MutexLock lock(&s.mu);
    if (auto it = s.index.find(key); it != s.index.end()) RemoveLocked(s, it, &dropped);
  }

  // Bytes charged by the cached entries (<= budget_bytes()).
  size_t charged_bytes() const { return charged_.load(std::memory_order_relaxed); }
  size_t budget_bytes() const { return budget_.load(std::memory_order_relaxed); }
  size_t entries() const {
    size_t n = 0;
    for (const Shard& s : shards_) {
      absl::MutexLock lock(&s.mu);
      n += s.index.size();
    }
    return n;
  }

  // Changes the budget; shrinking evicts at once. The shard count stays as constructed.
  void SetBudget(size_t bytes) {
    budget_.store(bytes, std::memory_order_relaxed);
    for (Shard& s : shards_) {
      List dropped;
      absl::MutexLock lock(&s.mu);
      s.budget = bytes / shards_.size();
      EvictLocked(s, &dropped);
    }
  }

 private:
  struct Entry {
    K key;
    std::shared_ptr<const V> value;
    size_t charge;
  };
  using List = std::list<Entry>;
  struct Shard {
    mutable absl::Mutex mu;
    List lru ABSL_GUARDED_BY(mu);  // Front = most recently used.
    absl::flat_hash_map<K, typename List::iterator, Hash> index ABSL_GUARDED_BY(mu);
    size_t charged ABSL_GUARDED_BY(mu) = 0;
    size_t budget ABSL_GUARDED_BY(mu) = 0;
  };

  static size_t ShardCount(size_t budget, size_t wanted) {
    size_t n = std::bit_floor(std::max<size_t>(wanted, 1));
    while (n > 1 && budget / n < kMinShardBytes) n /= 2;
    return n;
  }

  Shard& ShardOf(const K& key) {
    // The high bits pick the shard; the map inside uses the whole hash.
    const size_t h = Hash{}(key);
    return shards_[(h >> 7) & (shards_.size() - 1)];
  }

  // Moves the entry's node to *dropped (destroyed by the caller after unlocking).
  void RemoveLocked(Shard& s,
                    typename absl::flat_hash_map<K, typename List::iterator, Hash>::iterator it,
                    List* dropped) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
    auto entry = it->second;
    s.charged -= entry->charge;
    charged_.fetch_sub(entry->charge, std::memory_order_relaxed);
    s.index.erase(it);
    dropped->splice(dropped->end(), s.lru, entry);
  }

  void EvictLocked(Shard& s, List* dropped) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
    while (s.charged > s.budget && !s.lru.empty()) {
      RemoveLocked(s, s.index.find(s.lru.back().key), dropped);
    }
  }

  std::atomic<size_t> budget_;
  std::atomic<size_t> charged_{0};
  std::vector<Shard> shards_;
};

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_CACHES_LRU_CACHE_H_

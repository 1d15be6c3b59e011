// ShardedHashMap / ShardedHashSet: an absl flat hash map or set split into 256 tables by a hash
// of the key, so that no single insert ever moves more than a small fraction of the entries.
//
//   shoal::base::ShardedHashMap<uint64_t, Key> key_of;
//   key_of.Insert(7, key);                       // false (and unchanged) when 7 is there
//   if (const Key* k = key_of.Find(7)) ...;      // nullptr when absent
//   key_of.Erase(7);
//
// Why: a flat hash table grows by rehashing every entry at once, and clears its tombstones the
// same way. At 10^5-10^7 entries that is milliseconds, spent while the caller holds the writer
// side of its reader/writer lock — every search waits (measured: 1.5-12 ms per table in the
// Collection's write path, the largest part of search p99 during updates). Split 256 ways, one
// rehash moves 1/256 of the entries, and the shards reach their growth points at different
// inserts (their sizes differ by chance), so one batch of writes rehashes a shard or two at most.
// Lookups cost one extra hash of the key.
//
// Thread safety: none of its own (as the absl tables); const methods may run concurrently.
#ifndef SHOAL_BASE_SHARDED_HASH_H_
#define SHOAL_BASE_SHARDED_HASH_H_

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"

namespace shoal::base {

// What the map and the set share: shard choice, size, iteration.
template <typename Table>
class ShardedTable {
 public:
  using Key = typename Table::key_type;
  static constexpr int kShardBits = 8;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool Contains(const Key& k) const { return !shards_.empty() && Shard(k).contains(k); }
  // Removes `k`; false when it was absent.
  bool Erase(const Key& k) {
    if (shards_.empty() || Shard(k).erase(k) == 0) return false;
    --size_;
    return true;
  }
  // Starts loading the memory a lookup of `k` will touch. (The empty asm keeps the prefetch:
  // GCC 12 at -O2/-O3 dropped absl's prefetch of a shard chosen by a hash of the key —
  // Collection::SearchLocked had none, and its key lookups were most of its time.)
  void Prefetch(const Key& k) const {
    if (shards_.empty()) return;
    const Table& t = Shard(k);
    asm volatile("" : : "r"(&t) : "memory");
    t.prefetch(k);
  }
  void Clear() {
    shards_.clear();
    size_ = 0;
  }
  // RAM held by the slots (approximate: control bytes included, heap of the values not).
  size_t MemoryBytes() const {
    size_t bytes = shards_.capacity() * sizeof(Table);
    for (const Table& t : shards_) bytes += t.capacity() * (sizeof(typename Table::value_type) + 1);
    return bytes;
  }
  // Entries of the fullest shard: the most that one insert can move.
  size_t LargestShard() const {
    size_t most = 0;
    for (const Table& t : shards_) most = std::max(most, t.size());
    return most;
  }
  // Calls fn(entry) for every entry (a key for a set, a key/value pair for a map), in no order.
  template <typename Fn>
  void ForEach(const Fn& fn) const {
    for (const Table& t : shards_) {
      for (const auto& e : t) fn(e);
    }
  }

 protected:
  // The top bits of the key's hash: the tables index their slots with the low bits.
  static size_t ShardOf(const Key& k) { return absl::Hash<Key>{}(k) >> (64 - kShardBits); }
  // The shard of `k`; only once the shards exist (!shards_.empty()).
  Table& Shard(const Key& k) { return shards_[ShardOf(k)]; }
  const Table& Shard(const Key& k) const { return shards_[ShardOf(k)]; }
  Table& ShardForInsert(const Key& k) {
    if (shards_.empty()) shards_.resize(size_t{1} << kShardBits);
    return Shard(k);
  }

  // None until the first insert: many tables stay empty (a tag or attribute column per name).
  std::vector<Table> shards_;
  size_t size_ = 0;
};

template <typename K, typename V>
class ShardedHashMap : public ShardedTable<absl::flat_hash_map<K, V>> {
 public:
  // The value of `k`, or nullptr; valid until the next insert into the map.
  const V* Find(const K& k) const {
    if (this->shards_.empty()) return nullptr;
    const auto& t = this->Shard(k);
    auto it = t.find(k);
    return it == t.end() ? nullptr : &it->second;
  }
  V* Find(const K& k) {
    if (this->shards_.empty()) return nullptr;
    auto& t = this->Shard(k);
    auto it = t.find(k);
    return it == t.end() ? nullptr : &it->second;
  }
  // The value of `k`, which must be present.
  const V& At(const K& k) const { return this->Shard(k).at(k); }
  // Adds k -> v unless `k` is present; true when added.
  bool Insert(const K& k, V v) {
    const bool added = this->ShardForInsert(k).try_emplace(k, std::move(v)).second;
    this->size_ += added;
    return added;
  }
  // Adds k -> v, or replaces the value of a present `k`.
  void Set(const K& k, V v) {
    this->size_ += this->ShardForInsert(k).insert_or_assign(k, std::move(v)).second;
  }
};

template <typename K>
class ShardedHashSet : public ShardedTable<absl::flat_hash_set<K>> {
 public:
  // Adds `k`; false when it was present.
  bool Insert(const K& k) {
    const bool added = this->ShardForInsert(k).insert(k).second;
    this->size_ += added;
    return added;
  }
};

}  // namespace shoal::base

#endif  // SHOAL_BASE_SHARDED_HASH_H_

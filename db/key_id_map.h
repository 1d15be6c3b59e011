// KeyIdMap: a collection's key -> internal id map (CollectionState::id_of), with integer keys
// and string keys in tables of their own.
//
//   shoal::db::KeyIdMap id_of;
//   id_of.Insert(Key{uint64_t{7}}, 1);           // false (and unchanged) when 7 is there
//   id_of.Set(Key{std::string("7")}, 2);         // another key: "7" is not 7
//   if (const uint64_t* iid = id_of.Find(key)) ...;
//   id_of.Erase(key);
//
// Why not one ShardedHashMap<Key, uint64_t>: a Key (std::variant<uint64_t, std::string>) takes
// 40 bytes, so each slot of such a table took 48 for what an integer key needs 16 for, and a
// lookup of a random key (a single Grant's first step) waited for two lines of a table three
// times larger than it needs: its control bytes, then its slot. Integer keys get 16-byte slots
// here, string keys 40 (no variant index), and Find asks for the probe's control bytes and first
// slot together before it reads them, so that their misses overlap.
//
// Thread safety: none of its own (as ShardedHashMap); const methods may run concurrently.
#ifndef SHOAL_DB_KEY_ID_MAP_H_
#define SHOAL_DB_KEY_ID_MAP_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "base/sharded_hash.h"
#include "shoal/types.h"

namespace shoal::db {

class KeyIdMap {
 public:
  size_t size() const { return ints_.size() + strings_.size(); }
  // The id of `k`, or nullptr; valid until the next insert.
  const uint64_t* Find(const Key& k) const {
    if (const uint64_t* n = std::get_if<uint64_t>(&k)) return FindIn(ints_, *n);
    return FindIn(strings_, std::get<std::string>(k));
  }
  // Asks for the lines Find(k) reads first (a few keys' lookups overlapped with other work).
  void Prefetch(const Key& k) const {
    if (const uint64_t* n = std::get_if<uint64_t>(&k)) {
      ints_.Prefetch(*n);
    } else {
      strings_.Prefetch(std::get<std::string>(k));
    }
  }
  // Adds k -> id unless `k` is present; true when added.
  bool Insert(const Key& k, uint64_t id) {
    if (const uint64_t* n = std::get_if<uint64_t>(&k)) return ints_.Insert(*n, id);
    return strings_.Insert(std::get<std::string>(k), id);
  }
  // Adds k -> id, or replaces the id of a present `k`.
  void Set(const Key& k, uint64_t id) {
    if (const uint64_t* n = std::get_if<uint64_t>(&k)) {
      ints_.Set(*n, id);
    } else {
      strings_.Set(std::get<std::string>(k), id);
    }
  }
  // Removes `k`; false when it was absent.
  bool Erase(const Key& k) {
    if (const uint64_t* n = std::get_if<uint64_t>(&k)) return ints_.Erase(*n);
    return strings_.Erase(std::get<std::string>(k));
  }
  // RAM held by the slots (approximate, as ShardedHashMap's; string keys' heap not counted).
  size_t MemoryBytes() const { return ints_.MemoryBytes() + strings_.MemoryBytes(); }

 private:
  template <typename Map, typename K>
  static const uint64_t* FindIn(const Map& map, const K& k) {
    map.Prefetch(k);  // the control bytes and the first slot at once; Find reads them in turn
    return map.Find(k);
  }

  base::ShardedHashMap<uint64_t, uint64_t> ints_;
  base::ShardedHashMap<std::string, uint64_t> strings_;
};

}  // namespace shoal::db

#endif  // SHOAL_DB_KEY_ID_MAP_H_

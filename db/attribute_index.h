// AttributeIndex: a collection's record attributes and tags held in RAM as typed columns, so a
// search can turn its Filter (shoal/filter.h) into the set of internal ids that pass it before
// any vector is scored.
//
//   AttributeIndex attrs;
//   attrs.Put(/*id=*/7, record.attributes, record.tags);   // on Upsert and at load
//   attrs.Remove(7);                                       // on Delete
//   index::IdBitmap allowed = attrs.Evaluate(filter);      // per search request
//
// Layout: per attribute name one column of four typed id -> value maps (int64, double, bool,
// string), for Matches and Remove, and the same values by value (numbers ordered, strings and
// booleans grouped), so that an Eq or Range leaf reads the ids of its slice of values only; per
// tag a sorted set of ids.
// Every live id (with or without attributes) is in `live`, the universe Not() complements.
// Evaluate expects a filter that passed ValidateFilter (db/validation.h); an attribute name or
// tag that no record has matches nothing.
//
// Thread safety: none of its own; the Collection guards it with its reader/writer lock (Evaluate
// is const and may run concurrently with other Evaluates).
#ifndef SHOAL_DB_ATTRIBUTE_INDEX_H_
#define SHOAL_DB_ATTRIBUTE_INDEX_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "base/sharded_hash.h"
#include "index/id_filter.h"
#include "shoal/filter.h"
#include "shoal/types.h"
#include "tenants/compact_id_set.h"

namespace shoal::db {

class AttributeIndex {
 public:
  // Sets the attributes and tags of `id`, replacing whatever it had.
  void Put(uint64_t id, const std::map<std::string, AttributeValue>& attributes,
           const std::vector<std::string>& tags);
  // Forgets `id`; a no-op when absent.
  void Remove(uint64_t id);

  // The live ids that pass `filter`.
  index::IdBitmap Evaluate(const Filter& filter) const;
  size_t Count(const Filter& filter) const { return Evaluate(filter).Count(); }
  // Whether live `id` passes `filter`: the same answer as Evaluate(filter).Test(id), in time
  // proportional to the filter's size, not the collection's (for a scan that meets ids one by
  // one, e.g. DB::Scroll). MakeChecker(filter).Matches(id).
  bool Matches(const Filter& filter, uint64_t id) const;
  // `filter` resolved once (attribute and tag names to their columns and id sets), to check many
  // ids without looking names up per id. Valid while the index is unchanged (the Collection's
  // reader lock held); `filter` must outlive it.
  class Checker;
  Checker MakeChecker(const Filter& filter) const;
  bool Live(uint64_t id) const { return live_.Test(id); }
  // Whether `leaf` matches one set of live ids kept as such: a HasTag leaf (its tag's) or an Eq
  // leaf of a string or a boolean (its value's); then *ids is that set, null when no live record
  // matches. False for other leaves (an Eq of a number, a Range, a combinator).
  bool LeafIds(const Filter& leaf, const tenants::CompactIdSet** ids) const;
  // Why `filter` cannot match what its author likely meant: a leaf on an attribute or tag no
  // live record has, or a comparison with a type the attribute never holds (a string against
  // numbers). A schemaless collection answers such a leaf with no ids (and NOT of it with
  // every id); the warnings, each naming the attribute, say why. At most kMaxFilterWarnings.
  std::vector<std::string> FilterWarnings(const Filter& filter) const;
  static constexpr size_t kMaxFilterWarnings = 8;

  size_t size() const { return live_count_; }
  // Every live id is below it.
  uint64_t id_bound() const { return live_.bound(); }
  // Approximate RAM held, in bytes.
  size_t MemoryBytes() const;

 private:
  // Id-keyed tables are sharded (base/sharded_hash.h): the Collection changes them under its
  // writer lock, and a sharded table never rehashes all its entries at once.
  struct Column {
    base::ShardedHashMap<uint64_t, int64_t> ints;
    base::ShardedHashMap<uint64_t, double> doubles;
    base::ShardedHashMap<uint64_t, std::string> strings;
    // The same values by value, so that an Eq or Range leaf reads the ids of its slice of values,
    // not every record that holds the attribute (at 1M records that pass took ~8-9 ms a search):
    // numbers ordered, strings and booleans grouped (a boolean's value is which set holds its id).
    absl::btree_set<std::pair<int64_t, uint64_t>> ints_by_value;
    absl::btree_set<std::pair<double, uint64_t>> doubles_by_value;
    absl::flat_hash_map<std::string, tenants::CompactIdSet> ids_of_string;
    tenants::CompactIdSet ids_true, ids_false;
    bool HoldsBooleans() const { return !ids_true.empty() || !ids_false.empty(); }
  };
  // What `id` appears in, so Remove finds it without the record (only ids with attributes or
  // tags have one).
  struct Entry {
    std::vector<uint32_t> columns;
    std::vector<uint32_t> tags;
  };

  index::IdBitmap EvaluateLeaf(const Filter& leaf) const;
  // An Eq of a number or a Range, on one column.
  static bool MatchesNumber(const Column& column, const Filter& leaf, uint64_t id);
  // The warning for one leaf (FilterWarnings), or "" when there is none.
  std::string LeafWarning(const Filter& leaf) const;

  absl::flat_hash_map<std::string, uint32_t> column_of_;
  std::vector<Column> columns_;
  absl::flat_hash_map<std::string, uint32_t> tag_of_;
  // Per tag its ids, sorted in blocks (tenants/compact_id_set.h: ~2 bytes an id, no table to
  // rehash; a HasTag filter lists them in order and checks an id with a binary search).
  std::vector<tenants::CompactIdSet> tag_ids_;
  base::ShardedHashMap<uint64_t, Entry> entries_;
  index::IdBitmap live_;
  size_t live_count_ = 0;
};

class AttributeIndex::Checker {
 public:
  bool Matches(uint64_t id) const { return Check(root_, id); }
  // Starts loading what Matches(id) reads (the id's entries in the leaves' columns and sets).
  void Prefetch(uint64_t id) const { PrefetchNode(root_, id); }
  // Keeps the ids of (*ids)[first..] that pass, in order: a filter that is one set checks them
  // all at once (CompactIdSet::ContainsEach), any other with the entries of the id a few ahead
  // loading while one is checked (at 1M records a check's lookups miss the CPU caches).
  void KeepMatching(std::vector<uint64_t>* ids, size_t first = 0) const;
  // How many of the filter's leaves `id` matches, whatever combines them: over a sample of ids,
  // a measure of the values Evaluate would read (it reads each leaf's).
  size_t LeavesMatching(uint64_t id) const { return CountLeaves(root_, id); }

 private:
  friend class AttributeIndex;
  struct Node {
    const Filter* filter = nullptr;
    bool set_leaf = false;                       // a leaf kept as a set (LeafIds): ids answers it
    const tenants::CompactIdSet* ids = nullptr;  // that set; null: no live id matches
    const Column* column = nullptr;              // any other leaf's column; null: no such column
    std::vector<Node> operands;
  };
  bool Check(const Node& node, uint64_t id) const;
  void PrefetchNode(const Node& node, uint64_t id) const;
  size_t CountLeaves(const Node& node, uint64_t id) const;

  const index::IdBitmap* live_ = nullptr;  // for Not
  Node root_;
};

}  // namespace shoal::db

#endif  // SHOAL_DB_ATTRIBUTE_INDEX_H_

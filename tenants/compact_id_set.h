// CompactIdSet: a set of 64-bit internal ids in about 2 bytes per id, for the tenants' id sets
// (the access table's owned and granted ids, the tenant tree's shortlists). Roaring-like: the
// ids are split by their high bits (id >> 16) into blocks, each a sorted array of the low 16
// bits while it holds at most 4,096 ids, a 65,536-bit bitmap (8 KiB) above that.
//
//   shoal::tenants::CompactIdSet ids;
//   ids.insert(7);                    // false when 7 was there already
//   if (ids.contains(7)) ...;         // a block lookup and a binary search: no hashing
//   ids.ForEach([](uint64_t id) { ... });   // ascending
//
// Ids must be below 2^48 (the Collection's internal ids count up from 0).
//
// Why: an absl flat_hash_set<uint64_t> costs 9 bytes per slot at a load of 0.44-0.875, so
// 10-20 bytes per id, and a tenant-vector membership is held in two or three such sets. Internal
// ids are dense (handed out in order), so a tenant's ids share few blocks: a tenant of 7,500 ids
// among 60,000 costs one block of 15 KB. Arrays grow by a quarter, not by doubling.
//
// Thread safety: none of its own; const methods may run concurrently.
#ifndef SHOAL_TENANTS_COMPACT_ID_SET_H_
#define SHOAL_TENANTS_COMPACT_ID_SET_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <span>
#include <vector>

#include "absl/container/inlined_vector.h"

namespace shoal::tenants {

class CompactIdSet {
 public:
  static constexpr int kLowBits = 16;
  static constexpr uint32_t kArrayMax = 4096;  // above: the block becomes a bitmap

  CompactIdSet() = default;
  CompactIdSet(CompactIdSet&&) noexcept = default;
  CompactIdSet& operator=(CompactIdSet&&) noexcept = default;
  CompactIdSet(const CompactIdSet& other) { *this = other; }
  CompactIdSet& operator=(const CompactIdSet& other);

  // The blocks' counts added up (a tenant's ids span few blocks).
  size_t size() const {
    size_t n = 0;
    for (const Block& b : blocks_) n += b.count;
    return n;
  }
  bool empty() const { return blocks_.empty(); }
  bool contains(uint64_t id) const;
  // Sets found[i] to 1 when ids[i] is in the set (leaves the others as they were): contains for
  // each, the binary searches of array blocks taken a step at a time for all ids together so
  // that their cache misses overlap (a search's hits are checked here: one search at a time,
  // the set cold, the checks took ~6% of a tenant's query).
  void ContainsEach(std::span<const uint64_t> ids, uint8_t* found) const;
  // Asks for the cache lines contains(id), insert(id) and erase(id) read: id's bitmap word, or
  // its block's array whole while that spans at most kPrefetchLines lines (their misses then
  // overlap, where a binary search waits for them one by one). Loads the block table only.
  void Prefetch(uint64_t id) const;
  static constexpr size_t kPrefetchLines = 16;
  // Adds `id`; false (and unchanged) when it was there.
  bool insert(uint64_t id);
  // Removes `id`; false when it was absent.
  bool erase(uint64_t id);
  void clear();

  // Calls fn(id) for every id, ascending.
  template <typename Fn>
  void ForEach(const Fn& fn) const {
    for (const Block& b : blocks_) {
      const uint64_t base = uint64_t{b.high} << kLowBits;
      if (!b.bitmap) {
        for (uint32_t i = 0; i < b.count; ++i) fn(base | b.low()[i]);
        continue;
      }
      for (size_t w = 0; w < kWords; ++w) {
        for (uint64_t bits = b.bits()[w]; bits != 0; bits &= bits - 1) {
          fn(base | (w * 64 + static_cast<uint64_t>(std::countr_zero(bits))));
        }
      }
    }
  }
  // The smallest and the largest id (the set must not be empty).
  uint64_t front() const;
  uint64_t back() const;
  // The smallest and largest id of `sets` together and how many ids they hold (null or empty
  // sets add nothing; lo > hi when all are).
  struct Extent {
    uint64_t lo = UINT64_MAX, hi = 0;
    size_t n = 0;
  };
  static Extent ExtentOf(std::initializer_list<const CompactIdSet*> sets);
  // Sets bit (id - first) of `words` (bit b of words[b / 64]) for every id of the set in
  // [first, first + 64 words.size()); `first` must be a multiple of 64. A bitmap block is ORed
  // a word at a time. (A search checks a large tenant's ids per candidate: a window bitmap of
  // them answers in one load, a binary search of an array block in ~12.)
  void OrInto(uint64_t first, std::span<uint64_t> words) const;
  // When the set is one block in bitmap form: its words (bit b of word w: id first + 64 w + b)
  // and *first; else empty. A search may test the ids in place instead of copying them into a
  // window (OrInto).
  std::span<const uint64_t> SingleBitmap(uint64_t* first) const {
    if (blocks_.size() != 1 || !blocks_[0].bitmap) return {};
    *first = uint64_t{blocks_[0].high} << kLowBits;
    return {blocks_[0].bits(), kWords};
  }
  // The ids, ascending.
  std::vector<uint64_t> ToVector() const;
  // RAM held: the block table (none while one block, held in the set itself), the arrays'
  // capacity and the bitmaps.
  size_t MemoryBytes() const;

 private:
  static constexpr size_t kWords = (size_t{1} << kLowBits) / 64;
  // 16 bytes (a tenant of a few ids is mostly its blocks: one per 2^16 ids it spans): the ids'
  // low bits, sorted, in an array of `cap` (array form) — in the block itself while cap is at
  // most kInline, else on the heap — or kWords words of bits (bitmap form).
  struct Block {
    static constexpr uint32_t kInline = 4;
    Block() : data(nullptr) {}
    Block(Block&& o) noexcept;
    Block& operator=(Block&& o) noexcept;
    ~Block() { Free(); }
    bool heap() const { return bitmap || cap > kInline; }
    uint16_t* low() const {
      return heap() ? static_cast<uint16_t*>(data) : const_cast<uint16_t*>(inline_low);
    }
    uint64_t* bits() const { return static_cast<uint64_t*>(data); }
    void Free() {
      if (heap()) ::operator delete(data);
    }

    union {
      void* data;                    // heap()
      uint16_t inline_low[kInline];  // !heap()
    };
    uint32_t high = 0;        // id >> kLowBits (ids are below 2^48)
    uint32_t count : 17 = 0;  // ids in the block (at most 2^16)
    uint32_t cap : 14 = 0;    // array form: room for this many ids (at most ~5,200)
    uint32_t bitmap : 1 = 0;
  };
  static_assert(sizeof(Block) == 16);
  // Sorted by high; none empty. The first block in the set itself (in the space a vector's
  // pointer and capacity take): a set of one block, every set of a collection under 2^16 ids,
  // reaches its ids with one load less.
  using Blocks = absl::InlinedVector<Block, 1>;
  // Makes `b` an array with room for `cap` ids, its `count` ids kept.
  static void Resize(Block& b, uint32_t cap);
  // The block of `high`, or where it would be inserted.
  Blocks::iterator Lower(uint64_t high);
  Blocks::const_iterator Lower(uint64_t high) const;
  // The block holding `id`'s high bits, or null.
  const Block* BlockOf(uint64_t id) const {
    const auto b = Lower(id >> kLowBits);
    return b == blocks_.end() || b->high != id >> kLowBits ? nullptr : &*b;
  }
  static bool BitSet(const Block& b, uint64_t low) {
    return (b.bits()[low >> 6] >> (low & 63)) & 1;
  }
  // One step of a binary search of an array block for `low` without a branch on the data: the
  // array is a random set's ids, so each of std::binary_search's compares mispredicted half the
  // time. [at, at + n) holds the answer before and after; n > 1.
  static void Halve(const uint16_t*& at, uint32_t& n, uint64_t low) {
    const uint32_t half = n / 2;
    at += (at[half] <= low) ? half : 0;
    n -= half;
  }
  static void ToBitmap(Block& b);
  static void ToArray(Block& b);

  Blocks blocks_;
};
static_assert(sizeof(CompactIdSet) == 24);  // as a vector of blocks

}  // namespace shoal::tenants

#endif  // SHOAL_TENANTS_COMPACT_ID_SET_H_

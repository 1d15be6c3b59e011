// NarrowArray<N>, NarrowVector and NarrowIdMap: 32-bit values kept as 16-bit low halves, with the
// high halves allocated (zeroed) only once a value of 2^16 or more is stored — then in place: the
// low halves stay where they are. For the access table's tenant handles and grantee offsets, which
// stay under 2^16 in all but huge collections, and the tenant tree's leaf of each id and per-node
// counts (a collection of under 65,536 postings; a tenant of under 65,536 vectors below a node):
// 2 bytes a value instead of 4.
//
//   shoal::tenants::NarrowVector v;
//   v.Insert(0, 7);                   // 2 bytes a value
//   v.Insert(1, 70000);               // widens: high halves allocated, 4 bytes a value from now
//   uint32_t x = v[1];                // 70000
//
// A widened container stays wide (a value that large is likely to come back).
//
// Thread safety: none of its own; const methods may run concurrently.
#ifndef SHOAL_TENANTS_NARROW_U32_H_
#define SHOAL_TENANTS_NARROW_U32_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace shoal::tenants {

inline constexpr uint32_t kNarrowMax = 0xffff;

template <size_t N>
class NarrowArray {
 public:
  uint32_t operator[](size_t i) const {
    return hi_ == nullptr ? lo_[i] : lo_[i] | (uint32_t{hi_[i]} << 16);
  }
  void Set(size_t i, uint32_t v) {
    if (v > kNarrowMax && hi_ == nullptr) hi_ = std::make_unique<uint16_t[]>(N);  // zeroed
    lo_[i] = static_cast<uint16_t>(v);
    if (hi_ != nullptr) hi_[i] = static_cast<uint16_t>(v >> 16);
  }
  // Adds `delta` to values [from, N). The caller keeps each in [0, 2^32).
  void AddFrom(size_t from, int64_t delta, bool may_widen) {
    if (hi_ == nullptr && !may_widen) {
      const auto d = static_cast<uint16_t>(delta);
      for (size_t i = from; i < N; ++i) lo_[i] = static_cast<uint16_t>(lo_[i] + d);
      return;
    }
    for (size_t i = from; i < N; ++i) Set(i, static_cast<uint32_t>((*this)[i] + delta));
  }
  bool wide() const { return hi_ != nullptr; }
  // Asks for the cache lines of value i and of the high halves' pointer (loads nothing).
  void Prefetch(size_t i) const {
    __builtin_prefetch(&lo_[i]);
    __builtin_prefetch(&hi_);
  }
  // Bytes beyond sizeof(*this): the high halves.
  size_t HeapBytes() const { return hi_ == nullptr ? 0 : N * sizeof(uint16_t); }

 private:
  std::array<uint16_t, N> lo_{};
  std::unique_ptr<uint16_t[]> hi_;  // N high halves, once a value needs them
};

class NarrowVector {
 public:
  size_t size() const { return lo_.size(); }
  uint32_t operator[](size_t i) const {
    return hi_.empty() ? lo_[i] : lo_[i] | (uint32_t{hi_[i]} << 16);
  }
  void Insert(size_t at, uint32_t v) {
    if (v > kNarrowMax && hi_.empty() && !lo_.empty()) hi_.assign(lo_.size(), 0);
    const bool wide = v > kNarrowMax || !hi_.empty();
    // Grow by a quarter: doubling would leave a third of the capacity unused on average.
    if (lo_.size() == lo_.capacity()) {
      lo_.reserve(lo_.size() * 5 / 4 + 8);
      if (wide) hi_.reserve(lo_.capacity());
    }
    lo_.insert(lo_.begin() + static_cast<ptrdiff_t>(at), static_cast<uint16_t>(v));
    if (wide) hi_.insert(hi_.begin() + static_cast<ptrdiff_t>(at), static_cast<uint16_t>(v >> 16));
  }
  void Set(size_t i, uint32_t v) {
    if (v > kNarrowMax && hi_.empty()) {
      hi_.reserve(lo_.capacity());
      hi_.assign(lo_.size(), 0);
    }
    lo_[i] = static_cast<uint16_t>(v);
    if (!hi_.empty()) hi_[i] = static_cast<uint16_t>(v >> 16);
  }
  // Removes values [first, last).
  void Erase(size_t first, size_t last) {
    lo_.erase(lo_.begin() + static_cast<ptrdiff_t>(first),
              lo_.begin() + static_cast<ptrdiff_t>(last));
    if (!hi_.empty()) {
      hi_.erase(hi_.begin() + static_cast<ptrdiff_t>(first),
                hi_.begin() + static_cast<ptrdiff_t>(last));
    }
  }
  // The index of `v` in [first, last), or `last`.
  size_t Find(size_t first, size_t last, uint32_t v) const {
    for (size_t i = first; i < last; ++i) {
      if (lo_[i] == static_cast<uint16_t>(v) && (*this)[i] == v) return i;
    }
    return last;
  }
  // Gives back capacity a shrinking vector no longer needs.
  void Trim() {
    if (lo_.capacity() <= 2 * lo_.size() + 16) return;
    lo_.shrink_to_fit();
    hi_.shrink_to_fit();
  }
  bool wide() const { return !hi_.empty(); }
  // The low halves, and the high halves (null while narrow): value i is low[i] | high[i] << 16.
  const uint16_t* low() const { return lo_.data(); }
  const uint16_t* high() const { return hi_.empty() ? nullptr : hi_.data(); }
  // Asks for the cache lines of value i (< size()), past the vector's own.
  void Prefetch(size_t i) const {
    __builtin_prefetch(lo_.data() + i);
    if (!hi_.empty()) __builtin_prefetch(hi_.data() + i);
  }
  size_t HeapBytes() const { return (lo_.capacity() + hi_.capacity()) * sizeof(uint16_t); }

 private:
  std::vector<uint16_t> lo_;
  std::vector<uint16_t> hi_;  // empty until a value needs it, then as long as lo_
};

// Dense 64-bit ids (handed out in order) to 32-bit values, in pages of 4,096 ids allocated on
// the first id a page holds and freed with its last (base::PagedIdMap's layout), each page's
// values a NarrowArray: 2 bytes a value and a presence bit while the page's values are small.
class NarrowIdMap {
 public:
  size_t size() const { return size_; }
  std::optional<uint32_t> Find(uint64_t id) const {
    const Page* page = PageOf(id);
    if (page == nullptr || !page->Has(id & kMask)) return std::nullopt;
    return page->values[id & kMask];
  }
  // Asks for the cache lines Find(id) reads (its presence bit, its value and the high halves'
  // pointer); loads only the page's pointer.
  void Prefetch(uint64_t id) const {
    const Page* page = PageOf(id);
    if (page == nullptr) return;
    __builtin_prefetch(&page->present[(id & kMask) >> 6]);
    page->values.Prefetch(id & kMask);
  }
  // Adds or replaces.
  void Set(uint64_t id, uint32_t v) {
    const uint64_t p = id >> kPageBits;
    if (p >= pages_.size()) pages_.resize(p + 1);
    if (pages_[p] == nullptr) pages_[p] = std::make_unique<Page>();
    Page& page = *pages_[p];
    const uint64_t slot = id & kMask;
    if (!page.Has(slot)) {
      page.present[slot >> 6] |= uint64_t{1} << (slot & 63);
      ++page.used;
      ++size_;
    }
    page.values.Set(slot, v);
  }
  // Removes `id`; false when it was absent.
  bool Erase(uint64_t id) {
    Page* page = PageOf(id);
    const uint64_t slot = id & kMask;
    if (page == nullptr || !page->Has(slot)) return false;
    page->present[slot >> 6] &= ~(uint64_t{1} << (slot & 63));
    --size_;
    if (--page->used == 0) pages_[id >> kPageBits].reset();
    return true;
  }
  size_t MemoryBytes() const {
    size_t bytes = pages_.capacity() * sizeof(pages_[0]);
    for (const auto& page : pages_) {
      if (page != nullptr) bytes += sizeof(Page) + page->values.HeapBytes();
    }
    return bytes;
  }

 private:
  static constexpr int kPageBits = 12;
  static constexpr size_t kSlots = size_t{1} << kPageBits;
  static constexpr uint64_t kMask = kSlots - 1;
  struct Page {
    NarrowArray<kSlots> values;
    std::array<uint64_t, kSlots / 64> present{};
    uint32_t used = 0;
    bool Has(uint64_t slot) const { return ((present[slot >> 6] >> (slot & 63)) & 1) != 0; }
  };
  Page* PageOf(uint64_t id) const {
    const uint64_t p = id >> kPageBits;
    return p < pages_.size() ? pages_[p].get() : nullptr;
  }

  std::vector<std::unique_ptr<Page>> pages_;
  size_t size_ = 0;
};

}  // namespace shoal::tenants

#endif  // SHOAL_TENANTS_NARROW_U32_H_

// PagedIdMap<V>: a map from dense 64-bit ids (the Collection's internal ids, handed out in order)
// to values, as arrays in pages of 2^kPageBits ids, allocated on the first id a page holds and
// freed when its last one goes.
//
//   shoal::base::PagedIdMap<Entry> entries;
//   entries.Insert(7, Entry{...});             // false (and unchanged) when 7 is there
//   if (Entry* e = entries.Find(7)) ...;        // one load from a page: no hashing
//   entries.Erase(7);
//
// Why: a hash map's slot costs the key, the value and a control byte, at a load of 0.44-0.875
// (ShardedHashMap<uint64_t, 24-byte value>: 55 bytes per entry on average); here an entry costs
// its value plus a presence bit, when the ids are dense. The price is sparse ids: a page holding
// one id costs the whole page (2^kPageBits values), so use it where most ids of a page are
// present (the tenants' access table: owned and granted records).
//
// Thread safety: none of its own; const methods may run concurrently.
#ifndef SHOAL_BASE_PAGED_ID_MAP_H_
#define SHOAL_BASE_PAGED_ID_MAP_H_

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

namespace shoal::base {

template <typename V, int kPageBits = 8>
class PagedIdMap {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // nullptr when absent.
  V* Find(uint64_t id) {
    Page* page = PageOf(id);
    return page != nullptr && page->Has(id & kMask) ? &page->values[id & kMask] : nullptr;
  }
  const V* Find(uint64_t id) const { return const_cast<PagedIdMap*>(this)->Find(id); }
  bool Contains(uint64_t id) const { return Find(id) != nullptr; }
  // The value of `id`, which must be present (aborts otherwise, as a hash map's at() does).
  const V& At(uint64_t id) const {
    const V* v = Find(id);
    if (v == nullptr) std::abort();
    return *v;
  }
  // Starts loading the lines Find(id) reads beyond the page table: the presence word and the
  // value, both its ends (a value need not lie in one line). For lookups of cold ids, each asked
  // for before the first is read, so that their misses overlap.
  void Prefetch(uint64_t id) const {
    const uint64_t p = id >> kPageBits;
    if (p >= pages_.size() || pages_[p] == nullptr) return;
    const Page& page = *pages_[p];
    const uint64_t slot = id & kMask;
    __builtin_prefetch(&page.present[slot >> 6]);
    const char* v = reinterpret_cast<const char*>(&page.values[slot]);
    __builtin_prefetch(v);
    __builtin_prefetch(v + sizeof(V) - 1);
  }
  // Adds `id` with `v`; false (and unchanged) when it was there.
  bool Insert(uint64_t id, V v) {
    Page& page = MakePage(id);
    const uint64_t slot = id & kMask;
    if (page.Has(slot)) return false;
    page.values[slot] = std::move(v);
    page.present[slot >> 6] |= uint64_t{1} << (slot & 63);
    ++page.used;
    ++size_;
    return true;
  }
  // Adds or replaces.
  void Set(uint64_t id, V v) {
    if (V* old = Find(id)) {
      *old = std::move(v);
      return;
    }
    Insert(id, std::move(v));
  }
  // Removes `id`; false when it was absent.
  bool Erase(uint64_t id) {
    const uint64_t p = id >> kPageBits;
    Page* page = PageOf(id);
    const uint64_t slot = id & kMask;
    if (page == nullptr || !page->Has(slot)) return false;
    page->values[slot] = V{};
    page->present[slot >> 6] &= ~(uint64_t{1} << (slot & 63));
    --size_;
    if (--page->used == 0) pages_[p].reset();
    return true;
  }
  // RAM held: the page table and the pages (values' own heap not included).
  size_t MemoryBytes() const {
    size_t bytes = pages_.capacity() * sizeof(pages_[0]);
    for (const auto& page : pages_) bytes += page != nullptr ? sizeof(Page) : 0;
    return bytes;
  }
  // Calls fn(id, value) for every entry, ascending.
  template <typename Fn>
  void ForEach(const Fn& fn) const {
    for (uint64_t p = 0; p < pages_.size(); ++p) {
      const Page* page = pages_[p].get();
      if (page == nullptr) continue;
      for (size_t w = 0; w < kWords; ++w) {
        for (uint64_t bits = page->present[w]; bits != 0; bits &= bits - 1) {
          const uint64_t slot = w * 64 + static_cast<uint64_t>(std::countr_zero(bits));
          fn((p << kPageBits) | slot, page->values[slot]);
        }
      }
    }
  }

 private:
  static constexpr size_t kSlots = size_t{1} << kPageBits;
  static constexpr uint64_t kMask = kSlots - 1;
  static constexpr size_t kWords = (kSlots + 63) / 64;
  struct Page {
    std::array<V, kSlots> values{};
    std::array<uint64_t, kWords> present{};
    uint32_t used = 0;
    bool Has(uint64_t slot) const { return ((present[slot >> 6] >> (slot & 63)) & 1) != 0; }
  };
  Page* PageOf(uint64_t id) {
    const uint64_t p = id >> kPageBits;
    return p < pages_.size() ? pages_[p].get() : nullptr;
  }
  Page& MakePage(uint64_t id) {
    const uint64_t p = id >> kPageBits;
    if (p >= pages_.size()) pages_.resize(p + 1);
    if (pages_[p] == nullptr) pages_[p] = std::make_unique<Page>();
    return *pages_[p];
  }

  std::vector<std::unique_ptr<Page>> pages_;  // page p holds ids [p << kPageBits, (p+1) << ...)
  size_t size_ = 0;
};

}  // namespace shoal::base

#endif  // SHOAL_BASE_PAGED_ID_MAP_H_

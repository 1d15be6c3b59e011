// VectorCache: full vectors by id, bounded by bytes — what the quantized SSD index keeps of the
// vectors it reranks, so that a hot vector is not read from vectors.dat again. Built for the
// rerank loop: a query looks up all its candidates under one shared lock, with one load each
// from a map by id and the vector read in place (no per-entry allocation, reference count or
// list splice); eviction is CLOCK (a reference bit per slot, set by readers).
//
//   VectorCache cache(/*dim=*/784);
//   cache.SetBudget(64 << 20);
//   std::vector<size_t> missing;
//   cache.LookupBatch(ids, [&](size_t i, const float* v) { Score(ids[i], v); }, &missing);
//   for (size_t i : missing) cache.Insert(ids[i], ReadVector(ids[i]));
//
// Slots live in chunks of up to kChunkSlots vectors allocated as they are first used, so RAM
// follows what is cached, not the budget. charged_bytes() counts the slots in use, the map and
// the chunks' vectors.
//
// The map by id: while every id cached is below 16 x capacity() (the collection's internal ids
// are dense and handed out in order: an index whose cache can hold a sixteenth of its vectors),
// an array of slots by id in pages of kMapPageIds (4 bytes an id, a page made by the first id
// cached in it), within the 64 bytes a slot is charged for it. From the first id past that (a
// cache far smaller than the index, the SSD regime) an open-addressing table of (id, slot) at a
// load of at most 1/2 (linear probing, backward-shift deletion). The array is the fast one: one
// load per id, a tenant's members (ids by leaf, ascending) on shared lines and pages, and 4 MB at
// 1M ids where the table was 32 MB, each probe a cache and TLB miss (docs/PERFORMANCE.md, "The
// vector cache's map by id").
//
// Thread safety: every method may be called from any number of threads; LookupBatch calls `fn`
// with the shared lock held (fn must not call back into the cache).
#ifndef SHOAL_STORAGE_CACHES_VECTOR_CACHE_H_
#define SHOAL_STORAGE_CACHES_VECTOR_CACHE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "base/aligned_vector.h"

namespace shoal::storage {

class VectorCache {
 public:
  static constexpr size_t kChunkSlots = 1024;

  explicit VectorCache(size_t dim) : dim_(dim) {}

  // Drops every entry and bounds the cache to `bytes` (0 = caches nothing).
  void SetBudget(size_t bytes);
  static constexpr size_t kMapPageIds = 1024;
  // The budget bytes one vector of `dim` takes: its floats, its share of the map (the array's
  // pages, or 4 table entries) and bookkeeping.
  static size_t SlotBytes(size_t dim) {
    return dim * sizeof(float) + kMapBytesPerSlot + sizeof(uint64_t) + 1;
  }
  size_t charged_bytes() const;
  // How many vectors the budget holds.
  size_t capacity() const;

  // For each ids[i] held: fn(i, vector) (dim floats, valid during the call). The indexes i of
  // the ids not held are appended to *missing.
  void LookupBatch(std::span<const uint64_t> ids, absl::FunctionRef<void(size_t, const float*)> fn,
                   std::vector<size_t>* missing) const;
  // Copies v in as the vector of `id` (a no-op when already held or the budget holds no slot),
  // evicting a vector not referenced since the clock hand last passed it.
  void Insert(uint64_t id, const float* v);

 private:
  static constexpr uint32_t kEmpty = ~0u;
  static constexpr size_t kMapBytesPerSlot = 64;
  struct MapPage {
    uint32_t slot[kMapPageIds];  // kEmpty: not cached
  };
  struct Entry {
    uint64_t id;
    uint32_t slot;  // kEmpty: a free table entry
  };
  size_t Home(uint64_t id) const {
    return static_cast<size_t>((id * 0x9E3779B97F4A7C15ull) >> 32) & (table_.size() - 1);
  }
  // The table index holding id, or the free entry where it would go (table mode).
  size_t Probe(uint64_t id) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The array's entry of `id` (array mode, its page made), else null.
  const uint32_t* ArrayEntry(uint64_t id) const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    const uint64_t p = id / kMapPageIds;
    return p < pages_.size() && pages_[p] != nullptr ? &pages_[p]->slot[id % kMapPageIds] : nullptr;
  }
  // The slot holding `id`, or kEmpty.
  uint32_t SlotOf(uint64_t id) const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    if (!table_.empty()) return table_[Probe(id)].slot;
    const uint32_t* at = ArrayEntry(id);
    return at != nullptr ? *at : kEmpty;
  }
  // Asks for the line SlotOf(id) reads.
  void PrefetchSlotOf(uint64_t id) const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    const void* at = !table_.empty() ? &table_[Home(id)] : static_cast<const void*>(ArrayEntry(id));
    if (at != nullptr) __builtin_prefetch(at);
  }
  void SetSlot(uint64_t id, uint32_t slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ClearSlot(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves every cached id from the array to the table (for good, until SetBudget).
  void UseTable() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const float* SlotVector(uint32_t slot) const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return chunks_[slot / chunk_slots_].data() + (slot % chunk_slots_) * dim_;
  }
  float* SlotVector(uint32_t slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return chunks_[slot / chunk_slots_].data() + (slot % chunk_slots_) * dim_;
  }
  void Erase(size_t at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Grow() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t dim_;
  mutable absl::Mutex mu_;
  size_t capacity_ ABSL_GUARDED_BY(mu_) = 0;     // slots the budget allows
  size_t chunk_slots_ ABSL_GUARDED_BY(mu_) = 1;  // min(kChunkSlots, capacity_)
  // The map: the array while table_ is empty, else the table (power-of-two size, load <= 1/2).
  std::vector<std::unique_ptr<MapPage>> pages_ ABSL_GUARDED_BY(mu_);  // by id / kMapPageIds
  std::vector<uint16_t> page_used_ ABSL_GUARDED_BY(mu_);              // ids cached per page
  size_t pages_made_ ABSL_GUARDED_BY(mu_) = 0;                        // non-null in pages_
  uint64_t array_ids_ ABSL_GUARDED_BY(mu_) = 0;  // the array covers ids below this
  std::vector<Entry> table_ ABSL_GUARDED_BY(mu_);
  // Each chunk from a 64-byte boundary: at a dimension that is a multiple of 16 every vector's
  // loads are whole lines (from malloc a 128-d vector spanned 9 lines, not 8).
  std::vector<base::AlignedVector<float>> chunks_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> slot_id_ ABSL_GUARDED_BY(mu_);  // per used slot: the id it holds
  // Per used slot: referenced since the hand last passed (readers set it under the shared lock).
  std::unique_ptr<std::atomic<uint8_t>[]> referenced_ ABSL_GUARDED_BY(mu_);
  size_t hand_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_CACHES_VECTOR_CACHE_H_

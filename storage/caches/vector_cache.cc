// VectorCache: a map by id (an array in pages, or a hash table), slots in chunks, CLOCK eviction.
#include "storage/caches/vector_cache.h"

#include <algorithm>
#include <cstring>

#include "base/prefetch.h"

namespace shoal::storage {

void VectorCache::SetBudget(size_t bytes) {
  absl::MutexLock lock(&mu_);
  capacity_ = bytes / SlotBytes(dim_);
  chunk_slots_ = std::clamp<size_t>(capacity_, 1, kChunkSlots);
  // The array's pages, each with its pointer and count (reserved now), within the slots' share
  // of the map: the table's share too (at a load of at most 1/2 in a power-of-two size, up to 4
  // entries a slot). No page fits: the table from the start.
  const size_t pages = capacity_ * kMapBytesPerSlot /
                       (sizeof(MapPage) + sizeof(std::unique_ptr<MapPage>) + sizeof(uint16_t));
  pages_.clear();
  page_used_.clear();
  pages_.reserve(pages);
  page_used_.reserve(pages);
  pages_made_ = 0;
  array_ids_ = pages * kMapPageIds;
  table_.clear();
  if (array_ids_ == 0 && capacity_ != 0) table_.assign(16, Entry{0, kEmpty});
  chunks_.clear();
  slot_id_.clear();
  referenced_.reset(capacity_ != 0 ? new std::atomic<uint8_t>[capacity_] : nullptr);
  for (size_t i = 0; i < capacity_; ++i) referenced_[i].store(0, std::memory_order_relaxed);
  hand_ = 0;
}

size_t VectorCache::capacity() const {
  absl::ReaderMutexLock lock(&mu_);
  return capacity_;
}

size_t VectorCache::charged_bytes() const {
  absl::ReaderMutexLock lock(&mu_);
  const size_t chunk_slots =
      std::min(capacity_, (slot_id_.size() + chunk_slots_ - 1) / chunk_slots_ * chunk_slots_);
  const size_t map = table_.empty() ? pages_made_ * sizeof(MapPage) +
                                          pages_.capacity() * sizeof(std::unique_ptr<MapPage>) +
                                          page_used_.capacity() * sizeof(uint16_t)
                                    : table_.size() * sizeof(Entry);
  return map + chunk_slots * dim_ * sizeof(float) + slot_id_.size() * sizeof(uint64_t) + capacity_;
}

void VectorCache::SetSlot(uint64_t id, uint32_t slot) {
  if (!table_.empty()) {
    if ((slot_id_.size() + 1) * 2 > table_.size()) Grow();
    table_[Probe(id)] = Entry{id, slot};
    return;
  }
  const uint64_t p = id / kMapPageIds;
  if (p >= pages_.size()) {
    pages_.resize(p + 1);
    page_used_.resize(p + 1, 0);
  }
  if (pages_[p] == nullptr) {
    pages_[p] = std::make_unique<MapPage>();
    std::fill(std::begin(pages_[p]->slot), std::end(pages_[p]->slot), kEmpty);
    ++pages_made_;
  }
  uint32_t& at = pages_[p]->slot[id % kMapPageIds];
  page_used_[p] += at == kEmpty;
  at = slot;
}

void VectorCache::ClearSlot(uint64_t id) {
  if (!table_.empty()) {
    Erase(Probe(id));
    return;
  }
  const uint64_t p = id / kMapPageIds;
  pages_[p]->slot[id % kMapPageIds] = kEmpty;
  if (--page_used_[p] == 0) {
    pages_[p].reset();
    --pages_made_;
  }
}

void VectorCache::UseTable() {
  size_t size = 16;
  while (size < (slot_id_.size() + 1) * 2) size *= 2;
  table_.assign(size, Entry{0, kEmpty});
  for (uint32_t slot = 0; slot < slot_id_.size(); ++slot) {
    table_[Probe(slot_id_[slot])] = {slot_id_[slot], slot};
  }
  std::vector<std::unique_ptr<MapPage>>().swap(pages_);
  std::vector<uint16_t>().swap(page_used_);
  pages_made_ = 0;
}

size_t VectorCache::Probe(uint64_t id) const {
  const size_t mask = table_.size() - 1;
  size_t at = Home(id);
  while (table_[at].slot != kEmpty && table_[at].id != id) at = (at + 1) & mask;
  return at;
}

void VectorCache::LookupBatch(std::span<const uint64_t> ids,
                              absl::FunctionRef<void(size_t, const float*)> fn,
                              std::vector<size_t>* missing) const {
  absl::ReaderMutexLock lock(&mu_);
  if (slot_id_.empty()) {
    for (size_t i = 0; i < ids.size(); ++i) missing->push_back(i);
    return;
  }
  // The vectors are cold in the CPU caches: find them all, then keep the loads of the next
  // ~32 KiB of vectors in flight while one is scored, so that their memory latencies overlap.
  // (Starting every load up front, as this did, evicted the first vectors again before they were
  // scored once a batch outgrew L1/L2: a tenant's exact search scores thousands.)
  thread_local std::vector<uint32_t> slots;
  slots.resize(ids.size());
  for (uint64_t id : ids) PrefetchSlotOf(id);
  for (size_t i = 0; i < ids.size(); ++i) slots[i] = SlotOf(ids[i]);
  const size_t bytes = dim_ * sizeof(float);
  const size_t ahead = base::RowsAhead(bytes);
  auto prefetch = [&](size_t i) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (i >= ids.size() || slots[i] == kEmpty) return;
    base::PrefetchLines(SlotVector(slots[i]), bytes);
  };
  for (size_t i = 0; i < ahead; ++i) prefetch(i);
  for (size_t i = 0; i < ids.size(); ++i) {
    prefetch(i + ahead);
    if (slots[i] == kEmpty) {
      missing->push_back(i);
      continue;
    }
    referenced_[slots[i]].store(1, std::memory_order_relaxed);
    fn(i, SlotVector(slots[i]));
  }
}

void VectorCache::Erase(size_t at) {
  // Backward-shift deletion: move later entries of the same run into the hole, so every entry
  // stays reachable from its home without tombstones.
  const size_t mask = table_.size() - 1;
  size_t hole = at;
  for (size_t next = (hole + 1) & mask; table_[next].slot != kEmpty; next = (next + 1) & mask) {
    const size_t home = Home(table_[next].id);
    // Movable into the hole when its home is not in (hole, next] (cyclically).
    const bool between =
        hole <= next ? (home > hole && home <= next) : (home > hole || home <= next);
    if (!between) {
      table_[hole] = table_[next];
      hole = next;
    }
  }
  table_[hole].slot = kEmpty;
}

void VectorCache::Grow() {
  std::vector<Entry> old;
  old.swap(table_);
  table_.assign(old.size() * 2, Entry{0, kEmpty});
  for (const Entry& e : old) {
    if (e.slot != kEmpty) table_[Probe(e.id)] = e;
  }
}

void VectorCache::Insert(uint64_t id, const float* v) {
  absl::MutexLock lock(&mu_);
  if (capacity_ == 0) return;
  if (table_.empty() && id >= array_ids_) UseTable();
  if (SlotOf(id) != kEmpty) return;
  uint32_t slot;
  if (slot_id_.size() < capacity_) {
    slot = static_cast<uint32_t>(slot_id_.size());
    if (slot % chunk_slots_ == 0) {  // the last chunk holds only what the capacity leaves
      chunks_.emplace_back(std::min(chunk_slots_, capacity_ - slot) * dim_);
    }
    slot_id_.push_back(id);
  } else {
    // CLOCK: the first slot not referenced since the hand last passed it.
    while (referenced_[hand_].exchange(0, std::memory_order_relaxed) != 0) {
      hand_ = (hand_ + 1) % capacity_;
    }
    slot = static_cast<uint32_t>(hand_);
    hand_ = (hand_ + 1) % capacity_;
    ClearSlot(slot_id_[slot]);
    slot_id_[slot] = id;
  }
  std::memcpy(SlotVector(slot), v, dim_ * sizeof(float));
  referenced_[slot].store(0, std::memory_order_relaxed);
  SetSlot(id, slot);
}

}  // namespace shoal::storage

#include "tenants/access_table.h"

#include <algorithm>
#include <limits>

namespace shoal::tenants {

void AccessTable::AddTenant(TenantId t) {
  if (tenants_.contains(t)) return;
  uint32_t h;
  if (!free_handles_.empty()) {
    h = free_handles_.back();
    free_handles_.pop_back();
  } else {
    h = static_cast<uint32_t>(by_handle_.size());
    by_handle_.emplace_back();
  }
  by_handle_[h].tenant = t;
  by_handle_[h].handle = h;
  tenants_.emplace(t, h);
}

void AccessTable::RemoveTenant(TenantId t) {
  const auto it = tenants_.find(t);
  if (it == tenants_.end()) return;
  const uint32_t h = it->second;
  TenantIds& ids = by_handle_[h];
  ids.granted.ForEach([&](uint64_t id) {
    Page* page = PageOf(id);
    const uint32_t s = id & (kSlots - 1);
    if (page != nullptr && EraseGrantee(*page, s, h)) Release(id, *page);
  });
  if (ids.owned != nullptr) {
    ids.owned->ids.ForEach([&](uint64_t id) {
      Page* page = PageOf(id);
      const uint32_t s = id & (kSlots - 1);
      if (page == nullptr || page->owner[s] != h) return;
      page->owner.Set(s, 0);
      bytes_.Erase(id);
      Release(id, *page);
    });
  }
  // No page holds `h` any more: it can name the next tenant added.
  ids = TenantIds{};
  free_handles_.push_back(h);
  tenants_.erase(it);
}

AccessTable::Page& AccessTable::MakePage(uint64_t id) {
  const uint64_t p = id >> kPageBits;
  if (p >= pages_.size()) pages_.resize(p + 1);
  if (pages_[p] == nullptr) pages_[p] = std::make_unique<Page>();
  return *pages_[p];
}

void AccessTable::Release(uint64_t id, Page& page) {
  if (page.Has(id & (kSlots - 1))) return;
  --size_;
  if (--page.used == 0) {
    pages_[id >> kPageBits].reset();
    return;
  }
  page.grantees.Trim();  // capacity a shrinking page no longer needs
}

bool AccessTable::EraseGrantee(Page& page, uint32_t s, uint32_t handle) {
  const size_t at = page.grantees.Find(page.start[s], page.start[s + 1], handle);
  if (at == page.start[s + 1]) return false;
  page.grantees.Erase(at, at + 1);
  page.Shift(s, -1);
  return true;
}

AccessTable::OwnedIds& AccessTable::MakeOwned(TenantIds& ids) {
  if (ids.owned == nullptr) ids.owned = std::make_unique<OwnedIds>();
  return *ids.owned;
}

void AccessTable::TrimOwned(TenantIds& ids) {
  if (ids.owned != nullptr && ids.owned->ids.empty()) ids.owned.reset();
}

AccessTable::TenantIds* AccessTable::Find(TenantId t) {
  const auto it = tenants_.find(t);
  return it == tenants_.end() ? nullptr : &by_handle_[it->second];
}

const AccessTable::TenantIds* AccessTable::Find(TenantId t) const {
  const auto it = tenants_.find(t);
  return it == tenants_.end() ? nullptr : &by_handle_[it->second];
}

void AccessTable::SetOwner(uint64_t id, TenantId t, uint64_t bytes) {
  TenantIds* ids = Find(t);
  if (ids == nullptr) return;
  Page& page = MakePage(id);
  const uint32_t s = id & (kSlots - 1);
  const bool had = page.Has(s);
  if (page.owner[s] != 0) {
    if (TenantIds* prev = &by_handle_[page.owner[s]]; prev->tenant != kNoTenant) {
      if (prev->owned != nullptr) {
        prev->owned->ids.erase(id);
        prev->owned->bytes -= BytesOf(id);
      }
      if (prev != ids) TrimOwned(*prev);
    }
  }
  page.owner.Set(s, ids->handle);
  StoreBytes(id, bytes);
  OwnedIds& owned = MakeOwned(*ids);
  owned.ids.insert(id);
  owned.bytes += BytesOf(id);
  if (!had) {
    ++page.used;
    ++size_;
  }
}

void AccessTable::SetBytes(uint64_t id, uint64_t bytes) {
  const TenantId owner = OwnerOf(id);
  if (owner == kNoTenant) return;
  TenantIds* ids = Find(owner);
  OwnedIds* owned = ids != nullptr ? ids->owned.get() : nullptr;
  if (owned != nullptr) owned->bytes -= BytesOf(id);
  StoreBytes(id, bytes);
  if (owned != nullptr) owned->bytes += BytesOf(id);
}

void AccessTable::StoreBytes(uint64_t id, uint64_t bytes) {
  const uint32_t b =
      static_cast<uint32_t>(std::min<uint64_t>(bytes, std::numeric_limits<uint32_t>::max()));
  if (b != 0) {
    bytes_.Set(id, b);
  } else {
    bytes_.Erase(id);
  }
}

TenantId AccessTable::OwnerOf(uint64_t id) const {
  const Page* page = PageOf(id);
  return page == nullptr ? kNoTenant : by_handle_[page->owner[id & (kSlots - 1)]].tenant;
}

uint64_t AccessTable::BytesOf(uint64_t id) const {
  const uint32_t* b = bytes_.Find(id);
  return b == nullptr ? 0 : *b;
}

bool AccessTable::Grant(uint64_t id, TenantId t) {
  TenantIds* ids = Find(t);
  if (ids == nullptr || (ids->owned != nullptr && ids->owned->ids.contains(id)) ||
      !ids->granted.insert(id)) {
    return false;
  }
  Page& page = MakePage(id);
  const uint32_t s = id & (kSlots - 1);
  if (!page.Has(s)) {
    ++page.used;
    ++size_;
  }
  page.grantees.Insert(page.start[s + 1], ids->handle);
  page.Shift(s, 1);
  return true;
}

bool AccessTable::Revoke(uint64_t id, TenantId t) {
  TenantIds* ids = Find(t);
  if (ids == nullptr || !ids->granted.erase(id)) return false;
  Page* page = PageOf(id);
  const uint32_t s = id & (kSlots - 1);
  if (page != nullptr && EraseGrantee(*page, s, ids->handle)) Release(id, *page);
  return true;
}

void AccessTable::Prefetch(uint64_t id, TenantId t) const {
  const Page* page = PageOf(id);
  const uint32_t s = id & (kSlots - 1);
  if (page != nullptr) {
    page->owner.Prefetch(s);
    page->start.Prefetch(s);  // and the grantees' vector, beside the high halves' pointer
    __builtin_prefetch(&page->used);
  }
  if (const TenantIds* ids = Find(t); ids != nullptr) {
    ids->granted.Prefetch(id);
    if (ids->owned != nullptr) ids->owned->ids.Prefetch(id);
  }
}

void AccessTable::PrefetchGrantees(uint64_t id) const {
  const Page* page = PageOf(id);
  if (page == nullptr) return;
  if (const uint32_t g = page->start[id & (kSlots - 1)]; g < page->grantees.size()) {
    page->grantees.Prefetch(g);
  }
}

std::vector<TenantId> AccessTable::GrantsOf(uint64_t id) const {
  std::vector<TenantId> out;
  const Page* page = PageOf(id);
  if (page == nullptr) return out;
  const uint32_t s = id & (kSlots - 1);
  for (uint32_t g = page->start[s]; g < page->start[s + 1]; ++g) {
    out.push_back(by_handle_[page->grantees[g]].tenant);
  }
  return out;
}

void AccessTable::Remove(uint64_t id) {
  Page* page = PageOf(id);
  const uint32_t s = id & (kSlots - 1);
  if (page == nullptr || !page->Has(s)) return;
  if (TenantIds* ids = &by_handle_[page->owner[s]]; ids->owned != nullptr) {
    ids->owned->ids.erase(id);
    ids->owned->bytes -= BytesOf(id);
    TrimOwned(*ids);
  }
  const uint32_t first = page->start[s], last = page->start[s + 1];
  for (uint32_t g = first; g < last; ++g) {
    by_handle_[page->grantees[g]].granted.erase(id);
  }
  page->grantees.Erase(first, last);
  page->Shift(s, -static_cast<int>(last - first));
  page->owner.Set(s, 0);
  bytes_.Erase(id);
  Release(id, *page);
}

size_t AccessTable::OwnedCount(TenantId t) const {
  const TenantIds* ids = Find(t);
  return ids == nullptr || ids->owned == nullptr ? 0 : ids->owned->ids.size();
}

size_t AccessTable::VisibleCount(TenantId t) const {
  const TenantIds* ids = Find(t);
  return ids == nullptr ? 0 : OwnedCount(t) + ids->granted.size();
}

uint64_t AccessTable::OwnedBytes(TenantId t) const {
  const TenantIds* ids = Find(t);
  return ids == nullptr || ids->owned == nullptr ? 0 : ids->owned->bytes;
}

const AccessTable::IdSet* AccessTable::Owned(TenantId t) const {
  static const IdSet kNone;
  const TenantIds* ids = Find(t);
  if (ids == nullptr) return nullptr;
  return ids->owned == nullptr ? &kNone : &ids->owned->ids;
}

const AccessTable::IdSet* AccessTable::Granted(TenantId t) const {
  const TenantIds* ids = Find(t);
  return ids == nullptr ? nullptr : &ids->granted;
}

size_t AccessTable::MemoryBytes() const {
  // The tenants' table: a slot (tenant, pointer) and a control byte per capacity.
  size_t bytes = pages_.capacity() * sizeof(pages_[0]) + bytes_.MemoryBytes() +
                 tenants_.capacity() * (sizeof(decltype(tenants_)::value_type) + 1) +
                 by_handle_.size() * sizeof(TenantIds) +
                 free_handles_.capacity() * sizeof(uint32_t);
  for (const auto& page : pages_) {
    if (page == nullptr) continue;
    bytes += sizeof(Page) + page->owner.HeapBytes() + page->start.HeapBytes() +
             page->grantees.HeapBytes();
  }
  for (const TenantIds& ids : by_handle_) {
    bytes += ids.granted.MemoryBytes();
    if (ids.owned != nullptr) bytes += sizeof(OwnedIds) + ids.owned->ids.MemoryBytes();
  }
  return bytes;
}

}  // namespace shoal::tenants

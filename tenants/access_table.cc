#include "tenants/access_table.h"

#include <algorithm>
#include <limits>

namespace shoal::tenants {

void AccessTable::AddTenant(TenantId t) {
  if (!tenants_.contains(t)) tenants_.emplace(t, std::make_unique<TenantIds>());
}

void AccessTable::RemoveTenant(TenantId t) {
  const auto it = tenants_.find(t);
  if (it == tenants_.end()) return;
  it->second->granted.ForEach([&](uint64_t id) {
    Page* page = PageOf(id);
    const uint32_t s = id & (kSlots - 1);
    if (page != nullptr && EraseGrantee(*page, s, t)) Release(id, *page);
  });
  it->second->owned.ForEach([&](uint64_t id) {
    Page* page = PageOf(id);
    const uint32_t s = id & (kSlots - 1);
    if (page == nullptr || page->owner[s] != t) return;
    page->owner[s] = kNoTenant;
    bytes_.Erase(id);
    Release(id, *page);
  });
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
  // Give back capacity a shrinking page no longer needs (grow by a quarter, shrink at half).
  if (page.grantees.capacity() > 2 * page.grantees.size() + 16) page.grantees.shrink_to_fit();
}

bool AccessTable::EraseGrantee(Page& page, uint32_t s, TenantId t) {
  const auto first = page.grantees.begin() + page.start[s];
  const auto last = page.grantees.begin() + page.start[s + 1];
  const auto at = std::find(first, last, t);
  if (at == last) return false;
  page.grantees.erase(at);
  page.Shift(s, -1);
  return true;
}

AccessTable::TenantIds* AccessTable::Find(TenantId t) {
  const auto it = tenants_.find(t);
  return it == tenants_.end() ? nullptr : it->second.get();
}

const AccessTable::TenantIds* AccessTable::Find(TenantId t) const {
  const auto it = tenants_.find(t);
  return it == tenants_.end() ? nullptr : it->second.get();
}

void AccessTable::SetOwner(uint64_t id, TenantId t, uint64_t bytes) {
  TenantIds* ids = Find(t);
  if (ids == nullptr) return;
  Page& page = MakePage(id);
  const uint32_t s = id & (kSlots - 1);
  const bool had = page.Has(s);
  if (page.owner[s] != kNoTenant) {
    if (TenantIds* prev = Find(page.owner[s])) {
      prev->owned.erase(id);
      prev->bytes -= BytesOf(id);
    }
  }
  page.owner[s] = t;
  StoreBytes(id, bytes);
  ids->owned.insert(id);
  ids->bytes += BytesOf(id);
  if (!had) {
    ++page.used;
    ++size_;
  }
}

void AccessTable::SetBytes(uint64_t id, uint64_t bytes) {
  const TenantId owner = OwnerOf(id);
  if (owner == kNoTenant) return;
  TenantIds* ids = Find(owner);
  if (ids != nullptr) ids->bytes -= BytesOf(id);
  StoreBytes(id, bytes);
  if (ids != nullptr) ids->bytes += BytesOf(id);
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
  return page == nullptr ? kNoTenant : page->owner[id & (kSlots - 1)];
}

uint64_t AccessTable::BytesOf(uint64_t id) const {
  const uint32_t* b = bytes_.Find(id);
  return b == nullptr ? 0 : *b;
}

bool AccessTable::Grant(uint64_t id, TenantId t) {
  TenantIds* ids = Find(t);
  if (ids == nullptr || ids->owned.contains(id) || !ids->granted.insert(id)) return false;
  Page& page = MakePage(id);
  const uint32_t s = id & (kSlots - 1);
  if (!page.Has(s)) {
    ++page.used;
    ++size_;
  }
  std::vector<TenantId>& g = page.grantees;
  // Grow by a quarter: doubling would leave a third of the capacity unused on average.
  if (g.size() == g.capacity()) g.reserve(g.size() * 5 / 4 + 8);
  g.insert(g.begin() + page.start[s + 1], t);
  page.Shift(s, 1);
  return true;
}

bool AccessTable::Revoke(uint64_t id, TenantId t) {
  TenantIds* ids = Find(t);
  if (ids == nullptr || !ids->granted.erase(id)) return false;
  Page* page = PageOf(id);
  const uint32_t s = id & (kSlots - 1);
  if (page != nullptr && EraseGrantee(*page, s, t)) Release(id, *page);
  return true;
}

std::span<const TenantId> AccessTable::GrantsOf(uint64_t id) const {
  const Page* page = PageOf(id);
  if (page == nullptr) return {};
  return page->Grants(id & (kSlots - 1));
}

void AccessTable::Remove(uint64_t id) {
  Page* page = PageOf(id);
  const uint32_t s = id & (kSlots - 1);
  if (page == nullptr || !page->Has(s)) return;
  if (TenantIds* ids = Find(page->owner[s])) {
    ids->owned.erase(id);
    ids->bytes -= BytesOf(id);
  }
  for (TenantId t : page->Grants(s)) {
    if (TenantIds* ids = Find(t)) ids->granted.erase(id);
  }
  const uint32_t n = page->start[s + 1] - page->start[s];
  page->grantees.erase(page->grantees.begin() + page->start[s],
                       page->grantees.begin() + page->start[s + 1]);
  page->Shift(s, -static_cast<int>(n));
  page->owner[s] = kNoTenant;
  bytes_.Erase(id);
  Release(id, *page);
}

size_t AccessTable::OwnedCount(TenantId t) const {
  const TenantIds* ids = Find(t);
  return ids == nullptr ? 0 : ids->owned.size();
}

size_t AccessTable::VisibleCount(TenantId t) const {
  const TenantIds* ids = Find(t);
  return ids == nullptr ? 0 : ids->owned.size() + ids->granted.size();
}

uint64_t AccessTable::OwnedBytes(TenantId t) const {
  const TenantIds* ids = Find(t);
  return ids == nullptr ? 0 : ids->bytes;
}

const AccessTable::IdSet* AccessTable::Owned(TenantId t) const {
  const TenantIds* ids = Find(t);
  return ids == nullptr ? nullptr : &ids->owned;
}

const AccessTable::IdSet* AccessTable::Granted(TenantId t) const {
  const TenantIds* ids = Find(t);
  return ids == nullptr ? nullptr : &ids->granted;
}

size_t AccessTable::MemoryBytes() const {
  // The tenants' table: a slot (tenant, pointer) and a control byte per capacity.
  size_t bytes = pages_.capacity() * sizeof(pages_[0]) + bytes_.MemoryBytes() +
                 tenants_.capacity() * (sizeof(decltype(tenants_)::value_type) + 1);
  for (const auto& page : pages_) {
    if (page != nullptr) bytes += sizeof(Page) + page->grantees.capacity() * sizeof(TenantId);
  }
  for (const auto& [t, ids] : tenants_) {
    bytes += sizeof(TenantIds) + ids->owned.MemoryBytes() + ids->granted.MemoryBytes();
  }
  return bytes;
}

}  // namespace shoal::tenants

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
    Entry* e = ids_.Find(id);
    if (e == nullptr) return;
    e->grants.erase(std::remove(e->grants.begin(), e->grants.end(), t), e->grants.end());
    if (e->owner == kNoTenant && e->grants.empty()) ids_.Erase(id);
  });
  it->second->owned.ForEach([&](uint64_t id) {
    Entry* e = ids_.Find(id);
    if (e == nullptr) return;
    e->owner = kNoTenant;
    if (e->grants.empty()) ids_.Erase(id);
  });
  tenants_.erase(it);
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
  Entry e;
  e.owner = t;
  e.bytes = static_cast<uint32_t>(std::min<uint64_t>(bytes, std::numeric_limits<uint32_t>::max()));
  if (Entry* old = ids_.Find(id)) {
    e.grants = std::move(old->grants);
    if (old->owner != kNoTenant) {
      if (TenantIds* prev = Find(old->owner)) {
        prev->owned.erase(id);
        prev->bytes -= old->bytes;
      }
    }
  }
  ids->owned.insert(id);
  ids->bytes += e.bytes;
  ids_.Set(id, std::move(e));
}

void AccessTable::SetBytes(uint64_t id, uint64_t bytes) {
  Entry* e = ids_.Find(id);
  if (e == nullptr || e->owner == kNoTenant) return;
  TenantIds* ids = Find(e->owner);
  const uint32_t b =
      static_cast<uint32_t>(std::min<uint64_t>(bytes, std::numeric_limits<uint32_t>::max()));
  if (ids != nullptr) ids->bytes = ids->bytes - e->bytes + b;
  e->bytes = b;
}

TenantId AccessTable::OwnerOf(uint64_t id) const {
  const Entry* e = ids_.Find(id);
  return e == nullptr ? kNoTenant : e->owner;
}

uint64_t AccessTable::BytesOf(uint64_t id) const {
  const Entry* e = ids_.Find(id);
  return e == nullptr ? 0 : e->bytes;
}

bool AccessTable::Grant(uint64_t id, TenantId t) {
  TenantIds* ids = Find(t);
  if (ids == nullptr || ids->owned.contains(id) || !ids->granted.insert(id)) return false;
  Entry* e = ids_.Find(id);
  if (e == nullptr) {
    ids_.Insert(id, Entry{});
    e = ids_.Find(id);
  }
  e->grants.push_back(t);
  return true;
}

bool AccessTable::Revoke(uint64_t id, TenantId t) {
  TenantIds* ids = Find(t);
  if (ids == nullptr || !ids->granted.erase(id)) return false;
  if (Entry* e = ids_.Find(id)) {
    e->grants.erase(std::remove(e->grants.begin(), e->grants.end(), t), e->grants.end());
    if (e->owner == kNoTenant && e->grants.empty()) ids_.Erase(id);
  }
  return true;
}

std::span<const TenantId> AccessTable::GrantsOf(uint64_t id) const {
  const Entry* e = ids_.Find(id);
  if (e == nullptr) return {};
  return std::span<const TenantId>(e->grants.data(), e->grants.size());
}

void AccessTable::Remove(uint64_t id) {
  Entry* e = ids_.Find(id);
  if (e == nullptr) return;
  if (TenantIds* ids = Find(e->owner)) {
    ids->owned.erase(id);
    ids->bytes -= e->bytes;
  }
  for (TenantId t : e->grants) {
    if (TenantIds* ids = Find(t)) ids->granted.erase(id);
  }
  ids_.Erase(id);
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
  size_t bytes = ids_.MemoryBytes();
  ids_.ForEach([&](uint64_t, const Entry& e) {
    if (e.grants.capacity() > 2) bytes += e.grants.capacity() * sizeof(TenantId) + 16;  // heap
  });
  for (const auto& [t, ids] : tenants_) {
    bytes += sizeof(TenantIds) + ids->owned.MemoryBytes() + ids->granted.MemoryBytes();
  }
  return bytes;
}

}  // namespace shoal::tenants

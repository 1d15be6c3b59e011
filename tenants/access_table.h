// AccessTable: who may see which vector of a collection — each internal id's owner tenant and
// the tenants it was granted to, and each tenant's ids (owned and granted) — in RAM, rebuilt at
// open from the catalog's owner and grant rows (storage/records/record_store_tenants.cc).
//
//   shoal::tenants::AccessTable access;
//   access.AddTenant(1);
//   access.AddTenant(2);
//   access.SetOwner(/*id=*/7, /*tenant=*/1, /*bytes=*/520);
//   access.Grant(7, 2);
//   if (access.Visible(2, 7)) ...;     // true: granted
//   access.Remove(7);                  // deleted: gone for every tenant
//
// Isolation: the DB checks every candidate a tenant's search scores or returns against
// Visible(), shortlist hits included. Internal ids are never reused (a rewritten key gets a new
// id; the id counter only grows, see db/collection.h), so an id that left the table can never
// come back naming another vector: a stale reference to it (in a shortlist or a posting) fails
// the check instead of reaching a newer record. Were ids ever reused, the table would have to
// tag them with a generation; Collection checks the invariant (ids of new records are above
// every id it has handed out) at each write.
//
// Memory: ids and tenants are stored as tenant handles (dense numbers from 1, reused after a
// tenant is removed), 2 bytes while the collection holds fewer than 65,536 tenants. Per id that
// has an owner or a grant, in pages of 256 ids: its owner's handle and where its grantees start
// in its page's packed list (2 + 2 bytes), 2 bytes per grantee, and 4 bytes of record size for
// an id with an owner (none for ids only granted). A page widens a part to 4 bytes a value in
// place (tenants/narrow_u32.h) when it first stores a handle or an offset of 2^16 or more.
// Plus about 2 bytes per (tenant, id) pair (a CompactIdSet of each tenant's granted ids, and
// of its owned ids once it owns any). A tenant with no ids costs one small struct.
//
// Thread safety: none of its own; const methods may run concurrently (Collection guards it with
// its state's reader/writer lock).
#ifndef SHOAL_TENANTS_ACCESS_TABLE_H_
#define SHOAL_TENANTS_ACCESS_TABLE_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "base/paged_id_map.h"
#include "tenants/compact_id_set.h"
#include "tenants/narrow_u32.h"

namespace shoal::tenants {

using TenantId = uint32_t;
inline constexpr TenantId kNoTenant = 0;  // a record no tenant owns

class AccessTable {
  struct TenantIds;  // a tenant's id sets (below)

 public:
  using IdSet = CompactIdSet;

  // ---- Tenants ----
  // Adds a tenant with no ids (no-op when present).
  void AddTenant(TenantId t);
  bool HasTenant(TenantId t) const { return tenants_.contains(t); }
  // Forgets the tenant: its grants are revoked; it must own nothing any more (ids it still
  // owns become unowned).
  void RemoveTenant(TenantId t);

  // ---- Ids ----
  // Records `id` (not yet in the table) as owned by `t` (kNoTenant: unowned, then a no-op;
  // `t` must have been added), its record taking `bytes`.
  void SetOwner(uint64_t id, TenantId t, uint64_t bytes);
  // The owner's byte count of `id` (after a reopen, when the record is read).
  void SetBytes(uint64_t id, uint64_t bytes);
  // kNoTenant when `id` has no owner (or is unknown).
  TenantId OwnerOf(uint64_t id) const;
  // The bytes recorded for `id` (0 when it has no entry).
  uint64_t BytesOf(uint64_t id) const;
  // Makes `id` visible to `t` (which must have been added). False (nothing changes) when `t`
  // owns it or was granted it already.
  bool Grant(uint64_t id, TenantId t);
  // False when `id` was not granted to `t` (its owner included).
  bool Revoke(uint64_t id, TenantId t);
  // The tenants `id` was granted to, in grant order (empty when none).
  std::vector<TenantId> GrantsOf(uint64_t id) const;
  // Ask for the cache lines Visible(t, id), Grant(id, t) and Revoke(id, t) read and write, so
  // that their misses (a random id and tenant: most of a single grant's own cost) overlap
  // instead of following each other. Prefetch: t's id sets around id and id's page slot (its
  // owner and start); PrefetchGrantees, once those have arrived: the slot's grantees. A grant or
  // revoke of a few keys calls the first before its check and the second after it; the apply
  // after the commit then finds them.
  void Prefetch(uint64_t id, TenantId t) const;
  void PrefetchGrantees(uint64_t id) const;
  // Forgets `id` for every tenant (a delete, or the old id of a rewritten record).
  void Remove(uint64_t id);

  // ---- Queries ----
  // May tenant `t` see `id`? (It owns it or was granted it.) kNoTenant sees nothing here.
  bool Visible(TenantId t, uint64_t id) const { return ViewOf(t).Visible(id); }
  // Visible for one tenant with its id sets looked up once (Visible finds them by a hash of the
  // tenant at each call): for checking many ids of one reader. Valid until the table changes.
  class View {
   public:
    bool Visible(uint64_t id) const {
      return ids_ != nullptr && (ids_->granted.contains(id) ||
                                 (ids_->owned != nullptr && ids_->owned->ids.contains(id)));
    }
    // visible[i] = Visible(ids[i]) (1 or 0), the ids' lookups overlapped
    // (CompactIdSet::ContainsEach).
    void VisibleEach(std::span<const uint64_t> ids, uint8_t* visible) const {
      std::fill(visible, visible + ids.size(), 0);
      if (ids_ == nullptr) return;
      ids_->granted.ContainsEach(ids, visible);
      if (ids_->owned != nullptr) ids_->owned->ids.ContainsEach(ids, visible);
    }

   private:
    friend class AccessTable;
    explicit View(const TenantIds* ids) : ids_(ids) {}
    const TenantIds* ids_;  // null: a tenant the table does not know
  };
  View ViewOf(TenantId t) const {
    const auto it = tenants_.find(t);
    return View(it == tenants_.end() ? nullptr : &by_handle_[it->second]);
  }
  size_t OwnedCount(TenantId t) const;
  size_t VisibleCount(TenantId t) const;
  uint64_t OwnedBytes(TenantId t) const;
  // The tenant's owned / granted ids (nullptr for an unknown tenant, an empty set for a tenant
  // that owns nothing); ForEach is ascending.
  const IdSet* Owned(TenantId t) const;
  const IdSet* Granted(TenantId t) const;
  // Ids with an entry (an owner or a grant).
  size_t size() const { return size_; }
  // Calls fn(id, owner, grants) for every id with an entry, in no order (`grants`: a span
  // valid during the call).
  template <typename Fn>
  void ForEachId(const Fn& fn) const {
    std::vector<TenantId> grants;
    for (uint64_t p = 0; p < pages_.size(); ++p) {
      const Page* page = pages_[p].get();
      if (page == nullptr) continue;
      for (uint32_t s = 0; s < kSlots; ++s) {
        if (!page->Has(s)) continue;
        grants.clear();
        for (uint32_t g = page->start[s]; g < page->start[s + 1]; ++g) {
          grants.push_back(by_handle_[page->grantees[g]].tenant);
        }
        fn((p << kPageBits) | s, by_handle_[page->owner[s]].tenant,
           std::span<const TenantId>(grants));
      }
    }
  }
  // Calls fn(t) for every tenant, in no order.
  template <typename Fn>
  void ForEachTenant(const Fn& fn) const {
    for (const auto& [t, handle] : tenants_) fn(t);
  }
  size_t MemoryBytes() const;

 private:
  // The entries of 256 consecutive ids: each id's owner's handle, and its grantees' handles
  // packed in one array (in grant order; id slot s's are [start[s], start[s + 1])). A grant or
  // revoke moves the page's later grantees by one (at most a few KB): no per-id allocation.
  static constexpr int kPageBits = 8;
  static constexpr uint32_t kSlots = uint32_t{1} << kPageBits;
  struct Page {
    NarrowArray<kSlots> owner;      // handle; 0: none
    NarrowArray<kSlots + 1> start;  // into grantees
    NarrowVector grantees;          // handles
    uint32_t used = 0;              // slots with an owner or a grant
    bool Has(uint32_t s) const { return owner[s] != 0 || start[s] != start[s + 1]; }
    // Moves the start of every slot after `s` by `delta` (grantees of `s` added or removed).
    void Shift(uint32_t s, int delta) { start.AddFrom(s + 1, delta, grantees.size() > kNarrowMax); }
  };
  struct OwnedIds {
    IdSet ids;
    uint64_t bytes = 0;  // of the records
  };
  struct TenantIds {
    IdSet granted;
    std::unique_ptr<OwnedIds> owned;  // null while it owns nothing (most tenants of a shared set)
    TenantId tenant = kNoTenant;      // kNoTenant: handle 0, or a free handle
    uint32_t handle = 0;
  };
  TenantIds* Find(TenantId t);
  const TenantIds* Find(TenantId t) const;

  Page* PageOf(uint64_t id) const {
    const uint64_t p = id >> kPageBits;
    return p < pages_.size() ? pages_[p].get() : nullptr;
  }
  Page& MakePage(uint64_t id);
  // After `id`'s slot of `page` (its page) lost its owner or a grantee: forgets the slot once it
  // holds neither, and the page once it holds nothing.
  void Release(uint64_t id, Page& page);
  // `id`'s record bytes (clamped to 32 bits), kept only when non-zero.
  void StoreBytes(uint64_t id, uint64_t bytes);
  // Removes grantee `t` of slot `s`; false when it is not one.
  static bool EraseGrantee(Page& page, uint32_t s, uint32_t handle);
  // The tenant's owned ids, made when it first owns one.
  static OwnedIds& MakeOwned(TenantIds& ids);
  // Drops the owned ids of `ids` once there are none.
  static void TrimOwned(TenantIds& ids);

  // Internal ids are dense (handed out in order, and a tenant's records are most of a
  // multi-tenant collection's), so paged arrays indexed by id, no hashing.
  std::vector<std::unique_ptr<Page>> pages_;  // page p: ids [p << kPageBits, (p + 1) << ...)
  size_t size_ = 0;                           // ids with an owner or a grant
  // The record bytes of owned ids (quotas), only where non-zero: ids that are only granted,
  // the bulk of a shared collection, pay nothing.
  base::PagedIdMap<uint32_t> bytes_;
  absl::flat_hash_map<TenantId, uint32_t> tenants_;  // tenant -> handle
  // By handle (0: none): the tenants' ids. A deque: an element never moves (Owned and Granted
  // hand out pointers), no allocation per tenant. Free handles are reused first.
  std::deque<TenantIds> by_handle_ = std::deque<TenantIds>(1);
  std::vector<uint32_t> free_handles_;
};

}  // namespace shoal::tenants

#endif  // SHOAL_TENANTS_ACCESS_TABLE_H_

// CollectionState: what a collection's searches read, behind one reader/writer mutex — the SSD
// index, the write buffer, the indexed watermark, the tombstones, the key maps and the attribute
// index. Collection changes it on writes, builds and drops; its IndexMaintainer's publisher
// changes it as drained vectors reach the postings and swept tombstones go. A search holds `mu`
// shared for its whole run, so it sees a write batch whole or not at all.
//
// Whoever holds `mu` must not wait for anything a low-priority thread holds (see
// index_maintainer.h): a maintenance thread preempted while holding it, or queued for it, would
// stall every search.
//
// A search takes `mu` through SearchHold, which counts it in `searches_waiting` while it waits; a
// writer that takes `mu` again and again in slices (the publisher) calls LetSearchesIn between
// two slices. absl::Mutex lets a writer's Lock() take a free lock ahead of the readers queued for
// it, so without that a search woken by the end of one slice found the next one begun, and waited
// through all of them (docs/PERFORMANCE.md, "What searches block on").
//
// Thread safety: the fields are guarded by `mu`; the tombstone log has its own mutex (taken after
// `mu`), through which the maintenance thread learns of new tombstones without taking `mu`;
// `searches_waiting` is atomic.
#ifndef SHOAL_DB_COLLECTION_STATE_H_
#define SHOAL_DB_COLLECTION_STATE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/paged_id_map.h"
#include "base/paged_id_set.h"
#include "base/sharded_hash.h"
#include "db/attribute_index.h"
#include "db/key_id_map.h"
#include "db/tenant_stats.h"
#include "db/write_buffer.h"
#include "index/spann/spann_index.h"
#include "shoal/types.h"
#include "tenants/access_table.h"
#include "tenants/tenant_tree.h"

namespace shoal::db {

struct CollectionState {
  CollectionState(size_t dimension, index::Metric metric) : buffer(dimension, metric) {}

  // Is `iid` in the SSD index's postings (or tombstoned)?
  bool InSpann(uint64_t iid) const ABSL_SHARED_LOCKS_REQUIRED(mu) {
    return spann != nullptr && iid < indexed_below;
  }
  // Tombstones `iid` (stale, and the log the maintenance thread reads).
  void MarkStale(uint64_t iid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    stale.Insert(iid);
    absl::MutexLock lock(&stale_log_mu);
    stale_log.push_back(iid);
  }
  // Forgets every tombstone (a new index, or none).
  void ClearStale() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    stale.Clear();
    tombstones_at_sweep = 0;
    absl::MutexLock lock(&stale_log_mu);
    stale_log.clear();
  }
  // The ids tombstoned since the last call (without holding `mu`).
  std::vector<uint64_t> TakeStaleLog() {
    std::vector<uint64_t> fresh;
    absl::MutexLock lock(&stale_log_mu);
    fresh.swap(stale_log);
    return fresh;
  }

  // Called between two exclusive holds of `mu` (not holding it): waits until the searches
  // waiting for `mu` have it, for at most `most`.
  void LetSearchesIn(absl::Duration most) const ABSL_LOCKS_EXCLUDED(mu) {
    const absl::Time until = absl::Now() + most;
    while (searches_waiting.load(std::memory_order_acquire) > 0 && absl::Now() < until) {
      absl::SleepFor(absl::Microseconds(10));  // frees this CPU for the woken search
    }
  }

  mutable absl::Mutex mu;
  // Searches waiting for `mu` (SearchHold).
  mutable std::atomic<int> searches_waiting{0};
  // The vectors the SSD index does not hold (all of them without one).
  WriteBuffer buffer ABSL_GUARDED_BY(mu);
  std::unique_ptr<index::SpannIndex> spann ABSL_GUARDED_BY(mu);
  // Ids below this are in the SSD index's postings or tombstoned (the build's watermark,
  // advanced by online updates).
  uint64_t indexed_below ABSL_GUARDED_BY(mu) = 0;
  // Tombstones: ids deleted or replaced that some posting may still hold. A bitmap: a search
  // checks every candidate it scans against it.
  base::PagedIdSet stale ABSL_GUARDED_BY(mu);
  size_t tombstones_at_sweep ABSL_GUARDED_BY(mu) = 0;  // stale.size() after the last sweep
  KeyIdMap id_of ABSL_GUARDED_BY(mu);
  // Internal id -> key. Ids are handed out in order, so an array by id in pages: a search's
  // hit finds its key in one load (a hash map's probe read the shard, the control bytes, then
  // the slot, one after another).
  base::PagedIdMap<Key> key_of ABSL_GUARDED_BY(mu);
  AttributeIndex attrs ABSL_GUARDED_BY(mu);  // attributes and tags of every live record

  // Tenants (db/collection_tenants.cc): by name (holding the entries) and by id (pointing into
  // them), and who sees which internal id.
  TenantsByName tenants ABSL_GUARDED_BY(mu);
  absl::flat_hash_map<tenants::TenantId, const TenantEntry*> tenant_by_id ABSL_GUARDED_BY(mu);
  tenants::TenantId next_tenant_id ABSL_GUARDED_BY(mu) = 1;
  tenants::AccessTable access ABSL_GUARDED_BY(mu);
  // Each tenant's sub-tree of the SSD index's centroid tree (one node without an index); rebuilt
  // when the index changes.
  tenants::TenantTree tenant_tree ABSL_GUARDED_BY(mu){&access};  // reads `access`

  // Ids added to `stale` since the maintenance thread last took them.
  absl::Mutex stale_log_mu ABSL_ACQUIRED_AFTER(mu);
  std::vector<uint64_t> stale_log ABSL_GUARDED_BY(stale_log_mu);
};

// A search's shared hold of state.mu, counted in state.searches_waiting until it has it.
class ABSL_SCOPED_LOCKABLE SearchHold {
 public:
  explicit SearchHold(const CollectionState& state) ABSL_SHARED_LOCK_FUNCTION(state.mu)
      : mu_(state.mu) {
    state.searches_waiting.fetch_add(1, std::memory_order_relaxed);
    mu_.ReaderLock();
    state.searches_waiting.fetch_sub(1, std::memory_order_release);
  }
  SearchHold(const SearchHold&) = delete;
  SearchHold& operator=(const SearchHold&) = delete;
  ~SearchHold() ABSL_UNLOCK_FUNCTION() { mu_.ReaderUnlock(); }

 private:
  absl::Mutex& mu_;
};

}  // namespace shoal::db

#endif  // SHOAL_DB_COLLECTION_STATE_H_

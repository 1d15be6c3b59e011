// IndexHandoff: where a collection's writers, its index maintenance thread, its publisher thread
// and FlushIndexUpdates callers meet — one mutex over the queues between them:
//  - pending batches: committed writes (ids and their vectors in index form) waiting to be moved
//    into the SSD index's postings, by first id; and the first ids of batches still committing,
//    which hold the drain's watermark below them (batches commit and apply in any order);
//  - publications: each drain or sweep step's change to what searches read, applied in order by
//    the publisher;
//  - flush tickets: FlushIndexUpdates / DrainIndexUpdates requests, numbered from 1, the last one
//    asking for every tombstone swept, and the last one served with the status of the round that
//    served it (the maintenance thread's, or a flushing caller's that does the work itself: a
//    helper; the maintenance thread waits while one works, or while another thread claims the
//    work);
//  - the last maintenance error and the updater's counters, for writers and Info.
//
//   handoff.MarkCommitting(ids[0]);                 // writer, before its commit
//   handoff.AddPending({ids, vectors}, ids[0]);     // writer, once applied
//   IndexHandoff::Step step = handoff.TakeStep(batch, max_step);   // maintenance thread
//
// Nothing here calls out while holding the mutex, so it is taken after every other lock of the
// collection. Thread safety: every method is thread-safe.
#ifndef SHOAL_DB_INDEX_HANDOFF_H_
#define SHOAL_DB_INDEX_HANDOFF_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "index/spann/spann_updater.h"

namespace shoal::db {

class IndexHandoff {
 public:
  // Committed writes awaiting the postings, with their vectors (index form): the maintenance
  // thread reads them here, not from the buffer under the collection's search lock.
  struct Batch {
    std::vector<uint64_t> ids;   // ascending
    std::vector<float> vectors;  // ids.size() rows
  };
  // One step's change to what searches read, applied by the publisher.
  struct Publication {
    uint64_t generation = 0;        // of the SSD index it belongs to (skipped once replaced)
    uint64_t watermark = 0;         // the indexed watermark advances to it (0: no change)
    std::vector<uint64_t> drained;  // in the published postings: they leave the buffer
    std::vector<uint64_t> erased;   // tombstones no posting holds any more
    bool sweep_done = false;        // the sweep's tombstone count is taken afterwards
    bool empty() const {
      return watermark == 0 && drained.empty() && erased.empty() && !sweep_done;
    }
  };
  // What a maintenance round is for.
  struct Round {
    bool closing = false;
    bool writes = false;     // pending batches arrived
    uint64_t flush = 0;      // the last flush request the round serves (0: none)
    bool sweep_all = false;  // one of those asked for every tombstone swept out
  };
  // The first pending batches, up to one drain step, and the watermark the step may commit: ids
  // below it are in the postings or dead once the step is published.
  struct Step {
    std::vector<std::shared_ptr<const Batch>> batches;
    uint64_t watermark = UINT64_MAX;
  };

  // `name` (the collection's) for error messages.
  explicit IndexHandoff(std::string name) : name_(std::move(name)) {}

  // ---- Writers ----
  // A batch starting at `first_id` is committing: the watermark stays below it until AddPending.
  void MarkCommitting(uint64_t first_id);
  // Queues `batch` (non-empty); `committing_first`: the id MarkCommitting named for it.
  void AddPending(Batch batch, std::optional<uint64_t> committing_first = std::nullopt);
  // Waits while `limit` or more ids are pending, up to `wait`; Unavailable (naming the last
  // maintenance error) if they still are.
  absl::Status AwaitBacklog(size_t limit, absl::Duration wait);

  // ---- The maintenance thread ----
  // Waits up to `idle` for pending writes, a flush request or closing (and while a helper works:
  // the round would compete with it); with writes but no flush, up to `group_wait` more for
  // `batch` pending ids (one posting rewrite per batch, not per client write).
  Round AwaitRound(size_t batch, absl::Duration idle, absl::Duration group_wait);
  // A backlog is drained in bigger steps (each touched posting is rewritten once per step): half
  // the pending ids (all of them while a flush request waits), at least `batch`, at most
  // max(max_step, batch).
  Step TakeStep(size_t batch, size_t max_step);
  // The step's batches are in the postings (committed): they leave the queue.
  void FinishStep(const Step& step);
  // Queues a publication (unless empty) and records the updater's counters.
  void Publish(Publication p, const index::UpdateStats& stats);
  void SetStats(const index::UpdateStats& stats);
  // Ends a round: records its status; serves `flush` (unless a later ticket was served) when the
  // round failed or drained all (`done`); after a failure waits up to `retry_wait`, less if a
  // flush request or closing comes.
  void EndRound(uint64_t flush, const absl::Status& status, bool done, absl::Duration retry_wait);
  // A round with no index to maintain: serves `flush` (OK) and idles up to `idle`.
  void EndIdleRound(uint64_t flush, absl::Duration idle);
  bool closing() const;

  // ---- The publisher thread ----
  // Waits for the next publication and marks it in progress; false once closing.
  bool NextPublication(Publication* p);
  void DonePublishing();
  // Returns once every publication queued so far is applied (or closing).
  void AwaitPublished();

  // ---- Anyone ----
  // Asks the maintenance thread for a flush (with `sweep_all`, one that sweeps every tombstone
  // out) and waits for the round that serves it; its status, or Unavailable if the collection
  // closes first.
  absl::Status RequestFlush(bool sweep_all);
  // RequestFlush in two halves: the request, which returns its ticket, and the wait for a round
  // that serves it, up to `wait` (nullopt if none did by then).
  uint64_t AddFlushRequest(bool sweep_all);
  std::optional<absl::Status> AwaitFlush(uint64_t ticket, absl::Duration wait);

  // ---- Helpers: flushing callers that do the work on their own thread ----
  // A helper's round: every flush requested so far (as AwaitRound's). Until EndHelping the
  // maintenance thread starts no round, and helping() tells it to leave the one it is in.
  Round BeginHelping();
  // Ends a helper's round as EndRound does (no retry wait).
  void EndHelping(uint64_t flush, const absl::Status& status, bool done);
  // A helper that serves no flush: another thread that takes the index work over for a while (a
  // build, drop, snapshot or Verify: IndexMaintainer::WorkClaim). Until EndClaim the maintenance
  // thread starts no round and leaves the one it is in, as for a flushing helper.
  void BeginClaim();
  void EndClaim();
  // True while a helper works; no lock taken (the maintenance thread asks between units of work).
  bool helping() const { return helpers_.load(std::memory_order_relaxed) > 0; }
  // Forgets the queued writes and publications (a new index, or none).
  void Clear();
  // Zeroes the counters (a new updater).
  void ResetStats();
  index::UpdateStats stats() const;
  // Stops the threads' waits: every later wait returns at once.
  void Close();

 private:
  bool FlushingLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return flush_requested_ > flush_served_;
  }
  Round FlushRoundLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void ServeLocked(uint64_t flush, const absl::Status& status, bool done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string name_;
  mutable absl::Mutex mu_;
  // By first id; shared, so that a drain step copies them without holding mu_.
  std::map<uint64_t, std::shared_ptr<const Batch>> pending_ ABSL_GUARDED_BY(mu_);
  size_t pending_ids_ ABSL_GUARDED_BY(mu_) = 0;
  std::multiset<uint64_t> committing_ ABSL_GUARDED_BY(mu_);
  std::deque<Publication> publications_ ABSL_GUARDED_BY(mu_);
  bool publishing_ ABSL_GUARDED_BY(mu_) = false;  // the publisher holds one
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);  // of the last maintenance round
  uint64_t flush_requested_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t sweep_all_requested_ ABSL_GUARDED_BY(mu_) = 0;  // the last ticket with sweep_all
  uint64_t flush_served_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status flush_status_ ABSL_GUARDED_BY(mu_);
  index::UpdateStats stats_ ABSL_GUARDED_BY(mu_);
  // Helpers (and claims) at work: changed under mu_ (so that waits on it re-evaluate), read without
  // it.
  std::atomic<int> helpers_{0};
};

}  // namespace shoal::db

#endif  // SHOAL_DB_INDEX_HANDOFF_H_

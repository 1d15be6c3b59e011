// IndexMaintainer: online updates of a collection's SSD index. Its maintenance thread moves
// buffered writes into the SpannIndex's postings through a SpannUpdater and sweeps tombstones out
// of them; its publisher thread makes each step visible to searches. One drain step, in order:
//   data pages (the updater writes and syncs them) -> one RocksDB batch (the directory rows, the
//   advanced watermark, erased tombstones: the step's commit point) -> the new directory published
//   (SpannUpdater::Publish) -> the publisher advances the watermark and takes the drained ids out
//   of the write buffer, a slice at a time (a reader sees each vector in at least one of the two;
//   a search merges duplicates).
// Tombstones accumulate until a sweep finds no posting holding them; then the publisher erases
// them. A sweep is due once enough tombstones came since the last one (SweepDue) and is lazy, as
// SPFresh's garbage collection: it rewrites only postings that are a quarter or more tombstoned
// (or under the merge floor, or over the cap) and erases the tombstones no posting holds any
// more; the others stay, skipped by searches, until their postings' next rewrite. A flush with
// sweep_all (FlushIndexUpdates) rewrites every posting holding one and erases them all. A
// vectors.dat mostly of dead slots is compacted when due.
//
// Scheduling: the maintenance thread runs at the lowest CPU priority and never holds the search
// lock (CollectionState::mu) beyond a brief look; its changes to what searches read go through
// the publisher, which runs at normal priority. Writers hand it their vectors through the
// IndexHandoff. A flush caller waits for it only while it gets the CPU; otherwise the caller runs
// the round itself (Flush). After a failed step (an I/O error) nothing a reader sees has changed
// and the same work is retried, backing off (RetryBackoff), so maintenance resumes by itself once
// the fault clears. A MaintenanceBudget bounds how many collections' threads work at once.
//
//   IndexMaintainer m(&state, store, collection_id, name, options, fs, budget);
//   { IndexMaintainer::WorkClaim work(&m); SHOAL_RETURN_IF_ERROR(m.Start(dir)); }
//   m.handoff().AddPending(...);    // writers
//   SHOAL_RETURN_IF_ERROR(m.Flush());
//
// Thread safety: all methods are thread-safe; those marked so need work_mu_ held, which
// serialises index mutation (drain steps, sweeps) against builds, drops, snapshots and Verify.
// Those take it through a WorkClaim, which first has the maintenance thread leave its step (at
// its low priority, a step may otherwise hold the lock for seconds while other processes keep
// the CPUs busy). Lock order: the collection's write lock, work_mu_, CollectionState::mu, the
// hand-off's mutex.
#ifndef SHOAL_DB_INDEX_MAINTAINER_H_
#define SHOAL_DB_INDEX_MAINTAINER_H_

#include <time.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "base/paged_id_set.h"
#include "db/collection_state.h"
#include "db/index_handoff.h"
#include "db/maintenance_budget.h"
#include "db/retry_backoff.h"
#include "index/spann/spann_updater.h"
#include "shoal/options.h"
#include "storage/io/file_system.h"
#include "storage/records/record_store.h"

namespace shoal::db {

class IndexMaintainer {
 public:
  // `state`, `store`, `fs` and `budget` (nullable: unbounded) are not owned and must outlive it.
  IndexMaintainer(CollectionState* state, storage::RecordStore* store, uint32_t collection_id,
                  const std::string& name, const Options& options, storage::FileSystem* fs,
                  MaintenanceBudget* budget);
  // Stops and joins the threads.
  ~IndexMaintainer();

  // work_mu_ for any thread but the maintenance thread, held while it lives: the maintenance
  // thread is first told to leave the step it is in at its next unit of work, as for a flushing
  // caller (nothing of the step committed or published, its pages freed; it is redone once the
  // claim ends), and starts no round until then. So a build, drop, snapshot or Verify waits
  // for a unit of the thread's work, not for a whole step of it at nice 19.
  class ABSL_SCOPED_LOCKABLE WorkClaim {
   public:
    explicit WorkClaim(IndexMaintainer* m) ABSL_EXCLUSIVE_LOCK_FUNCTION(m->work_mu_) : m_(m) {
      m_->ClaimWork();
    }
    ~WorkClaim() ABSL_UNLOCK_FUNCTION() { m_->EndWorkClaim(); }
    WorkClaim(const WorkClaim&) = delete;
    WorkClaim& operator=(const WorkClaim&) = delete;

   private:
    IndexMaintainer* const m_;
  };
  // WorkClaim in two halves, for a hold that spans calls (Collection::PauseIndexUpdates).
  void ClaimWork() ABSL_EXCLUSIVE_LOCK_FUNCTION(work_mu_);
  void EndWorkClaim() ABSL_UNLOCK_FUNCTION(work_mu_);
  IndexHandoff& handoff() { return handoff_; }

  // (Re)creates the updater for the state's current SpannIndex, whose files are in `dir`
  // (nothing to do without one, or with online updates off); the threads start with the first.
  absl::Status Start(const std::string& dir) ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // Drops the updater: nothing is drained until the next Start.
  void Stop() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_) {
    updater_.reset();
    has_updater_.store(false, std::memory_order_relaxed);
  }
  // Forgets the queued writes, publications and the maintenance thread's tombstones (a new
  // index, or none).
  void Reset() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  bool running() const ABSL_SHARED_LOCKS_REQUIRED(work_mu_) { return updater_ != nullptr; }

  // Moves every write handed off so far into the postings and then, with `sweep_all` when some
  // are tombstoned, sweeps them all out (without it: a lazy sweep if one is due); returns the
  // round's status. The maintenance thread does the work at its own low priority while it gets
  // the CPU; the caller waits. When it does not (other processes keep the CPUs busy, or it is
  // held up), the caller does the rest on its own thread, serialised with the maintenance thread
  // through work_mu_ (the thread leaves its step at the next unit of work). OK at once without
  // an updater.
  absl::Status Flush(bool sweep_all) ABSL_LOCKS_EXCLUDED(work_mu_);
  // Best effort, on the caller's thread: drains what is pending and waits until it is published
  // (Verify wants an exact watermark).
  void DrainNow() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // Writers wait here (before committing) while the backlog is over Options::index_update_backlog.
  absl::Status AwaitBacklog();
  index::UpdateStats stats() const { return handoff_.stats(); }

 private:
  void WorkerLoop();
  // One round's work (under the budget on the maintenance thread): drain steps (all for a flush,
  // else up to 64), then a sweep (a full one for `round.sweep_all`) and a vector compaction when
  // due. Sets *done when the backlog was drained and *no_updater when there was nothing to drain
  // into. On the maintenance thread, stops with an Aborted status when a helper begins.
  absl::Status RunRound(const IndexHandoff::Round& round, bool* done, bool* no_updater);
  // A flushing caller's round on its own thread: the flush requests so far served; then waits
  // for `ticket` to be.
  absl::Status Help(uint64_t ticket);
  // CPU time the maintenance thread has used (zero without its clock).
  absl::Duration WorkerCpu() const;
  bool SweepDue() const ABSL_SHARED_LOCKS_REQUIRED(state_->mu);
  // One drain step: up to a step of pending vectors into the postings. Sets *done when none
  // were pending.
  absl::Status DrainStep(bool* done) ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // GC / merge / split over all postings (`all`: every posting holding a tombstone rewritten;
  // else only those a quarter or more tombstoned), then erases the tombstones no posting holds.
  absl::Status Sweep(bool all) ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // Rewrites vectors.dat without its dead slots when due; `now_retry`: even right after a
  // failed one.
  absl::Status CompactVectorsIfDue(bool now_retry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // Commits one updater change with the step's watermark and erased tombstones, publishes its
  // directory and queues the rest for the publisher.
  absl::Status Apply(index::SpannUpdater::Change change, uint64_t watermark,
                     std::vector<uint64_t> drained, std::vector<uint64_t> erased, bool sweep_done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // Brings dead_ up to the state's tombstones.
  void SyncDead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  void PublisherLoop();
  void Publish(const IndexHandoff::Publication& p);

  CollectionState* const state_;
  storage::RecordStore* const store_;
  const uint32_t id_;
  const Options options_;
  storage::FileSystem* const fs_;
  MaintenanceBudget* const budget_;
  IndexHandoff handoff_;

  absl::Mutex work_mu_;
  std::unique_ptr<index::SpannUpdater> updater_ ABSL_GUARDED_BY(work_mu_);
  // updater_ != nullptr, for Flush without work_mu_ (a step of the maintenance thread holds it).
  std::atomic<bool> has_updater_{false};
  uint64_t generation_ ABSL_GUARDED_BY(work_mu_) = 0;  // of the index updater_ changes
  // The maintenance thread's copy of the tombstones (as of its last SyncDead): what drains and
  // sweeps drop from postings, read without holding the search lock. A bitmap, as the state's:
  // every entry of every posting a drain step loads is looked up.
  base::PagedIdSet dead_ ABSL_GUARDED_BY(work_mu_);
  // A drain step's vectors, gathered from its batches: kept from step to step while writes come
  // (each fresh allocation of up to a step's vectors, megabytes, was first touched page by page
  // again), given back when the maintenance thread has seen no write for kIdleWait.
  std::vector<float> step_vectors_ ABSL_GUARDED_BY(work_mu_);
  RetryBackoff backoff_;  // the maintenance thread's
  std::thread worker_;    // started by Start, joined by the destructor
  // worker_'s CPU-time clock, once worker_clock_set_ (both set by Start).
  clockid_t worker_clock_{};
  std::atomic<bool> worker_clock_set_{false};
  std::thread publisher_;  // likewise
};

// The store's rows for one updater change (storage/ knows nothing of the index's types).
storage::IndexChange ToStoredChange(const index::DirectoryChange& change, uint64_t watermark,
                                    std::vector<uint64_t> erased_tombstones);

}  // namespace shoal::db

#endif  // SHOAL_DB_INDEX_MAINTAINER_H_

#include "db/index_maintainer.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "db/write_scheduling.h"

namespace shoal::db {
namespace {

// A sweep (every posting read, those holding tombstones rewritten) is due once this many ids
// were tombstoned since the last one, or a fifth of the live ids if more.
constexpr size_t kMinSweepTombstones = 1000;
// Postings per sweep step (one directory change, i.e. one fdatasync of the posting file and one
// synced RocksDB commit, each): at 64, a sweep of ~1000 postings spent more of its time in those
// syncs than in rewriting (shoal_bench updates, 2 shared vCPUs).
constexpr uint32_t kSweepPostingsPerStep = 256;
constexpr absl::Duration kBacklogWait = absl::Seconds(10);
constexpr absl::Duration kGroupWait = absl::Milliseconds(20);
// Without writes, tombstones from deletes alone are looked at this often.
constexpr absl::Duration kIdleWait = absl::Seconds(1);
// The lowest priority nice allows (Linux weight 15 against 1024 at nice 0): measured against 10
// (weight 110), searches waited 0.5 instead of 1.8-2.5 ms at p99 for a core while a writer and
// the thread shared the two cores, and the index work took no longer.
constexpr int kMaintenanceNice = 19;
constexpr size_t kMaxDrainStep = 16384;
// The most work between two of the maintenance thread's yields (UpdaterOptions::yield): what a
// waking writer may wait for its CPU.
constexpr std::chrono::microseconds kYieldEvery{20};
// Drain steps per round without a flush; then the budget slot goes round.
constexpr int kStepsPerRound = 64;
// Ids per hold of the search lock while the publisher takes drained ids out of the buffer (the
// hold is what a search may wait for: ~10-30 us).
constexpr size_t kLockSlice = 128;
// How long the publisher waits, between two slices, for the searches queued for the search lock to
// take it (CollectionState::LetSearchesIn): a bound, so that a stream of searches cannot hold a
// publication back for long.
constexpr absl::Duration kLetSearchesIn = absl::Milliseconds(2);
// A flushing caller looks this often whether the maintenance thread gets the CPU, and does the
// work itself once the thread has run for less than kMinWorkerShare of the time it waited, judged
// over kHelpAfter at least (a thread that gets its CPU may still spend a few ms of it in a step's
// fdatasync: the caller would then take over work that was going well).
constexpr absl::Duration kHelpCheck = absl::Milliseconds(20);
constexpr absl::Duration kHelpAfter = absl::Milliseconds(100);
constexpr double kMinWorkerShare = 0.5;

// The maintainer whose maintenance thread this is (null on every other thread).
thread_local const IndexMaintainer* maintained_by = nullptr;

// What the maintenance thread's work returns when it leaves a step to a helper (its status is
// no failure: nothing is recorded, nothing retried later than at once).
constexpr absl::string_view kSteppedAside = "index work handed to a flushing caller";
absl::Status SteppedAside() { return absl::AbortedError(kSteppedAside); }
bool IsSteppedAside(const absl::Status& s) {
  return absl::IsAborted(s) && s.message() == kSteppedAside;
}

}  // namespace

storage::IndexChange ToStoredChange(const index::DirectoryChange& change, uint64_t watermark,
                                    std::vector<uint64_t> erased_tombstones) {
  storage::IndexChange rows;
  rows.put.reserve(change.written.size());
  for (const index::PostingWrite& w : change.written) {
    storage::PostingRow row{w.posting, w.extent.first_page, w.extent.num_pages, w.extent.bytes,
                            w.count};
    row.origin = w.origin;
    // A posting whose centroid is still its tree leaf's (most of those a drain appends to) is
    // stored without it: its row shrinks from dimension x 4 + 24 bytes to 24, in the RocksDB
    // batch every drain step commits (and writes to the WAL that writers sync).
    if (!w.tree_centroid) row.centroid = w.centroid;
    rows.put.push_back(std::move(row));
  }
  rows.removed = change.removed;
  rows.indexed_below = watermark;
  rows.erase_tombstones = std::move(erased_tombstones);
  return rows;
}

IndexMaintainer::IndexMaintainer(CollectionState* state, storage::RecordStore* store,
                                 uint32_t collection_id, const std::string& name,
                                 const Options& options, storage::FileSystem* fs,
                                 MaintenanceBudget* budget)
    : state_(state),
      store_(store),
      id_(collection_id),
      options_(options),
      fs_(fs),
      budget_(budget),
      handoff_(name) {}

IndexMaintainer::~IndexMaintainer() {
  handoff_.Close();
  if (worker_.joinable()) worker_.join();
  if (publisher_.joinable()) publisher_.join();
}

absl::Status IndexMaintainer::Start(const std::string& dir) {
  Stop();
  handoff_.ResetStats();
  absl::ReaderMutexLock lock(&state_->mu);
  if (state_->spann == nullptr || options_.index_update_threads == 0) return absl::OkStatus();
  index::UpdaterOptions o;
  o.merge_floor = options_.posting_merge_floor;
  o.sync = options_.index_update_sync;
  o.fs = fs_;
  // Every unit of index work ends with the CPU offered to whoever waits for it. The thread's
  // nice 19 only weighs its share; a writer under SCHED_BATCH (Options::batch_scheduled_writes)
  // that wakes on this thread's CPU would otherwise wait for the next tick (4 ms at HZ 250):
  // measured, acknowledged inserts 69-73k/s without yields, 100-104k/s yielding every 16 units,
  // 118-133k/s after each (no slower drain; 110-135k/s before SCHED_BATCH writes).
  // A unit ends with a yield only once kYieldEvery of work has passed since the last one,
  // though: a sched_yield (a syscall and a pass through the scheduler) costs a fair part of a
  // small unit such as one vector placed at low dimension (docs/PERFORMANCE.md, "Online
  // updates").
  // On the maintenance thread only: a helper (a flushing caller doing the work, Flush) runs at
  // its own priority, and the thread leaves the step it is in to it.
  o.yield = [this, last = std::chrono::steady_clock::now()]() mutable {
    if (maintained_by != this) return absl::OkStatus();
    if (handoff_.helping()) return SteppedAside();
    const auto now = std::chrono::steady_clock::now();
    if (now - last < kYieldEvery) return absl::OkStatus();
    sched_yield();
    last = std::chrono::steady_clock::now();
    return absl::OkStatus();
  };
  generation_ = state_->spann->manifest().generation;
  SHOAL_ASSIGN_OR_RETURN(updater_, index::SpannUpdater::Open(state_->spann.get(), dir, o));
  has_updater_.store(true, std::memory_order_relaxed);
  // The threads start with the first SSD index and live as long as the collection.
  if (!worker_.joinable()) {
    worker_ = std::thread([this] { WorkerLoop(); });
    clockid_t clock;
    if (pthread_getcpuclockid(worker_.native_handle(), &clock) == 0) {
      worker_clock_ = clock;
      worker_clock_set_.store(true, std::memory_order_release);
    }
  }
  if (!publisher_.joinable()) publisher_ = std::thread([this] { PublisherLoop(); });
  return absl::OkStatus();
}

void IndexMaintainer::ClaimWork() {
  handoff_.BeginClaim();
  work_mu_.Lock();
}

void IndexMaintainer::EndWorkClaim() {
  work_mu_.Unlock();
  handoff_.EndClaim();
}

void IndexMaintainer::Reset() {
  dead_.Clear();
  handoff_.Clear();
  std::vector<float>().swap(step_vectors_);
}

bool IndexMaintainer::SweepDue() const {
  const size_t stale = state_->stale.size();
  const size_t fresh = stale - std::min(stale, state_->tombstones_at_sweep);
  return state_->spann != nullptr &&
         fresh >= std::max(kMinSweepTombstones, state_->id_of.size() / 5);
}

void IndexMaintainer::WorkerLoop() {
  // Searches come first: the maintenance thread runs at the lowest CPU priority (Linux applies a
  // thread's nice value to that thread alone). Not SCHED_IDLE: that starves it behind any other
  // runnable process, and a flush or build waiting for work_mu_ would wait on it (measured: the
  // drain after the bench's churn took 19-20 s instead of 2-3 s on the shared machine).
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kMaintenanceNice);
  pthread_setname_np(pthread_self(), "shoal-maint");  // top -H, perf, ps -L
  maintained_by = this;
  for (;;) {
    const IndexHandoff::Round round =
        handoff_.AwaitRound(options_.index_update_batch, kIdleWait, kGroupWait);
    if (round.closing) return;
    if (!round.writes && round.flush == 0) {
      // Idle for kIdleWait: the drain steps' buffer goes back until writes come again (not if a
      // claim holds work_mu_: an idle round never waits for one; the next idle round will do).
      if (work_mu_.TryLock()) {
        std::vector<float>().swap(step_vectors_);
        work_mu_.Unlock();
      }
      // Deletes alone queue nothing: their tombstones are looked at once a second.
      absl::ReaderMutexLock lock(&state_->mu);
      if (!SweepDue()) continue;
    }
    bool done = false, no_updater = false;
    const absl::Status s = RunRound(round, &done, &no_updater);
    // A helper took over (its round serves this one's flush); the next round waits for it.
    if (IsSteppedAside(s)) continue;
    if (no_updater) {
      // No updater (index dropped or being rebuilt): nothing to drain into.
      handoff_.EndIdleRound(round.flush, absl::Milliseconds(100));
      continue;
    }
    // What a flush returns for is in the directory searches read, not only committed.
    if (round.flush != 0 && s.ok() && done) handoff_.AwaitPublished();
    // A failed step changed nothing a reader sees and left the updater usable (spann_updater.h):
    // the buffered writes stay buffered and the next round retries them.
    handoff_.EndRound(round.flush, s, done, backoff_.OnRound(s));
  }
}

absl::Status IndexMaintainer::RunRound(const IndexHandoff::Round& round, bool* done,
                                       bool* no_updater) {
  const uint64_t flush = round.flush;
  // The budget bounds background maintenance; a helper is a caller doing its own work.
  const bool worker = maintained_by == this;
  std::optional<MaintenanceBudget::Slot> slot;
  if (worker) slot.emplace(budget_);
  auto stepping_aside = [&] { return worker && handoff_.helping(); };
  absl::Status s;
  for (int steps = 0;
       s.ok() && !*done && (flush != 0 || steps < kStepsPerRound) && !handoff_.closing(); ++steps) {
    if (stepping_aside()) return SteppedAside();
    // work_mu_ per step: a build or snapshot waiting for it (on a thread that may run at a
    // higher priority) goes between two steps, not after all of them.
    absl::MutexLock work(&work_mu_);
    *no_updater = updater_ == nullptr;
    if (*no_updater) return absl::OkStatus();
    s = DrainStep(done);
  }
  if (!s.ok() || !*done) return s;
  bool sweep;
  {
    absl::ReaderMutexLock lock(&state_->mu);
    sweep = round.sweep_all ? !state_->stale.empty() : SweepDue();
  }
  if (stepping_aside()) return SteppedAside();
  absl::MutexLock work(&work_mu_);
  if (updater_ != nullptr && sweep) s = Sweep(/*all=*/round.sweep_all);
  if (updater_ != nullptr && s.ok()) s = CompactVectorsIfDue(/*now_retry=*/flush != 0);
  return s;
}

absl::Status IndexMaintainer::Flush(bool sweep_all) {
  // Not work_mu_: the maintenance thread holds it through each step, at its low priority.
  // (Dropped meanwhile: the round that serves the flush finds no updater and says OK.)
  if (!has_updater_.load(std::memory_order_relaxed)) return absl::OkStatus();
  // The maintenance thread does the work, at its own low priority: a flush waits for the index
  // but does not compete with searches for the CPU (done on the caller's thread, the drain after
  // the bench's churn put search p99 at up to 1.9x idle). But when other processes keep the CPUs
  // busy, a nice-19 thread barely runs (a drain of 0.5-1.5 s took 11-50 s beside a build at nice
  // 10), and an unprivileged thread cannot raise its priority again: then the caller does the
  // rest at its own priority, and the thread steps aside.
  const uint64_t ticket = handoff_.AddFlushRequest(sweep_all);
  const absl::Time start = absl::Now();
  const absl::Duration cpu_start = WorkerCpu();
  for (;;) {
    if (std::optional<absl::Status> s = handoff_.AwaitFlush(ticket, kHelpCheck)) return *s;
    const absl::Duration waited = absl::Now() - start;
    if (waited >= kHelpAfter && WorkerCpu() - cpu_start < kMinWorkerShare * waited) break;
  }
  return Help(ticket);
}

absl::Duration IndexMaintainer::WorkerCpu() const {
  timespec t{};
  // Without the thread's clock, as if it never ran: the caller helps.
  if (!worker_clock_set_.load(std::memory_order_acquire) || clock_gettime(worker_clock_, &t) != 0) {
    return absl::ZeroDuration();
  }
  return absl::DurationFromTimespec(t);
}

absl::Status IndexMaintainer::Help(uint64_t ticket) {
  // Wake-ups (after each fdatasync) that do not preempt searches, as writers'.
  BatchScheduledScope batch(options_.batch_scheduled_writes);
  const IndexHandoff::Round round = handoff_.BeginHelping();
  bool done = false, no_updater = false;
  absl::Status s;
  // flush 0: served meanwhile (the thread's round ended): nothing to do here.
  if (!round.closing && round.flush != 0) s = RunRound(round, &done, &no_updater);
  if (no_updater) done = true;  // nothing to drain into: served, as EndIdleRound does
  if (s.ok() && done) handoff_.AwaitPublished();
  handoff_.EndHelping(round.flush, s, done);
  return *handoff_.AwaitFlush(ticket, absl::InfiniteDuration());
}

void IndexMaintainer::DrainNow() {
  for (bool done = updater_ == nullptr; !done;) {
    if (!DrainStep(&done).ok()) break;
  }
  handoff_.AwaitPublished();
}

absl::Status IndexMaintainer::AwaitBacklog() {
  if (options_.index_update_threads == 0) return absl::OkStatus();
  return handoff_.AwaitBacklog(options_.index_update_backlog, kBacklogWait);
}

absl::Status IndexMaintainer::DrainStep(bool* done) {
  const IndexHandoff::Step step = handoff_.TakeStep(options_.index_update_batch, kMaxDrainStep);
  *done = step.batches.empty();
  if (*done) return absl::OkStatus();
  std::vector<uint64_t> ids;
  std::vector<float>& vectors = step_vectors_;
  size_t n = 0, floats = 0;
  for (const auto& b : step.batches) {
    n += b->ids.size();
    floats += b->vectors.size();
  }
  ids.reserve(n);  // a step of 16k vectors: one copy of them, not one per doubling
  vectors.clear();
  vectors.reserve(floats);
  for (const auto& b : step.batches) {
    ids.insert(ids.end(), b->ids.begin(), b->ids.end());
    vectors.insert(vectors.end(), b->vectors.begin(), b->vectors.end());
  }
  // Ids deleted or replaced since they were written are dead: the updater leaves them out.
  SyncDead();
  SHOAL_ASSIGN_OR_RETURN(
      index::SpannUpdater::Change change,
      updater_->Insert(ids, vectors.data(), [this](uint64_t id) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return dead_.Contains(id);
      }));
  SHOAL_RETURN_IF_ERROR(Apply(std::move(change), step.watermark, std::move(ids), {}, false));
  handoff_.FinishStep(step);
  return absl::OkStatus();
}

void IndexMaintainer::SyncDead() {
  const std::vector<uint64_t> fresh = state_->TakeStaleLog();
  for (uint64_t id : fresh) dead_.Insert(id);
}

absl::Status IndexMaintainer::Apply(index::SpannUpdater::Change change, uint64_t watermark,
                                    std::vector<uint64_t> drained, std::vector<uint64_t> erased,
                                    bool sweep_done) {
  SHOAL_RETURN_IF_ERROR(store_->CommitIndexChange(
      id_, ToStoredChange(change.directory, watermark, erased), options_.index_update_sync));
  IndexHandoff::Publication p;
  p.generation = generation_;
  p.watermark = watermark;
  p.drained = std::move(drained);
  p.erased = std::move(erased);
  p.sweep_done = sweep_done;
  for (uint64_t iid : p.erased) dead_.Erase(iid);
  // Searches take the directory from the SpannIndex (its own lock), so the swap needs no
  // search lock.
  if (change.next != nullptr) updater_->Publish(std::move(change));
  handoff_.Publish(std::move(p), updater_->stats());
  return absl::OkStatus();
}

void IndexMaintainer::PublisherLoop() {
  pthread_setname_np(pthread_self(), "shoal-publish");
  IndexHandoff::Publication p;
  while (handoff_.NextPublication(&p)) {
    Publish(p);
    handoff_.DonePublishing();
  }
}

void IndexMaintainer::Publish(const IndexHandoff::Publication& p) {
  CollectionState& s = *state_;
  // Each hold of the lock first checks that the publication's index is still the one searched
  // (a build or drop replaced it: its buffer and tombstones are gone already).
  auto current = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return s.spann != nullptr && s.spann->manifest().generation == p.generation;
  };
  {
    absl::MutexLock lock(&s.mu);
    if (!current()) return;
    s.indexed_below = std::max(s.indexed_below, p.watermark);
  }
  // The drained vectors are in the published postings; they leave the buffer a slice at a time,
  // so a search meanwhile may find one in both (merged once), never in neither.
  for (size_t i = 0; i < p.drained.size(); i += kLockSlice) {
    s.LetSearchesIn(kLetSearchesIn);
    absl::MutexLock lock(&s.mu);
    if (!current()) return;
    for (size_t j = i; j < std::min(p.drained.size(), i + kLockSlice); ++j) {
      s.buffer.Remove(p.drained[j]);
    }
  }
  // Erased tombstones name ids no posting or buffer holds any more: when each goes is moot.
  for (size_t i = 0; i < p.erased.size(); i += 8 * kLockSlice) {
    s.LetSearchesIn(kLetSearchesIn);
    absl::MutexLock lock(&s.mu);
    if (!current()) return;
    for (size_t j = i; j < std::min(p.erased.size(), i + 8 * kLockSlice); ++j) {
      s.stale.Erase(p.erased[j]);
    }
  }
  if (p.sweep_done) {
    s.LetSearchesIn(kLetSearchesIn);
    absl::MutexLock lock(&s.mu);
    if (current()) s.tombstones_at_sweep = s.stale.size();
  }
}

absl::Status IndexMaintainer::Sweep(bool all) {
  SyncDead();
  // The tombstones this sweep may clear: those known now (later ones wait for the next sweep).
  // No drain runs until it ends (work_mu_ is held throughout), so the postings it leaves them
  // in are exactly those it reports.
  auto is_dead = [this](uint64_t id) ABSL_NO_THREAD_SAFETY_ANALYSIS { return dead_.Contains(id); };
  const index::SweepGc gc = all ? index::SweepGc::kAll : index::SweepGc::kWhenMany;
  absl::flat_hash_set<uint64_t> held;  // tombstoned ids some posting still holds
  for (uint32_t first = 0;; first += kSweepPostingsPerStep) {
    std::vector<uint64_t> kept;
    SHOAL_ASSIGN_OR_RETURN(auto change,
                           updater_->Sweep(first, kSweepPostingsPerStep, is_dead, gc, &kept));
    held.insert(kept.begin(), kept.end());
    if (first + kSweepPostingsPerStep < change.next->size()) {
      SHOAL_RETURN_IF_ERROR(Apply(std::move(change), 0, {}, {}, false));
      continue;
    }
    // With this last step no posting holds a tombstoned id outside `held`, and the buffer holds
    // none: no reader can meet them again, so their tombstones go, in the same commit (one
    // synced RocksDB write fewer per sweep).
    std::vector<uint64_t> erased;
    dead_.ForEach([&](uint64_t id) ABSL_NO_THREAD_SAFETY_ANALYSIS {
      if (!held.contains(id)) erased.push_back(id);
    });
    SHOAL_RETURN_IF_ERROR(Apply(std::move(change), 0, {}, std::move(erased), /*sweep_done=*/true));
    break;
  }
  // SweepDue counts from the tombstones left after this one: wait until they are.
  handoff_.AwaitPublished();
  return absl::OkStatus();
}

absl::Status IndexMaintainer::CompactVectorsIfDue(bool now_retry) {
  handoff_.AwaitPublished();  // indexed_below exact: every drain step committed so far is applied
  uint64_t watermark, retained;
  {
    absl::ReaderMutexLock lock(&state_->mu);
    watermark = state_->indexed_below;
    retained = state_->key_of.size() + state_->stale.size();
  }
  if (!updater_->VectorCompactionDue(retained, options_.index_update_compact_live_fraction,
                                     now_retry)) {
    return absl::OkStatus();
  }
  // A posting holds only live or tombstoned ids (a tombstone goes only once no posting holds
  // it), and deletes drop the key and add the tombstone under one lock: an id kept by neither
  // test is in no posting and never will be.
  auto keep = [this](uint64_t iid) {
    absl::ReaderMutexLock lock(&state_->mu);
    return state_->key_of.Contains(iid) || state_->stale.Contains(iid);
  };
  SHOAL_RETURN_IF_ERROR(updater_->CompactVectors(watermark, keep).status());
  handoff_.SetStats(updater_->stats());
  return absl::OkStatus();
}

}  // namespace shoal::db

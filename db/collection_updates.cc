// Collection: online updates of the SSD index — the maintenance thread that moves buffered writes
// into the posting lists and sweeps tombstones out of them (see collection.h and
// index/spann_updater.h).
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "db/collection.h"

namespace shoal::db {
namespace {

// A sweep (every posting read, those holding tombstones rewritten) is due once this many ids
// were tombstoned since the last one, or a fifth of the live ids if more.
constexpr size_t kMinSweepTombstones = 1000;
// Postings per sweep step (one directory change each).
constexpr uint32_t kSweepPostingsPerStep = 64;
constexpr absl::Duration kBacklogWait = absl::Seconds(10);
constexpr absl::Duration kGroupWait = absl::Milliseconds(20);
// The lowest priority nice allows (Linux weight 15 against 1024 at nice 0): measured against 10
// (weight 110), searches waited 0.5 instead of 1.8-2.5 ms at p99 for a core while a writer and
// the thread shared the two cores, and the index work took no longer.
constexpr int kMaintenanceNice = 19;
constexpr size_t kMaxDrainStep = 16384;
// Buffered ids per hold of mu_ while a drain step reads the buffer (shared) or removes what it
// moved into the postings (exclusive). The maintenance thread runs at a lower priority and may
// be preempted holding the lock; a short hold keeps searches — and writers, which searches queue
// behind — from waiting on it.
constexpr size_t kLockSlice = 512;
// After a failed maintenance step (an I/O error) the thread retries the same work, waiting
// 200 ms after the first failure and twice as long after each further one, up to 3.2 s.
constexpr absl::Duration kRetryWait = absl::Milliseconds(200);
constexpr int kMaxRetryDoublings = 4;

}  // namespace

Collection::~Collection() {
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
  }
  if (worker_.joinable()) worker_.join();
}

absl::Status Collection::StartUpdates() {
  updater_.reset();
  absl::MutexLock lock(&mu_);
  update_stats_ = {};
  if (spann_ == nullptr || options_.index_update_threads == 0) return absl::OkStatus();
  index::UpdaterOptions o;
  o.merge_floor = options_.posting_merge_floor;
  o.sync = options_.index_update_sync;
  o.fs = fs_;
  SHOAL_ASSIGN_OR_RETURN(updater_, index::SpannUpdater::Open(
                                       spann_.get(), IndexDir(spann_->manifest().generation), o));
  // The maintenance thread starts with the first SSD index and lives as long as the collection.
  if (!worker_.joinable()) worker_ = std::thread([this] { WorkerLoop(); });
  return absl::OkStatus();
}

bool Collection::SweepDue() const {
  const size_t fresh = stale_.size() - std::min(stale_.size(), tombstones_at_sweep_);
  return spann_ != nullptr && fresh >= std::max(kMinSweepTombstones, id_of_.size() / 5);
}

void Collection::WorkerLoop() {
  // Searches come first: the maintenance thread runs at the lowest CPU priority (Linux applies a
  // thread's nice value to that thread alone). Not SCHED_IDLE: that starves it behind any other
  // runnable process, and a flush or build waiting for work_mu_ would wait on it (measured: the
  // drain after the bench's churn took 19-20 s instead of 2-3 s on the shared machine).
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kMaintenanceNice);
  int failures = 0;  // consecutive failed rounds
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return closing_ || (spann_ != nullptr && !pending_.empty()) || SweepDue();
      };
      mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Seconds(1));
      if (closing_) return;
      if (!ready()) continue;
      // Group commit of index work: wait a little for a full batch, so that each posting is
      // rewritten and each file synced once per batch rather than once per client write.
      auto full = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return closing_ || pending_.size() >= options_.index_update_batch;
      };
      mu_.AwaitWithTimeout(absl::Condition(&full), kGroupWait);
      if (closing_) return;
    }
    absl::Status s;
    {
      MaintenanceBudget::Slot slot(budget_);
      auto closing = [this] {
        absl::ReaderMutexLock lock(&mu_);
        return closing_;
      };
      bool done = false, no_updater = false;
      for (int steps = 0; s.ok() && !done && steps < 64 && !closing(); ++steps) {
        // work_mu_ per step: a flush, build or snapshot waiting for it (on a thread that may
        // run at a higher priority) goes between two steps, not after all of them.
        absl::MutexLock work(&work_mu_);
        no_updater = updater_ == nullptr;
        if (no_updater) break;
        s = DrainStep(&done);
      }
      if (no_updater) {
        // No updater (index dropped or being rebuilt): nothing to drain into.
        absl::MutexLock lock(&mu_);
        mu_.AwaitWithTimeout(absl::Condition(&closing_), absl::Milliseconds(100));
        continue;
      }
      bool sweep = false;
      if (s.ok() && done) {
        absl::ReaderMutexLock lock(&mu_);
        sweep = SweepDue();
      }
      if (sweep || (s.ok() && done)) {
        absl::MutexLock work(&work_mu_);
        if (updater_ != nullptr && sweep) s = Sweep();
        if (updater_ != nullptr && s.ok() && done) s = CompactVectorsIfDue(/*now_retry=*/false);
      }
    }
    // A failed step changed nothing a reader sees and left the updater usable (spann_updater.h):
    // the buffered writes stay buffered and the next round retries them, so maintenance resumes
    // by itself once the fault clears.
    failures = s.ok() ? 0 : failures + 1;
    absl::MutexLock lock(&mu_);
    update_error_ = s;
    if (!s.ok()) {
      const absl::Duration wait = kRetryWait * (1 << std::min(failures - 1, kMaxRetryDoublings));
      mu_.AwaitWithTimeout(absl::Condition(&closing_), wait);
    }
  }
}

absl::Status Collection::FlushIndexUpdates() {
  absl::MutexLock work(&work_mu_);
  if (updater_ == nullptr) return absl::OkStatus();
  bool done = false;
  while (!done) SHOAL_RETURN_IF_ERROR(DrainStep(&done));
  bool sweep;
  {
    absl::ReaderMutexLock lock(&mu_);
    sweep = stale_.size() > 0;
  }
  if (sweep) SHOAL_RETURN_IF_ERROR(Sweep());
  return CompactVectorsIfDue(/*now_retry=*/true);
}

absl::Status Collection::AwaitBacklog() {
  {
    // The common case under a shared lock: searches are not held up.
    absl::ReaderMutexLock lock(&mu_);
    if (options_.index_update_threads == 0 || spann_ == nullptr ||
        pending_.size() < options_.index_update_backlog) {
      return absl::OkStatus();
    }
  }
  absl::MutexLock lock(&mu_);
  auto below = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return closing_ || pending_.size() < options_.index_update_backlog;
  };
  if (options_.index_update_threads == 0 || spann_ == nullptr) return absl::OkStatus();
  if (mu_.AwaitWithTimeout(absl::Condition(&below), kBacklogWait)) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "collection '", spec_.name, "': ", pending_.size(),
      " writes wait for the index (Options::index_update_backlog = ", options_.index_update_backlog,
      ")",
      update_error_.ok() ? ""
                         : absl::StrCat("; last index update error: ", update_error_.ToString())));
}

absl::Status Collection::DrainStep(bool* done) {
  size_t n;
  {
    absl::ReaderMutexLock lock(&mu_);
    // A backlog is drained in bigger steps: each touched posting is rewritten once per step, so
    // the write amplification falls as the step grows (up to kMaxDrainStep vectors).
    const size_t step =
        std::clamp<size_t>(pending_.size() / 2, options_.index_update_batch,
                           std::max<size_t>(kMaxDrainStep, options_.index_update_batch));
    n = std::min<size_t>(pending_.size(), step);
  }
  *done = n == 0;
  if (n == 0) return absl::OkStatus();
  // The first n buffered ids, read kLockSlice at a time (only this thread erases from pending_,
  // so the ids taken stay there). Ids below the watermark are in the postings or dead: it stays
  // at the next buffered id and below every batch that was not yet in the buffer while a slice
  // was read (a batch applied between two slices may hold ids below those taken).
  std::vector<uint64_t> taken, ids;
  std::vector<float> vectors;
  uint64_t watermark = UINT64_MAX;
  while (taken.size() < n) {
    absl::ReaderMutexLock lock(&mu_);
    auto it = taken.empty() ? pending_.begin() : pending_.upper_bound(taken.back());
    for (size_t i = 0; i < kLockSlice && taken.size() < n && it != pending_.end(); ++i, ++it) {
      const uint64_t iid = *it;
      taken.push_back(iid);
      const float* v = BufferVector(iid);
      if (v == nullptr) continue;  // deleted or replaced meanwhile
      ids.push_back(iid);
      vectors.insert(vectors.end(), v, v + spec_.dimension);
    }
    {
      absl::MutexLock unapplied_lock(&unapplied_mu_);
      if (!unapplied_.empty()) watermark = std::min(watermark, *unapplied_.begin());
    }
    if (taken.size() == n || it == pending_.end()) {
      watermark = std::min(watermark, it != pending_.end() ? *it : taken.back() + 1);
      break;
    }
  }
  SyncDead();
  index::SpannUpdater::Change change;
  if (!ids.empty()) {
    SHOAL_ASSIGN_OR_RETURN(
        change,
        updater_->Insert(ids, vectors.data(), [this](uint64_t id) ABSL_NO_THREAD_SAFETY_ANALYSIS {
          return dead_.contains(id);
        }));
  } else {
    change.next = nullptr;
  }
  change.commit.indexed_below = watermark;
  return Apply(std::move(change), taken);
}

void Collection::SyncDead() {
  std::vector<uint64_t> fresh;
  {
    absl::MutexLock lock(&stale_log_mu_);
    fresh.swap(stale_log_);
  }
  dead_.insert(fresh.begin(), fresh.end());
}

absl::Status Collection::Apply(index::SpannUpdater::Change change,
                               const std::vector<uint64_t>& drained) {
  const bool sync = options_.index_update_sync;
  SHOAL_RETURN_IF_ERROR(store_->CommitIndexChange(id_, change.commit, sync));
  const uint64_t watermark = change.commit.indexed_below;
  const std::vector<uint64_t> erased = std::move(change.commit.erase_tombstones);
  // Searches take the directory from the SpannIndex (its own lock), so the swap needs no mu_.
  if (change.next != nullptr) updater_->Publish(std::move(change));
  {
    absl::MutexLock lock(&mu_);
    update_stats_ = updater_->stats();
    if (watermark != 0) indexed_below_ = std::max(indexed_below_, watermark);
  }
  // The drained vectors are in the published postings now; they leave the buffer a slice at a
  // time, so a search meanwhile may find one in both (MergeInto keeps it once), never in neither.
  for (size_t i = 0; i < drained.size(); i += kLockSlice) {
    absl::MutexLock lock(&mu_);
    for (size_t j = i; j < std::min(drained.size(), i + kLockSlice); ++j) {
      BufferRemove(drained[j]);
      pending_.erase(drained[j]);
    }
  }
  // Erased tombstones name ids no posting or buffer holds any more: when each goes is moot.
  for (size_t i = 0; i < erased.size(); i += 8 * kLockSlice) {
    absl::MutexLock lock(&mu_);
    for (size_t j = i; j < std::min(erased.size(), i + 8 * kLockSlice); ++j)
      stale_.Erase(erased[j]);
  }
  for (uint64_t iid : erased) dead_.erase(iid);
  return absl::OkStatus();
}

absl::Status Collection::Sweep() {
  SyncDead();
  // The tombstones this sweep clears: those known now (later ones wait for the next sweep).
  const std::vector<uint64_t> dead(dead_.begin(), dead_.end());
  auto is_dead = [this](uint64_t id) ABSL_NO_THREAD_SAFETY_ANALYSIS { return dead_.contains(id); };
  auto postings = [this]() {
    absl::ReaderMutexLock lock(&mu_);
    return spann_->directory()->size();
  };
  for (uint32_t first = 0; first < postings(); first += kSweepPostingsPerStep) {
    SHOAL_ASSIGN_OR_RETURN(auto change, updater_->Sweep(first, kSweepPostingsPerStep, is_dead));
    SHOAL_RETURN_IF_ERROR(Apply(std::move(change), {}));
  }
  // Every posting that held one of `dead` was rewritten without it, and the buffer holds none of
  // them: no reader can meet them again, so their tombstones go.
  index::SpannUpdater::Change erase;
  erase.commit.erase_tombstones = dead;
  SHOAL_RETURN_IF_ERROR(Apply(std::move(erase), {}));
  absl::MutexLock lock(&mu_);
  tombstones_at_sweep_ = stale_.size();
  return absl::OkStatus();
}

absl::Status Collection::CompactVectorsIfDue(bool now_retry) {
  uint64_t watermark, retained;
  {
    absl::ReaderMutexLock lock(&mu_);
    watermark = indexed_below_;
    retained = key_of_.size() + stale_.size();
  }
  if (!updater_->VectorCompactionDue(retained, options_.index_update_compact_live_fraction,
                                     now_retry)) {
    return absl::OkStatus();
  }
  // A posting holds only live or tombstoned ids (a tombstone goes only once no posting holds
  // it), and deletes drop the key and add the tombstone under one lock: an id kept by neither
  // test is in no posting and never will be.
  auto keep = [this](uint64_t iid) {
    absl::ReaderMutexLock lock(&mu_);
    return key_of_.Contains(iid) || stale_.Contains(iid);
  };
  SHOAL_RETURN_IF_ERROR(updater_->CompactVectors(watermark, keep).status());
  absl::MutexLock lock(&mu_);
  update_stats_ = updater_->stats();
  return absl::OkStatus();
}

}  // namespace shoal::db

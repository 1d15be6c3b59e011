// Collection: online updates of the SSD index — the maintenance thread that moves buffered writes
// into the posting lists and sweeps tombstones out of them (see collection.h and
// index/spann_updater.h).
#include <sched.h>
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
// Ids per hold of mu_ while the publisher takes drained ids out of the buffer (the hold is what
// a search may wait for: ~10-30 us).
constexpr size_t kLockSlice = 128;
// After a failed maintenance step (an I/O error) the thread retries the same work, waiting
// 200 ms after the first failure and twice as long after each further one, up to 3.2 s.
constexpr absl::Duration kRetryWait = absl::Milliseconds(200);
constexpr int kMaxRetryDoublings = 4;

}  // namespace

Collection::~Collection() {
  {
    absl::MutexLock lock(&handoff_mu_);
    closing_ = true;
  }
  if (worker_.joinable()) worker_.join();
  if (publisher_.joinable()) publisher_.join();
}

absl::Status Collection::StartUpdates() {
  updater_.reset();
  {
    absl::MutexLock lock(&handoff_mu_);
    update_stats_ = {};
  }
  absl::ReaderMutexLock lock(&mu_);
  if (spann_ == nullptr || options_.index_update_threads == 0) return absl::OkStatus();
  index::UpdaterOptions o;
  o.merge_floor = options_.posting_merge_floor;
  o.sync = options_.index_update_sync;
  o.fs = fs_;
  // Every unit of index work ends with the CPU offered to whoever waits for it. The thread's
  // nice 19 only weighs its share; a writer under SCHED_BATCH (Options::batch_scheduled_writes)
  // that wakes on this thread's CPU would otherwise wait for the next tick (4 ms at HZ 250):
  // measured, acknowledged inserts 69-73k/s without yields, 100-104k/s yielding every 16 units,
  // 118-133k/s after each (no slower drain; 110-135k/s before SCHED_BATCH writes).
  o.yield = [] { sched_yield(); };
  updater_generation_ = spann_->manifest().generation;
  SHOAL_ASSIGN_OR_RETURN(updater_,
                         index::SpannUpdater::Open(spann_.get(), IndexDir(updater_generation_), o));
  // The threads start with the first SSD index and live as long as the collection.
  if (!worker_.joinable()) worker_ = std::thread([this] { WorkerLoop(); });
  if (!publisher_.joinable()) publisher_ = std::thread([this] { PublisherLoop(); });
  return absl::OkStatus();
}

bool Collection::SweepDue() const {
  const size_t fresh = stale_.size() - std::min(stale_.size(), tombstones_at_sweep_);
  return spann_ != nullptr && fresh >= std::max(kMinSweepTombstones, id_of_.size() / 5);
}

void Collection::AddPending(PendingBatch batch) {
  pending_ids_ += batch.ids.size();
  const uint64_t first = batch.ids.front();
  pending_.emplace(first, std::make_shared<const PendingBatch>(std::move(batch)));
}

void Collection::ClearHandoff() {
  absl::MutexLock lock(&handoff_mu_);
  pending_.clear();
  pending_ids_ = 0;
  publications_.clear();
}

void Collection::WorkerLoop() {
  // Searches come first: the maintenance thread runs at the lowest CPU priority (Linux applies a
  // thread's nice value to that thread alone). Not SCHED_IDLE: that starves it behind any other
  // runnable process, and a flush or build waiting for work_mu_ would wait on it (measured: the
  // drain after the bench's churn took 19-20 s instead of 2-3 s on the shared machine).
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kMaintenanceNice);
  int failures = 0;  // consecutive failed rounds
  for (;;) {
    bool writes;
    uint64_t flush = 0;  // the last flush request this round serves (0: none)
    {
      absl::MutexLock lock(&handoff_mu_);
      auto flushing = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return flush_requested_ > flush_served_;
      };
      auto ready = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return closing_ || !pending_.empty() || flushing();
      };
      writes = handoff_mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Seconds(1));
      if (closing_) return;
      if (writes && !flushing()) {
        // Group commit of index work: wait a little for a full batch, so that each posting is
        // rewritten and each file synced once per batch rather than once per client write.
        auto full = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
          return closing_ || pending_ids_ >= options_.index_update_batch || flushing();
        };
        handoff_mu_.AwaitWithTimeout(absl::Condition(&full), kGroupWait);
        if (closing_) return;
      }
      if (flushing()) flush = flush_requested_;
    }
    if (!writes && flush == 0) {
      // Deletes alone queue nothing: their tombstones are looked at once a second.
      absl::ReaderMutexLock lock(&mu_);
      if (!SweepDue()) continue;
    }
    absl::Status s;
    bool done = false;
    {
      MaintenanceBudget::Slot slot(budget_);
      auto closing = [this] {
        absl::MutexLock lock(&handoff_mu_);
        return closing_;
      };
      bool no_updater = false;
      // A flush drains everything; otherwise 64 steps, then the budget slot goes round.
      for (int steps = 0; s.ok() && !done && (flush != 0 || steps < 64) && !closing(); ++steps) {
        // work_mu_ per step: a build or snapshot waiting for it (on a thread that may run at a
        // higher priority) goes between two steps, not after all of them.
        absl::MutexLock work(&work_mu_);
        no_updater = updater_ == nullptr;
        if (no_updater) break;
        s = DrainStep(&done);
      }
      if (no_updater) {
        // No updater (index dropped or being rebuilt): nothing to drain into.
        absl::MutexLock lock(&handoff_mu_);
        if (flush != 0) {
          flush_served_ = flush;
          flush_status_ = absl::OkStatus();
        }
        handoff_mu_.AwaitWithTimeout(absl::Condition(&closing_), absl::Milliseconds(100));
        continue;
      }
      bool sweep = false;
      if (s.ok() && done) {
        absl::ReaderMutexLock lock(&mu_);
        sweep = flush != 0 ? !stale_.empty() : SweepDue();
      }
      if (sweep || (s.ok() && done)) {
        absl::MutexLock work(&work_mu_);
        if (updater_ != nullptr && sweep) s = Sweep();
        if (updater_ != nullptr && s.ok() && done)
          s = CompactVectorsIfDue(/*now_retry=*/flush != 0);
      }
    }
    // What a flush returns for is in the directory searches read, not only committed.
    if (flush != 0 && s.ok() && done) AwaitPublished();
    // A failed step changed nothing a reader sees and left the updater usable (spann_updater.h):
    // the buffered writes stay buffered and the next round retries them, so maintenance resumes
    // by itself once the fault clears.
    failures = s.ok() ? 0 : failures + 1;
    absl::MutexLock lock(&handoff_mu_);
    update_error_ = s;
    if (flush != 0 && (!s.ok() || done)) {
      flush_served_ = flush;
      flush_status_ = s;
    }
    if (!s.ok()) {
      // A new flush request cuts the wait short: it gets this round's retry at once.
      auto wake = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return closing_ || flush_requested_ > flush_served_;
      };
      const absl::Duration wait = kRetryWait * (1 << std::min(failures - 1, kMaxRetryDoublings));
      handoff_mu_.AwaitWithTimeout(absl::Condition(&wake), wait);
    }
  }
}

absl::Status Collection::FlushIndexUpdates() {
  {
    absl::MutexLock work(&work_mu_);
    if (updater_ == nullptr) return absl::OkStatus();
  }
  // The maintenance thread does the work, at its own low priority: a flush waits for the index
  // but does not compete with searches for the CPU (done on the caller's thread, the drain after
  // the bench's churn put search p99 at up to 1.9x idle).
  absl::MutexLock lock(&handoff_mu_);
  const uint64_t ticket = ++flush_requested_;
  auto served = [&]()
                    ABSL_NO_THREAD_SAFETY_ANALYSIS { return closing_ || flush_served_ >= ticket; };
  handoff_mu_.Await(absl::Condition(&served));
  if (flush_served_ < ticket) {
    return absl::UnavailableError(absl::StrCat("collection '", spec_.name, "' is closing"));
  }
  return flush_status_;
}

absl::Status Collection::AwaitBacklog() {
  if (options_.index_update_threads == 0) return absl::OkStatus();
  absl::MutexLock lock(&handoff_mu_);
  auto below = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return closing_ || pending_ids_ < options_.index_update_backlog;
  };
  if (handoff_mu_.AwaitWithTimeout(absl::Condition(&below), kBacklogWait)) {
    return absl::OkStatus();
  }
  return absl::UnavailableError(absl::StrCat(
      "collection '", spec_.name, "': ", pending_ids_,
      " writes wait for the index (Options::index_update_backlog = ", options_.index_update_backlog,
      ")",
      update_error_.ok() ? ""
                         : absl::StrCat("; last index update error: ", update_error_.ToString())));
}

absl::Status Collection::DrainStep(bool* done) {
  // The first pending batches (lowest ids), up to one step. Ids below the watermark are in the
  // postings or dead: it stays at the next pending batch and below every batch committed but
  // not yet pending (unapplied_; both change under handoff_mu_ together).
  std::vector<std::shared_ptr<const PendingBatch>> batches;
  uint64_t watermark = UINT64_MAX;
  {
    absl::MutexLock lock(&handoff_mu_);
    // A backlog is drained in bigger steps: each touched posting is rewritten once per step, so
    // the write amplification falls as the step grows (up to kMaxDrainStep vectors).
    const size_t step =
        std::clamp<size_t>(pending_ids_ / 2, options_.index_update_batch,
                           std::max<size_t>(kMaxDrainStep, options_.index_update_batch));
    size_t taken = 0;
    auto it = pending_.begin();
    for (; it != pending_.end() && taken < step; ++it) {
      batches.push_back(it->second);
      taken += it->second->ids.size();
    }
    if (it != pending_.end()) {
      watermark = it->first;
    } else if (!batches.empty()) {
      watermark = batches.back()->ids.back() + 1;  // batches hold disjoint ascending id ranges
    }
    if (!unapplied_.empty()) watermark = std::min(watermark, *unapplied_.begin());
  }
  *done = batches.empty();
  if (*done) return absl::OkStatus();
  std::vector<uint64_t> ids;
  std::vector<float> vectors;
  for (const auto& b : batches) {
    ids.insert(ids.end(), b->ids.begin(), b->ids.end());
    vectors.insert(vectors.end(), b->vectors.begin(), b->vectors.end());
  }
  // Ids deleted or replaced since they were written are dead: the updater leaves them out.
  SyncDead();
  SHOAL_ASSIGN_OR_RETURN(
      index::SpannUpdater::Change change,
      updater_->Insert(ids, vectors.data(), [this](uint64_t id) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return dead_.contains(id);
      }));
  SHOAL_RETURN_IF_ERROR(Apply(std::move(change), watermark, std::move(ids), /*erased=*/{}));
  absl::MutexLock lock(&handoff_mu_);
  for (const auto& b : batches) {
    pending_ids_ -= b->ids.size();
    pending_.erase(b->ids.front());
  }
  return absl::OkStatus();
}

void Collection::SyncDead() {
  std::vector<uint64_t> fresh;
  {
    absl::MutexLock lock(&stale_log_mu_);
    fresh.swap(stale_log_);
  }
  dead_.insert(fresh.begin(), fresh.end());
}

namespace {

// The RocksDB rows of an updater change: storage/ lies below index/ and knows nothing of the
// index's types, so the collection, which sees both, translates.
storage::IndexChange ToStoredChange(const index::DirectoryChange& change, uint64_t watermark,
                                    std::vector<uint64_t> erased_tombstones) {
  storage::IndexChange rows;
  rows.put.reserve(change.written.size());
  for (const index::PostingWrite& w : change.written) {
    storage::PostingRow row{w.posting, w.extent.first_page, w.extent.num_pages, w.extent.bytes,
                            w.count};
    row.origin = w.origin;
    row.centroid = w.centroid;
    rows.put.push_back(std::move(row));
  }
  rows.removed = change.removed;
  rows.indexed_below = watermark;
  rows.erase_tombstones = std::move(erased_tombstones);
  return rows;
}

}  // namespace

absl::Status Collection::Apply(index::SpannUpdater::Change change, uint64_t watermark,
                               std::vector<uint64_t> drained, std::vector<uint64_t> erased,
                               bool sweep_done) {
  const bool sync = options_.index_update_sync;
  SHOAL_RETURN_IF_ERROR(
      store_->CommitIndexChange(id_, ToStoredChange(change.directory, watermark, erased), sync));
  Publication p;
  p.generation = updater_generation_;
  p.watermark = watermark;
  p.drained = std::move(drained);
  p.erased = std::move(erased);
  p.sweep_done = sweep_done;
  for (uint64_t iid : p.erased) dead_.erase(iid);
  // Searches take the directory from the SpannIndex (its own lock), so the swap needs no mu_.
  if (change.next != nullptr) updater_->Publish(std::move(change));
  absl::MutexLock lock(&handoff_mu_);
  update_stats_ = updater_->stats();
  if (p.watermark != 0 || !p.drained.empty() || !p.erased.empty() || p.sweep_done) {
    publications_.push_back(std::move(p));
  }
  return absl::OkStatus();
}

void Collection::PublisherLoop() {
  for (;;) {
    Publication p;
    {
      absl::MutexLock lock(&handoff_mu_);
      auto ready = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return closing_ || !publications_.empty();
      };
      handoff_mu_.Await(absl::Condition(&ready));
      if (closing_) return;
      p = std::move(publications_.front());
      publications_.pop_front();
      publishing_ = true;
    }
    Publish(p);
    absl::MutexLock lock(&handoff_mu_);
    publishing_ = false;
  }
}

void Collection::Publish(const Publication& p) {
  // Each hold of mu_ first checks that the publication's index is still the one searched (a
  // build or drop replaced it: its buffer and tombstones are gone already).
  auto current = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return spann_ != nullptr && spann_->manifest().generation == p.generation;
  };
  {
    absl::MutexLock lock(&mu_);
    if (!current()) return;
    indexed_below_ = std::max(indexed_below_, p.watermark);
  }
  // The drained vectors are in the published postings; they leave the buffer a slice at a time,
  // so a search meanwhile may find one in both (MergeInto keeps it once), never in neither.
  for (size_t i = 0; i < p.drained.size(); i += kLockSlice) {
    absl::MutexLock lock(&mu_);
    if (!current()) return;
    for (size_t j = i; j < std::min(p.drained.size(), i + kLockSlice); ++j) {
      BufferRemove(p.drained[j]);
    }
  }
  // Erased tombstones name ids no posting or buffer holds any more: when each goes is moot.
  for (size_t i = 0; i < p.erased.size(); i += 8 * kLockSlice) {
    absl::MutexLock lock(&mu_);
    if (!current()) return;
    for (size_t j = i; j < std::min(p.erased.size(), i + 8 * kLockSlice); ++j) {
      stale_.Erase(p.erased[j]);
    }
  }
  if (p.sweep_done) {
    absl::MutexLock lock(&mu_);
    if (current()) tombstones_at_sweep_ = stale_.size();
  }
}

void Collection::AwaitPublished() {
  absl::MutexLock lock(&handoff_mu_);
  auto idle = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return closing_ || (publications_.empty() && !publishing_);
  };
  handoff_mu_.Await(absl::Condition(&idle));
}

absl::Status Collection::Sweep() {
  SyncDead();
  // The tombstones this sweep clears: those known now (later ones wait for the next sweep).
  std::vector<uint64_t> dead(dead_.begin(), dead_.end());
  auto is_dead = [this](uint64_t id) ABSL_NO_THREAD_SAFETY_ANALYSIS { return dead_.contains(id); };
  auto postings = [this]() {
    absl::ReaderMutexLock lock(&mu_);
    return spann_->directory()->size();
  };
  for (uint32_t first = 0; first < postings(); first += kSweepPostingsPerStep) {
    SHOAL_ASSIGN_OR_RETURN(auto change, updater_->Sweep(first, kSweepPostingsPerStep, is_dead));
    SHOAL_RETURN_IF_ERROR(Apply(std::move(change), /*watermark=*/0, {}, {}));
  }
  // Every posting that held one of `dead` was rewritten without it, and the buffer holds none of
  // them: no reader can meet them again, so their tombstones go.
  SHOAL_RETURN_IF_ERROR(Apply({}, /*watermark=*/0, {}, std::move(dead), /*sweep_done=*/true));
  // SweepDue counts from the tombstones left after this one: wait until they are.
  AwaitPublished();
  return absl::OkStatus();
}

absl::Status Collection::CompactVectorsIfDue(bool now_retry) {
  AwaitPublished();  // indexed_below_ exact: every drain step committed so far is applied
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
  absl::MutexLock lock(&handoff_mu_);
  update_stats_ = updater_->stats();
  return absl::OkStatus();
}

}  // namespace shoal::db

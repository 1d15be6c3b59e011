#include "db/index_handoff.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace shoal::db {

void IndexHandoff::MarkCommitting(uint64_t first_id) {
  absl::MutexLock lock(&mu_);
  committing_.insert(first_id);
}

void IndexHandoff::AddPending(Batch batch, std::optional<uint64_t> committing_first) {
  absl::MutexLock lock(&mu_);
  if (!batch.ids.empty()) {
    pending_ids_ += batch.ids.size();
    const uint64_t first = batch.ids.front();
    pending_.emplace(first, std::make_shared<const Batch>(std::move(batch)));
  }
  if (committing_first.has_value()) committing_.erase(committing_.find(*committing_first));
}

absl::Status IndexHandoff::AwaitBacklog(size_t limit, absl::Duration wait) {
  absl::MutexLock lock(&mu_);
  auto below = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return closing_ || pending_ids_ < limit; };
  if (mu_.AwaitWithTimeout(absl::Condition(&below), wait)) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "collection '", name_, "': ", pending_ids_,
      " writes wait for the index (Options::index_update_backlog = ", limit, ")",
      last_error_.ok() ? "" : absl::StrCat("; last index update error: ", last_error_.ToString())));
}

IndexHandoff::Round IndexHandoff::AwaitRound(size_t batch, absl::Duration idle,
                                             absl::Duration group_wait) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return closing_ || (!helping() && (!pending_.empty() || FlushingLocked()));
  };
  Round round;
  round.writes = mu_.AwaitWithTimeout(absl::Condition(&ready), idle);
  if (round.writes && !closing_ && !FlushingLocked()) {
    // Group commit of index work: wait a little for a full batch, so that each posting is
    // rewritten and each file synced once per batch rather than once per client write.
    auto full = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return closing_ || pending_ids_ >= batch || FlushingLocked();
    };
    mu_.AwaitWithTimeout(absl::Condition(&full), group_wait);
  }
  // A helper began meanwhile: it does what is asked now; the thread waits for its next round.
  if (helping()) return Round{.closing = closing_};
  const bool writes = round.writes;
  round = FlushRoundLocked();
  round.writes = writes;
  return round;
}

IndexHandoff::Round IndexHandoff::FlushRoundLocked() const {
  Round round;
  round.closing = closing_;
  if (FlushingLocked()) {
    round.flush = flush_requested_;
    round.sweep_all = sweep_all_requested_ > flush_served_;
  }
  return round;
}

void IndexHandoff::ServeLocked(uint64_t flush, const absl::Status& status, bool done) {
  last_error_ = status;
  // A helper's round may have served a later ticket than the one a maintenance round began with.
  if (flush > flush_served_ && (!status.ok() || done)) {
    flush_served_ = flush;
    flush_status_ = status;
  }
}

IndexHandoff::Step IndexHandoff::TakeStep(size_t batch, size_t max_step) {
  // Ids below the watermark are in the postings or dead: it stays at the next pending batch and
  // below every batch committed but not yet pending (both change under mu_ together).
  absl::MutexLock lock(&mu_);
  // While a flush waits, its caller waits for every pending id: the halves that would otherwise
  // follow as smaller steps, each writing a page to most postings it touches and syncing three
  // files, go in one step.
  const size_t want = FlushingLocked() ? pending_ids_ : pending_ids_ / 2;
  const size_t step = std::clamp<size_t>(want, batch, std::max(max_step, batch));
  Step out;
  size_t taken = 0;
  auto it = pending_.begin();
  for (; it != pending_.end() && taken < step; ++it) {
    out.batches.push_back(it->second);
    taken += it->second->ids.size();
  }
  if (it != pending_.end()) {
    out.watermark = it->first;
  } else if (!out.batches.empty()) {
    out.watermark = out.batches.back()->ids.back() + 1;  // batches hold disjoint ascending ranges
  }
  if (!committing_.empty()) out.watermark = std::min(out.watermark, *committing_.begin());
  return out;
}

void IndexHandoff::FinishStep(const Step& step) {
  absl::MutexLock lock(&mu_);
  for (const auto& b : step.batches) {
    pending_ids_ -= b->ids.size();
    pending_.erase(b->ids.front());
  }
}

void IndexHandoff::Publish(Publication p, const index::UpdateStats& stats) {
  absl::MutexLock lock(&mu_);
  stats_ = stats;
  if (!p.empty()) publications_.push_back(std::move(p));
}

void IndexHandoff::SetStats(const index::UpdateStats& stats) {
  absl::MutexLock lock(&mu_);
  stats_ = stats;
}

void IndexHandoff::EndRound(uint64_t flush, const absl::Status& status, bool done,
                            absl::Duration retry_wait) {
  absl::MutexLock lock(&mu_);
  ServeLocked(flush, status, done);
  if (status.ok()) return;
  // A new flush request cuts the wait short: it gets this round's retry at once.
  auto wake = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return closing_ || FlushingLocked(); };
  mu_.AwaitWithTimeout(absl::Condition(&wake), retry_wait);
}

void IndexHandoff::EndIdleRound(uint64_t flush, absl::Duration idle) {
  absl::MutexLock lock(&mu_);
  if (flush > flush_served_) {
    flush_served_ = flush;
    flush_status_ = absl::OkStatus();
  }
  mu_.AwaitWithTimeout(absl::Condition(&closing_), idle);
}

bool IndexHandoff::closing() const {
  absl::MutexLock lock(&mu_);
  return closing_;
}

bool IndexHandoff::NextPublication(Publication* p) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]()
                   ABSL_NO_THREAD_SAFETY_ANALYSIS { return closing_ || !publications_.empty(); };
  mu_.Await(absl::Condition(&ready));
  if (closing_) return false;
  *p = std::move(publications_.front());
  publications_.pop_front();
  publishing_ = true;
  return true;
}

void IndexHandoff::DonePublishing() {
  absl::MutexLock lock(&mu_);
  publishing_ = false;
}

void IndexHandoff::AwaitPublished() {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return closing_ || (publications_.empty() && !publishing_);
  };
  mu_.Await(absl::Condition(&idle));
}

absl::Status IndexHandoff::RequestFlush(bool sweep_all) {
  return *AwaitFlush(AddFlushRequest(sweep_all), absl::InfiniteDuration());
}

uint64_t IndexHandoff::AddFlushRequest(bool sweep_all) {
  absl::MutexLock lock(&mu_);
  const uint64_t ticket = ++flush_requested_;
  if (sweep_all) sweep_all_requested_ = ticket;
  return ticket;
}

std::optional<absl::Status> IndexHandoff::AwaitFlush(uint64_t ticket, absl::Duration wait) {
  absl::MutexLock lock(&mu_);
  auto served = [&]()
                    ABSL_NO_THREAD_SAFETY_ANALYSIS { return closing_ || flush_served_ >= ticket; };
  if (!mu_.AwaitWithTimeout(absl::Condition(&served), wait)) return std::nullopt;
  if (flush_served_ < ticket) {
    return absl::UnavailableError(absl::StrCat("collection '", name_, "' is closing"));
  }
  return flush_status_;
}

IndexHandoff::Round IndexHandoff::BeginHelping() {
  absl::MutexLock lock(&mu_);
  helpers_.fetch_add(1, std::memory_order_relaxed);
  return FlushRoundLocked();
}

void IndexHandoff::EndHelping(uint64_t flush, const absl::Status& status, bool done) {
  absl::MutexLock lock(&mu_);
  helpers_.fetch_sub(1, std::memory_order_relaxed);
  ServeLocked(flush, status, done);
}

void IndexHandoff::BeginClaim() {
  absl::MutexLock lock(&mu_);
  helpers_.fetch_add(1, std::memory_order_relaxed);
}

void IndexHandoff::EndClaim() {
  absl::MutexLock lock(&mu_);
  helpers_.fetch_sub(1, std::memory_order_relaxed);
}

void IndexHandoff::Clear() {
  absl::MutexLock lock(&mu_);
  pending_.clear();
  pending_ids_ = 0;
  publications_.clear();
}

void IndexHandoff::ResetStats() {
  absl::MutexLock lock(&mu_);
  stats_ = {};
}

index::UpdateStats IndexHandoff::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void IndexHandoff::Close() {
  absl::MutexLock lock(&mu_);
  closing_ = true;
}

}  // namespace shoal::db

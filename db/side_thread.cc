#include "db/side_thread.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <utility>

namespace shoal::db {

SideThread::SideThread(size_t chunk) : chunk_(std::max<size_t>(chunk, 1)) {}

SideThread::~SideThread() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

bool SideThread::Claim(size_t* begin, size_t* end) {
  if (job_ == nullptr || next_ >= job_->n_) return false;
  *begin = next_;
  *end = std::min(job_->n_, next_ + chunk_);
  next_ = *end;
  return true;
}

size_t SideThread::Close() {
  absl::MutexLock lock(&mu_);
  next_ = job_->n_;
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return active_ == 0; };
  mu_.Await(absl::Condition(&idle));
  job_ = nullptr;
  return done_beside_;
}

void SideThread::Loop() {
  pthread_setname_np(pthread_self(), "shoal-side");  // top -H, perf, ps -L
  // No wake-up preemption (see the header); a failed switch leaves it SCHED_OTHER.
  const sched_param none{};
  sched_setscheduler(0, SCHED_BATCH, &none);
  mu_.Lock();
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stop_ || (job_ != nullptr && next_ < job_->n_);
  };
  while (true) {
    mu_.Await(absl::Condition(&ready));
    if (stop_) break;
    size_t begin = 0, end = 0;
    Claim(&begin, &end);
    const Job* job = job_;
    ++active_;
    mu_.Unlock();
    job->work_(begin, end);
    mu_.Lock();
    --active_;
    done_beside_ += end - begin;
  }
  mu_.Unlock();
}

SideThread::Job::Job(SideThread* side, size_t n, std::function<void(size_t, size_t)> work,
                     bool offer)
    : side_(side), n_(n), work_(std::move(work)) {
  if (!offer || n == 0) return;
  absl::MutexLock lock(&side_->mu_);
  if (side_->job_ != nullptr || side_->stop_) return;
  if (!side_->thread_.joinable()) side_->thread_ = std::thread([s = side_] { s->Loop(); });
  side_->job_ = this;
  side_->next_ = 0;
  side_->done_beside_ = 0;
  offered_ = true;
}

SideThread::Job::~Job() {
  if (offered_ && !finished_) side_->Close();
}

void SideThread::Job::Finish() {
  finished_ = true;
  if (!offered_) {
    if (n_ > 0) work_(0, n_);
    return;
  }
  size_t begin = 0, end = 0;
  {
    // The caller takes all that is left in one claim: the thread stops claiming.
    absl::MutexLock lock(&side_->mu_);
    begin = side_->next_;
    end = n_;
    side_->next_ = n_;
  }
  if (begin < end) work_(begin, end);
  done_beside_ = side_->Close();
}

}  // namespace shoal::db

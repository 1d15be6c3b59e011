// SideThread: a thread that takes on part of a caller's loop while the caller waits for something
// else — a write's commit, asleep in the WAL's fsync, while the thread picks the buffer buckets of
// the write's vectors. The caller offers items [0, n); the thread claims chunks of them from the
// front; when the caller is back it claims what is left itself and then waits only for the
// chunks the thread is in. So no item waits for the thread to get a CPU, every item is done
// exactly once, and the caller's own share is what the thread did not get to.
//
//   SideThread side(/*chunk=*/8);  // its thread starts with the first job offered to it
//   {
//     SideThread::Job job(&side, n, [&](size_t begin, size_t end) { ... }, /*offer=*/true);
//     ... the commit ...
//     job.Finish();  // the rest on this thread; items [0, n) all done on return
//   }                // without Finish: the items not started are dropped (waits for the others)
//
// One job at a time: a Job made while another is open is not offered (its Finish runs it all on
// the caller's thread). The thread runs SCHED_BATCH: its wake-up does not preempt the caller on
// its way into the commit, nor a search; it runs once a CPU frees up (the caller's, asleep in
// the fsync) or at the next tick.
//
// Thread safety: Jobs may be made and finished on any threads; a Job itself belongs to one.
#ifndef SHOAL_DB_SIDE_THREAD_H_
#define SHOAL_DB_SIDE_THREAD_H_

#include <cstddef>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace shoal::db {

class SideThread {
 public:
  // Items the thread or the caller claims at a time (at least 1).
  explicit SideThread(size_t chunk);
  // Joins the thread. No Job may be open.
  ~SideThread();
  SideThread(const SideThread&) = delete;
  SideThread& operator=(const SideThread&) = delete;

  class Job {
   public:
    // Items [0, n) of `work` (called as work(begin, end), from this thread or the side thread,
    // never twice for an item; `work` must stay valid until Finish or destruction). Offered to
    // the side thread when `offer`, n > 0 and no other job is open.
    Job(SideThread* side, size_t n, std::function<void(size_t, size_t)> work, bool offer);
    // Drops the items not started and waits for those the side thread is in.
    ~Job();
    Job(const Job&) = delete;
    Job& operator=(const Job&) = delete;

    // Works the items not yet claimed on this thread, then waits until the side thread is done
    // with its chunks. Every item is then done. Once per Job.
    void Finish();
    // Whether the side thread got it (tests).
    bool offered() const { return offered_; }
    // Items the side thread did (tests; meaningful after Finish).
    size_t done_beside() const { return done_beside_; }

   private:
    friend class SideThread;
    SideThread* const side_;
    const size_t n_;
    const std::function<void(size_t, size_t)> work_;
    bool offered_ = false;
    bool finished_ = false;
    size_t done_beside_ = 0;
  };

 private:
  void Loop();
  // Claims the next chunk of the open job into [*begin, *end); false when none is left.
  bool Claim(size_t* begin, size_t* end) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Closes the open job: nothing more is claimed, then waits until no chunk is in progress.
  // Returns the items the thread did.
  size_t Close() ABSL_LOCKS_EXCLUDED(mu_);

  const size_t chunk_;
  absl::Mutex mu_;
  const Job* job_ ABSL_GUARDED_BY(mu_) = nullptr;  // the open job offered to the thread
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;           // its first item not claimed
  size_t active_ ABSL_GUARDED_BY(mu_) = 0;         // chunks the thread is in (0 or 1)
  size_t done_beside_ ABSL_GUARDED_BY(mu_) = 0;    // items of the job the thread did
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // started by the first offered Job (under mu_)
};

}  // namespace shoal::db

#endif  // SHOAL_DB_SIDE_THREAD_H_

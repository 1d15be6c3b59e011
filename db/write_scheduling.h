// BatchScheduledScope: while alive, the calling thread runs under Linux's SCHED_BATCH policy
// (when it ran SCHED_OTHER; restored on destruction). Collection writes run inside one, as
// Options::batch_scheduled_writes says.
//
//   {
//     BatchScheduledScope scope(options.batch_scheduled_writes);
//     ... commit (fsync), apply ...
//   }  // SCHED_OTHER again
//
// Why: a synced write sleeps in fsync and in lock hand-offs, and on each wake-up the scheduler
// lets it preempt whatever runs on its CPU — on a small machine, often a search, which then
// waits out the writer's next burst of work (0.2-0.8 ms, seen in sched_switch traces of
// shoal_bench updates on 2 vCPUs). A SCHED_BATCH thread keeps its nice value and CPU share but
// never preempts on wake-up; it runs when the CPU frees up or at the next tick. Threads under
// another policy (real-time, SCHED_IDLE, already SCHED_BATCH) are left as they are; a failed
// switch (e.g. a seccomp filter) leaves the thread unchanged.
#ifndef SHOAL_DB_WRITE_SCHEDULING_H_
#define SHOAL_DB_WRITE_SCHEDULING_H_

#include <sched.h>

namespace shoal::db {

class BatchScheduledScope {
 public:
  explicit BatchScheduledScope(bool enabled) {
    if (!enabled || sched_getscheduler(0) != SCHED_OTHER) return;
    const sched_param none{};
    switched_ = sched_setscheduler(0, SCHED_BATCH, &none) == 0;
  }
  ~BatchScheduledScope() {
    if (!switched_) return;
    const sched_param none{};
    sched_setscheduler(0, SCHED_OTHER, &none);
  }
  BatchScheduledScope(const BatchScheduledScope&) = delete;
  BatchScheduledScope& operator=(const BatchScheduledScope&) = delete;

  bool switched() const { return switched_; }

 private:
  bool switched_ = false;
};

}  // namespace shoal::db

#endif  // SHOAL_DB_WRITE_SCHEDULING_H_

// MaintenanceBudget: the DB-wide bound on background index maintenance (Options::
// index_update_threads). Each collection with an SSD index has one maintenance thread that sleeps
// until there is work; it holds one of the budget's slots while it works, so at most
// index_update_threads collections do maintenance at once. (A FlushIndexUpdates caller that does
// the work on its own thread takes no slot: index_maintainer.h.)
//
//   MaintenanceBudget budget(1);
//   { MaintenanceBudget::Slot slot(&budget); ...work... }
//
// Thread-safe.
#ifndef SHOAL_DB_MAINTENANCE_BUDGET_H_
#define SHOAL_DB_MAINTENANCE_BUDGET_H_

#include <cstdint>
#include <functional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace shoal::db {

class MaintenanceBudget {
 public:
  // `before_slot` (a test seam; empty: none) runs on each maintenance thread before it waits
  // for a slot, i.e. before each round of work.
  explicit MaintenanceBudget(uint32_t slots, std::function<void()> before_slot = {})
      : free_(slots), before_slot_(std::move(before_slot)) {}

  class Slot {
   public:
    explicit Slot(MaintenanceBudget* b) : b_(b) {
      if (b_ == nullptr) return;
      if (b_->before_slot_) b_->before_slot_();
      b_->mu_.LockWhen(absl::Condition(
          +[](uint32_t* free) { return *free > 0; }, &b_->free_));
      --b_->free_;
      b_->mu_.Unlock();
    }
    ~Slot() {
      if (b_ == nullptr) return;
      absl::MutexLock lock(&b_->mu_);
      ++b_->free_;
    }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    MaintenanceBudget* b_;
  };

 private:
  absl::Mutex mu_;
  uint32_t free_ ABSL_GUARDED_BY(mu_);
  const std::function<void()> before_slot_;
};

}  // namespace shoal::db

#endif  // SHOAL_DB_MAINTENANCE_BUDGET_H_

// IndexMaintainer: a FlushIndexUpdates caller does not depend on the maintenance thread getting
// the CPU. The thread runs at nice 19; when other processes keep the CPUs busy it barely runs, so
// a flush that only waited for it took 10-50 times as long. Here the thread is held up outright
// (parked before its round, or in a slow fsync mid-step): the caller does the work on its own
// thread, the thread steps aside, and every write ends up in the postings exactly once.
#include <gtest/gtest.h>

#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "db/fault_db_testing.h"
#include "shoal/db.h"

namespace shoal {
namespace {

// Far beyond any flush here when it is done by a running thread: a flush that is still waiting
// then waits for the held-up maintenance thread (the failure this guards against).
constexpr absl::Duration kHang = absl::Seconds(60);

class IndexMaintainerTest : public ::testing::Test, protected testing::FaultDb {
 protected:
  void SetUp() override {
    // Parks the maintenance thread before its rounds while `park_` is set, until released.
    before_maintenance_round_ = [this] {
      if (!park_.load()) return;
      parked_.store(true);
      released_.WaitForNotification();
    };
    Create("index_maintainer_test");
    ASSERT_TRUE(db_->CreateCollection({"c", testing::kClusteredDim, Metric::kL2}).ok());
    UpsertClustered(0, 1000);
    ASSERT_TRUE(db_->BuildIndex("c", "spann:centroid_ratio=0.01,replicas=2").ok());
  }
  void TearDown() override {
    Release();
    Destroy();
  }
  void Release() {
    if (!released_.HasBeenNotified()) released_.Notify();
  }
  // FlushIndexUpdates on another thread; its status, or DeadlineExceeded if it did not return
  // within kHang (then it returns once the thread is released).
  absl::Status FlushOrHang() {
    absl::Notification returned;
    absl::Status status;
    std::thread flush([&] {
      status = db_->FlushIndexUpdates("c");
      returned.Notify();
    });
    const bool in_time = returned.WaitForNotificationWithTimeout(kHang);
    Release();
    flush.join();
    return in_time ? status : absl::DeadlineExceededError("FlushIndexUpdates hung");
  }

  std::atomic<bool> park_{false}, parked_{false};
  absl::Notification released_;
};

TEST_F(IndexMaintainerTest, FlushCompletesWhileTheMaintenanceThreadCannotRun) {
  park_ = true;
  UpsertClustered(1000, 1600);
  UpsertClustered(1600, 1700);
  EXPECT_GT(Info().unindexed_vectors, 0u);
  const absl::Status flushed = FlushOrHang();
  EXPECT_TRUE(flushed.ok()) << flushed;
  EXPECT_EQ(Info().unindexed_vectors, 0u);
  ExpectEveryKeyFound();
  ExpectVerifyClean();
  // The thread, released, finds nothing left and goes on as before.
  UpsertClustered(1700, 1800);
  EXPECT_TRUE(db_->FlushIndexUpdates("c").ok());
  EXPECT_EQ(Info().unindexed_vectors, 0u);
  ExpectEveryKeyFound();
}

TEST_F(IndexMaintainerTest, AStepTheThreadLeavesToAFlushingCallerIsDoneOnce) {
  // Each fsync of vectors.dat (the start of every drain step) or postings.dat takes long enough
  // for the flushing caller to find the thread not running and take over while the thread is in
  // the middle of a step.
  fs_.SetSyncDelay("vectors.dat", absl::Milliseconds(100));
  fs_.SetSyncDelay("postings.dat", absl::Milliseconds(100));
  for (uint64_t k = 1000; k < 3000; k += 250) {
    UpsertClustered(k, k + 250);
    EXPECT_TRUE(db_->FlushIndexUpdates("c").ok());
  }
  fs_.Clear();
  EXPECT_EQ(Info().unindexed_vectors, 0u);
  ExpectEveryKeyFound();
  ExpectVerifyClean();
  // Nothing lost across a power loss either.
  PowerLossAndReopen();
  EXPECT_EQ(Info().unindexed_vectors, 0u);
  ExpectEveryKeyFound();
  ExpectVerifyClean();
}

}  // namespace
}  // namespace shoal

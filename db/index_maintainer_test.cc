// IndexMaintainer: the index work does not wait on the maintenance thread getting the CPU. The
// thread runs at nice 19; when other processes keep the CPUs busy it barely runs, so a flush that
// only waited for it took 10-50 times as long, and a build, drop, snapshot or Verify waited for
// its whole current step. Here the thread is held up outright (parked before its round, in a slow
// fsync mid-step, or in a step it may leave only once someone waits for it): a flushing caller
// does the work on its own thread, another taker of the index work has the thread leave its step,
// and every write ends up in the postings exactly once. Also the RocksDB rows a step commits
// (ToStoredChange).
#include "db/index_maintainer.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/strings/str_cat.h"
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
    for (absl::Notification* n : {&go_, &taken_}) {
      if (!n->HasBeenNotified()) n->Notify();
    }
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

  // `take` (a drop, snapshot or Verify: it needs the index work lock) on another thread, while the
  // maintenance thread is in a drain step holding that lock and, as a starved nice-19 thread, gets
  // the CPU again only once `take` waits for it. The thread is held at the step's first fsync
  // (vectors.dat: the placements and posting writes are ahead), and at its last (postings.dat)
  // until `take` returned: it gets there only if it did not leave the step. `take`'s status, or
  // DeadlineExceeded if it did not return within kHang (it waited for the step).
  absl::Status TakeWhileTheThreadIsInAStep(const std::function<absl::Status()>& take) {
    fs_.SetSyncHook("vectors.dat", [this] {
      if (!OnMaintenanceThread() || in_step_.HasBeenNotified()) return;
      in_step_.Notify();
      go_.WaitForNotification();
    });
    fs_.SetSyncHook("postings.dat", [this] {
      if (OnMaintenanceThread() && in_step_.HasBeenNotified()) taken_.WaitForNotification();
    });
    UpsertClustered(1000, 1600);
    in_step_.WaitForNotification();
    std::atomic<pid_t> tid{0};
    absl::Notification returned;
    absl::Status status;
    std::thread taker([&] {
      tid = static_cast<pid_t>(syscall(SYS_gettid));
      status = take();
      returned.Notify();
    });
    // The thread runs on once `take` sleeps: then it waits for the lock the thread holds.
    while (!returned.HasBeenNotified() && (tid.load() == 0 || !Sleeping(tid.load()))) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    go_.Notify();
    const bool in_time = returned.WaitForNotificationWithTimeout(kHang);
    taken_.Notify();
    taker.join();
    fs_.Clear();
    return in_time ? status : absl::DeadlineExceededError("waited for the maintenance thread");
  }
  // The step the thread left is done later, once: every write indexed and found, also after a
  // power loss.
  void ExpectNothingLost() {
    EXPECT_TRUE(db_->FlushIndexUpdates("c").ok());
    ExpectAllIndexedAlsoAfterAPowerLoss();
  }
  // Every write indexed and found, Verify clean; the same after a power loss.
  void ExpectAllIndexedAlsoAfterAPowerLoss() {
    EXPECT_EQ(Info().unindexed_vectors, 0u);
    ExpectEveryKeyFound();
    ExpectVerifyClean();
    PowerLossAndReopen();
    EXPECT_EQ(Info().unindexed_vectors, 0u);
    ExpectEveryKeyFound();
    ExpectVerifyClean();
  }
  static bool OnMaintenanceThread() {
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    return std::string_view(name) == "shoal-maint";  // index_maintainer.cc names it
  }
  // Whether thread `tid` of this process sleeps (here: waits for a lock).
  static bool Sleeping(pid_t tid) {
    std::ifstream stat(absl::StrCat("/proc/self/task/", tid, "/stat"));
    std::string line;
    std::getline(stat, line);
    const size_t comm_end = line.rfind(')');  // "tid (comm) STATE ..."
    return comm_end != std::string::npos && comm_end + 2 < line.size() && line[comm_end + 2] == 'S';
  }

  std::atomic<bool> park_{false}, parked_{false};
  absl::Notification released_;
  // TakeWhileTheThreadIsInAStep's: they outlive every hook that names them.
  absl::Notification in_step_, go_, taken_;
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
  ExpectAllIndexedAlsoAfterAPowerLoss();
}

TEST_F(IndexMaintainerTest, ADropDoesNotWaitForTheThreadsStep) {
  const absl::Status dropped =
      TakeWhileTheThreadIsInAStep([&] { return db_->BuildIndex("c", "flat"); });
  EXPECT_TRUE(dropped.ok()) << dropped;
  ExpectNothingLost();
}

TEST_F(IndexMaintainerTest, ASnapshotDoesNotWaitForTheThreadsStep) {
  const std::string snapshot = dir_ + "_snapshot";
  const absl::Status copied = TakeWhileTheThreadIsInAStep([&] { return db_->Snapshot(snapshot); });
  EXPECT_TRUE(copied.ok()) << copied;
  ExpectNothingLost();
  std::filesystem::remove_all(snapshot);  // after the power loss (written through fs_)
}

TEST_F(IndexMaintainerTest, VerifyDoesNotWaitForTheThreadsStep) {
  VerifyReport report;
  const absl::Status verified =
      TakeWhileTheThreadIsInAStep([&] { return db_->Verify("", &report); });
  EXPECT_TRUE(verified.ok()) << verified;
  EXPECT_TRUE(report.ok()) << ::testing::PrintToString(report.problems);
  ExpectNothingLost();
}

// A drain step's rows: a posting whose centroid is still its tree leaf's is stored without it (the
// directory reads it as the leaf's when it opens); a re-centred or new one keeps it.
TEST(ToStoredChangeTest, LeavesOutOnlyTreeLeafCentroids) {
  index::DirectoryChange change;
  index::PostingWrite appended{3, {10, 2, 5000}, 7, 3, {1.0f, 2.0f}};
  appended.tree_centroid = true;
  index::PostingWrite split{40, {20, 3, 9000}, 9, 3, {3.0f, 4.0f}};
  change.written = {appended, split};
  const storage::IndexChange rows = db::ToStoredChange(change, /*watermark=*/5, {});
  ASSERT_EQ(rows.put.size(), 2u);
  EXPECT_EQ(rows.put[0].posting, 3u);
  EXPECT_EQ(rows.put[0].origin, 3u);
  EXPECT_TRUE(rows.put[0].centroid.empty());
  EXPECT_EQ(rows.put[1].posting, 40u);
  EXPECT_EQ(rows.put[1].centroid, (std::vector<float>{3.0f, 4.0f}));
}

}  // namespace
}  // namespace shoal

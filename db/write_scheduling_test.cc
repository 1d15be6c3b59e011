#include "db/write_scheduling.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "gtest/gtest.h"
#include "shoal/db.h"

namespace shoal::db {
namespace {

int ThreadNice() { return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))); }

// Each case runs on a thread of its own: a policy or nice change stays with that thread.
template <typename Fn>
void OnOwnThread(Fn fn) {
  std::thread t(fn);
  t.join();
}

// SCHED_OTHER -> SCHED_BATCH inside the scope, back after it; the nice value is kept throughout.
TEST(BatchScheduledScopeTest, SwitchesAnOrdinaryThreadAndRestoresIt) {
  OnOwnThread([] {
    ASSERT_EQ(sched_getscheduler(0), SCHED_OTHER);
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 3);
    {
      BatchScheduledScope scope(true);
      EXPECT_TRUE(scope.switched());
      EXPECT_EQ(sched_getscheduler(0), SCHED_BATCH);
      EXPECT_EQ(ThreadNice(), 3);
    }
    EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
    EXPECT_EQ(ThreadNice(), 3);
  });
}

// Disabled, or a thread under another policy: nothing changes, during or after.
TEST(BatchScheduledScopeTest, LeavesOtherPoliciesAndDisabledScopesAlone) {
  OnOwnThread([] {
    {
      BatchScheduledScope scope(false);
      EXPECT_FALSE(scope.switched());
      EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
    }
    const sched_param none{};
    ASSERT_EQ(sched_setscheduler(0, SCHED_IDLE, &none), 0);
    {
      BatchScheduledScope scope(true);
      EXPECT_FALSE(scope.switched());
      EXPECT_EQ(sched_getscheduler(0), SCHED_IDLE);
    }
    EXPECT_EQ(sched_getscheduler(0), SCHED_IDLE);
  });
}

// Writes through the DB (an SSD index, so the online-update path) hand the thread back as they
// found it.
TEST(BatchScheduledScopeTest, WritesRestoreTheCallersPolicy) {
  const std::string dir = testing::TempDir() + "/write_scheduling_test";
  std::filesystem::remove_all(dir);
  auto db = DB::Open(dir, Options{});
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)->CreateCollection({"c", 4, Metric::kL2}).ok());
  std::vector<Record> records;
  for (uint64_t i = 0; i < 64; ++i) {
    records.push_back({i, {float(i), float(i % 7), float(i % 3), 1.0f}});
  }
  ASSERT_TRUE((*db)->Upsert("c", records, {}).ok());
  ASSERT_TRUE((*db)->BuildIndex("c", "spann:centroid_ratio=0.1").ok());
  OnOwnThread([&] {
    ASSERT_TRUE((*db)->Upsert("c", std::span(records).first(8), {.sync = true}).ok());
    EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
    const std::vector<Key> keys = {uint64_t{1}, uint64_t{2}};
    ASSERT_TRUE((*db)->Delete("c", keys, {.sync = true}).ok());
    EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
  });
  db->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shoal::db

#include "db/side_thread.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace shoal::db {
namespace {

// Per-item counters of how often an item began and ended, and on which thread it ran.
struct Items {
  explicit Items(size_t n) : begun(n), ended(n), on_caller(n) {}
  std::vector<std::atomic<int>> begun, ended;
  std::vector<std::atomic<bool>> on_caller;
};

TEST(SideThreadTest, FinishDoesEveryItemExactlyOnceWhoeverTakesIt) {
  SideThread side(/*chunk=*/4);
  for (size_t n : {0, 1, 3, 4, 5, 1000}) {
    Items items(n);
    const std::thread::id caller = std::this_thread::get_id();
    SideThread::Job job(
        &side, n,
        [&](size_t begin, size_t end) {
          for (size_t i = begin; i < end; ++i) {
            items.begun[i]++;
            items.on_caller[i] = std::this_thread::get_id() == caller;
            std::this_thread::sleep_for(std::chrono::microseconds(20));
            items.ended[i]++;
          }
        },
        /*offer=*/true);
    EXPECT_EQ(job.offered(), n > 0);
    // Gives the side thread a chance to take some (the result holds either way).
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    job.Finish();
    size_t beside = 0;
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(items.begun[i], 1) << "n " << n << " item " << i;
      EXPECT_EQ(items.ended[i], 1) << "n " << n << " item " << i;
      beside += items.on_caller[i] ? 0 : 1;
    }
    EXPECT_EQ(job.done_beside(), beside) << "n " << n;
  }
}

TEST(SideThreadTest, AJobNotOfferedOrMadeWhileAnotherIsOpenRunsOnTheCaller) {
  SideThread side(/*chunk=*/2);
  const std::thread::id caller = std::this_thread::get_id();
  absl::Notification release;
  std::atomic<bool> first_started{false};
  SideThread::Job first(
      &side, 2,
      [&](size_t, size_t) {
        first_started = true;
        release.WaitForNotification();
      },
      /*offer=*/true);
  ASSERT_TRUE(first.offered());
  while (!first_started) std::this_thread::yield();  // the side thread is in `first`

  for (bool offer : {true, false}) {
    std::vector<std::thread::id> ran;
    SideThread::Job second(
        &side, 10,
        [&](size_t begin, size_t end) {
          for (size_t i = begin; i < end; ++i) ran.push_back(std::this_thread::get_id());
        },
        offer);
    EXPECT_FALSE(second.offered());
    second.Finish();
    ASSERT_EQ(ran.size(), 10u);
    for (const std::thread::id& t : ran) EXPECT_EQ(t, caller);
    EXPECT_EQ(second.done_beside(), 0u);
  }
  release.Notify();
  first.Finish();
  EXPECT_EQ(first.done_beside(), 2u);

  // Once `first` is closed, the thread takes jobs again.
  SideThread::Job third(
      &side, 1, [](size_t, size_t) {}, /*offer=*/true);
  EXPECT_TRUE(third.offered());
  third.Finish();
}

TEST(SideThreadTest, AJobLeftUnfinishedWaitsForChunksInProgressAndDropsTheRest) {
  constexpr size_t kN = 64;
  SideThread side(/*chunk=*/4);
  Items items(kN);
  std::atomic<bool> started{false};
  absl::Notification release;
  std::thread releaser;
  {
    SideThread::Job job(
        &side, kN,
        [&](size_t begin, size_t end) {
          for (size_t i = begin; i < end; ++i) items.begun[i]++;
          started = true;
          release.WaitForNotification();
          for (size_t i = begin; i < end; ++i) items.ended[i]++;
        },
        /*offer=*/true);
    ASSERT_TRUE(job.offered());
    while (!started) std::this_thread::yield();
    releaser = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      release.Notify();
    });
  }  // ~Job: as after a failed commit
  // Every item begun has ended by the time ~Job returned, and no item runs after it.
  size_t done = 0;
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_EQ(items.begun[i], items.ended[i]) << i;
    done += items.ended[i];
  }
  EXPECT_GE(done, 4u);
  EXPECT_LT(done, kN);
  releaser.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  size_t later = 0;
  for (size_t i = 0; i < kN; ++i) later += items.begun[i];
  EXPECT_EQ(later, done);
}

TEST(SideThreadTest, JobsFromManyThreadsEachDoEveryItemOnce) {
  SideThread side(/*chunk=*/3);
  constexpr size_t kThreads = 4, kJobs = 200, kN = 37;
  std::vector<std::thread> writers;
  std::atomic<size_t> wrong{0};
  for (size_t t = 0; t < kThreads; ++t) {
    writers.emplace_back([&] {
      for (size_t j = 0; j < kJobs; ++j) {
        std::vector<std::atomic<int>> count(kN);
        SideThread::Job job(
            &side, kN,
            [&](size_t begin, size_t end) {
              for (size_t i = begin; i < end; ++i) count[i]++;
            },
            /*offer=*/true);
        job.Finish();
        for (size_t i = 0; i < kN; ++i) wrong += count[i] != 1 ? 1 : 0;
      }
    });
  }
  for (std::thread& w : writers) w.join();
  EXPECT_EQ(wrong, 0u);
}

}  // namespace
}  // namespace shoal::db

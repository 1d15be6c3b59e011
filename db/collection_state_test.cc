#include "db/collection_state.h"

#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace shoal::db {
namespace {

// A writer that takes the search lock in slices, as the publisher does, lets a search that queued
// for it during one slice in before the next: absl::Mutex alone lets the writer's next Lock() take
// the lock first (the search, woken by the unlock, still has to be scheduled).
TEST(CollectionStateTest, SlicedWriterLetsAQueuedSearchInBeforeItsNextSlice) {
  CollectionState state(4, index::Metric::kL2);
  absl::Mutex order_mu;
  std::vector<std::string> order;
  auto record = [&](const char* who) {
    absl::MutexLock lock(&order_mu);
    order.push_back(who);
  };
  state.mu.Lock();  // the first slice
  std::thread search([&] {
    SearchHold hold(state);
    record("search");
  });
  while (state.searches_waiting.load() == 0) std::this_thread::yield();
  state.mu.Unlock();
  state.LetSearchesIn(absl::InfiniteDuration());
  state.mu.Lock();  // the next slice
  record("writer");
  state.mu.Unlock();
  search.join();
  EXPECT_EQ(order, (std::vector<std::string>{"search", "writer"}));
  EXPECT_EQ(state.searches_waiting.load(), 0);
}

// With no search waiting, the writer does not wait at all (the bound is never reached).
TEST(CollectionStateTest, LetSearchesInReturnsAtOnceWithoutWaitingSearches) {
  CollectionState state(4, index::Metric::kL2);
  state.LetSearchesIn(absl::InfiniteDuration());
  {
    SearchHold hold(state);
    EXPECT_EQ(state.searches_waiting.load(), 0);
  }
  state.mu.Lock();
  state.mu.Unlock();
}

}  // namespace
}  // namespace shoal::db

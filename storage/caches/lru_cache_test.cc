#include "storage/caches/lru_cache.h"

#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace shoal::storage {
namespace {

using Cache = ByteLruCache<uint64_t, std::string>;

std::shared_ptr<const std::string> Value(uint64_t k) {
  return std::make_shared<const std::string>(std::to_string(k));
}

TEST(ByteLruCacheTest, EvictsLeastRecentlyUsedWithinBudget) {
  Cache cache(100);  // Small budget: one shard, exact LRU.
  for (uint64_t k = 0; k < 5; ++k) cache.Insert(k, Value(k), 20);
  EXPECT_EQ(cache.charged_bytes(), 100u);
  ASSERT_NE(cache.Lookup(0), nullptr);  // 0 is now the most recent; 1 is the oldest.
  cache.Insert(5, Value(5), 20);
  EXPECT_EQ(cache.Lookup(1), nullptr);
  EXPECT_EQ(*cache.Lookup(0), "0");
  EXPECT_EQ(*cache.Lookup(5), "5");
  EXPECT_EQ(cache.charged_bytes(), 100u);
  cache.Insert(6, Value(6), 50);  // Evicts 2, 3 and 4 (the three least recent).
  EXPECT_EQ(cache.Lookup(2), nullptr);
  EXPECT_EQ(cache.Lookup(3), nullptr);
  EXPECT_EQ(cache.Lookup(4), nullptr);
  EXPECT_NE(cache.Lookup(0), nullptr);
  EXPECT_LE(cache.charged_bytes(), 100u);
}

TEST(ByteLruCacheTest, OversizedEntryIsNotCached) {
  Cache cache(100);
  cache.Insert(1, Value(1), 10);
  cache.Insert(2, Value(2), 101);
  EXPECT_EQ(cache.Lookup(2), nullptr);
  EXPECT_NE(cache.Lookup(1), nullptr);
  cache.Insert(1, Value(1), 101);  // Replacing with an oversized value drops the old one.
  EXPECT_EQ(cache.Lookup(1), nullptr);
  EXPECT_EQ(cache.charged_bytes(), 0u);
}

TEST(ByteLruCacheTest, ReplaceEraseAndShrink) {
  Cache cache(100);
  cache.Insert(1, Value(1), 30);
  cache.Insert(1, std::make_shared<const std::string>("one"), 40);
  EXPECT_EQ(*cache.Lookup(1), "one");
  EXPECT_EQ(cache.charged_bytes(), 40u);
  cache.Insert(2, Value(2), 40);
  cache.Erase(1);
  EXPECT_EQ(cache.Lookup(1), nullptr);
  EXPECT_EQ(cache.charged_bytes(), 40u);
  cache.Insert(3, Value(3), 40);
  cache.SetBudget(50);  // Keeps only the most recent (3).
  EXPECT_EQ(cache.budget_bytes(), 50u);
  EXPECT_LE(cache.charged_bytes(), 50u);
  EXPECT_NE(cache.Lookup(3), nullptr);
  EXPECT_EQ(cache.Lookup(2), nullptr);
}

TEST(ByteLruCacheTest, HeldValueOutlivesEviction) {
  Cache cache(10);
  cache.Insert(1, Value(1), 10);
  auto held = cache.Lookup(1);
  cache.Insert(2, Value(2), 10);
  EXPECT_EQ(cache.Lookup(1), nullptr);
  EXPECT_EQ(*held, "1");
}

TEST(ByteLruCacheTest, ShardedBudgetHolds) {
  Cache cache(64 << 20, 16);  // 16 shards of 4 MiB.
  for (uint64_t k = 0; k < 10000; ++k) cache.Insert(k, Value(k), 64 << 10);
  EXPECT_LE(cache.charged_bytes(), cache.budget_bytes());
  EXPECT_GT(cache.charged_bytes(), cache.budget_bytes() / 2);
  EXPECT_NE(cache.Lookup(9999), nullptr);
}

TEST(ByteLruCacheTest, ConcurrentUseStaysWithinBudget) {
  Cache cache(4 << 20, 4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, t] {
      std::mt19937_64 rng(t);
      for (int i = 0; i < 20000; ++i) {
        const uint64_t k = rng() % 2000;
        switch (rng() % 4) {
          case 0:
            cache.Erase(k);
            break;
          case 1:
            cache.Insert(k, Value(k), 1 + rng() % (32 << 10));
            break;
          default:
            if (auto v = cache.Lookup(k)) {
              ASSERT_EQ(*v, std::to_string(k));
            }
        }
        ASSERT_LE(cache.charged_bytes(), cache.budget_bytes() + (32 << 10) * 4);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(cache.charged_bytes(), cache.budget_bytes());
}

}  // namespace
}  // namespace shoal::storage

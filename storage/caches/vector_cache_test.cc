#include "storage/caches/vector_cache.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <vector>

#include "base/test_seed.h"

namespace shoal::storage {
namespace {

constexpr size_t kDim = 8;

// Vector i of the tests: every component encodes its id, so a wrong hit is visible.
std::vector<float> VectorOf(uint64_t id) {
  std::vector<float> v(kDim);
  for (size_t j = 0; j < kDim; ++j) v[j] = static_cast<float>(id * 10 + j);
  return v;
}

// Looks up `ids`; returns how many were held, checking every held vector's contents.
size_t CountHits(const VectorCache& cache, const std::vector<uint64_t>& ids) {
  std::vector<size_t> missing;
  size_t hits = 0;
  cache.LookupBatch(
      ids,
      [&](size_t i, const float* v) {
        ++hits;
        for (size_t j = 0; j < kDim; ++j) EXPECT_EQ(v[j], static_cast<float>(ids[i] * 10 + j));
      },
      &missing);
  EXPECT_EQ(hits + missing.size(), ids.size());
  return hits;
}

TEST(VectorCacheTest, HoldsWhatFitsAndReportsMisses) {
  VectorCache cache(kDim);
  cache.SetBudget(1 << 20);
  std::vector<uint64_t> ids;
  for (uint64_t id = 0; id < 1000; ++id) ids.push_back(id * 7919);  // sparse ids
  EXPECT_EQ(CountHits(cache, ids), 0u);
  for (uint64_t id : ids) cache.Insert(id, VectorOf(id).data());
  EXPECT_EQ(CountHits(cache, ids), ids.size());
  std::vector<size_t> missing;
  cache.LookupBatch(
      std::vector<uint64_t>{3, 7919, 5}, [](size_t, const float*) {}, &missing);
  EXPECT_EQ(missing, (std::vector<size_t>{0, 2}));
  EXPECT_LE(cache.charged_bytes(), size_t{1} << 20);
}

// Vectors of 16k floats start on a cache line (their chunks do): a 128-d vector is 8 lines to
// read, not 9.
TEST(VectorCacheTest, VectorsOfSixteenFloatsStartOnACacheLine) {
  constexpr size_t kWide = 16;
  VectorCache cache(kWide);
  cache.SetBudget(1 << 20);
  std::vector<float> v(kWide, 1.0f);
  std::vector<uint64_t> ids;
  for (uint64_t id = 0; id < 3000; ++id) {  // past one chunk
    cache.Insert(id, v.data());
    ids.push_back(id);
  }
  std::vector<size_t> missing;
  size_t seen = 0;
  cache.LookupBatch(
      ids,
      [&](size_t, const float* p) {
        ++seen;
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
      },
      &missing);
  EXPECT_EQ(seen, ids.size());
}

TEST(VectorCacheTest, EvictsWithinTheBudgetAndKeepsReferencedVectors) {
  VectorCache cache(kDim);
  const size_t budget = 20000;
  cache.SetBudget(budget);
  std::mt19937_64 rng(base::TestSeed());
  // A hot set looked up between inserts of a stream of cold ids.
  std::vector<uint64_t> hot = {1, 2, 3, 4, 5};
  for (uint64_t id : hot) cache.Insert(id, VectorOf(id).data());
  uint64_t last = 0;
  for (uint64_t i = 0; i < 5000; ++i) {
    EXPECT_EQ(CountHits(cache, hot), hot.size()) << "after " << i << " cold inserts";
    last = 1000 + rng() % 100000;
    cache.Insert(last, VectorOf(last).data());
    EXPECT_LE(cache.charged_bytes(), budget);
  }
  EXPECT_EQ(CountHits(cache, {last}), 1u);
  // Every held id still maps to its own vector after thousands of evictions.
  std::vector<uint64_t> all;
  for (uint64_t id = 1000; id < 101000; ++id) all.push_back(id);
  const size_t held = CountHits(cache, all);
  EXPECT_GT(held, 0u);
  EXPECT_LT(held, 5000u);
}

// Dense ids (a collection's internal ids) are held in the array by id; the first id past what
// the array may cover moves every held id to the table, each still finding its own vector, and
// the budget holds on both sides of the move.
TEST(VectorCacheTest, DenseIdsThenAFarOneKeepEveryVector) {
  VectorCache cache(kDim);
  const size_t budget = 1 << 20;
  cache.SetBudget(budget);
  const size_t capacity = cache.capacity();
  std::vector<uint64_t> dense;
  for (uint64_t id = 0; id < capacity; id += 2) dense.push_back(id);  // half the ids, half full
  for (uint64_t id : dense) cache.Insert(id, VectorOf(id).data());
  EXPECT_EQ(CountHits(cache, dense), dense.size());
  EXPECT_EQ(CountHits(cache, {1, 3, capacity + 1, 16 * capacity}), 0u);
  EXPECT_LE(cache.charged_bytes(), budget);
  const uint64_t far = 1000 * capacity;
  cache.Insert(far, VectorOf(far).data());
  std::vector<uint64_t> all = dense;
  all.push_back(far);
  EXPECT_EQ(CountHits(cache, all), all.size());
  EXPECT_LE(cache.charged_bytes(), budget);
  // Evictions after the move: the budget still holds and what is held is right (CountHits).
  for (uint64_t id = 1; id < 4 * capacity; id += 2) {
    cache.Insert(far + id, VectorOf(far + id).data());
    ASSERT_LE(cache.charged_bytes(), budget) << "after id " << far + id;
  }
  EXPECT_GT(CountHits(cache, {far + 4 * capacity - 1}), 0u);
}

// A capacity just over one chunk: the second chunk holds only what the budget leaves.
TEST(VectorCacheTest, ChargedBytesStayWithinABudgetOfSeveralChunks) {
  constexpr size_t kWide = 256;
  VectorCache cache(kWide);
  const size_t budget = 1536 * 1024;
  cache.SetBudget(budget);
  std::vector<float> v(kWide);
  for (uint64_t id = 0; id < 3000; ++id) {
    v[0] = static_cast<float>(id);
    cache.Insert(id, v.data());
    ASSERT_LE(cache.charged_bytes(), budget) << "after " << id + 1 << " inserts";
  }
  std::vector<uint64_t> ids(3000);
  for (uint64_t id = 0; id < 3000; ++id) ids[id] = id;
  size_t held = 0;
  std::vector<size_t> missing;
  cache.LookupBatch(
      ids,
      [&](size_t i, const float* got) {
        ++held;
        EXPECT_EQ(got[0], static_cast<float>(ids[i]));
      },
      &missing);
  EXPECT_GT(held, VectorCache::kChunkSlots);  // more than one chunk in use
}

TEST(VectorCacheTest, ZeroBudgetCachesNothingAndSetBudgetDropsEverything) {
  VectorCache cache(kDim);
  cache.Insert(1, VectorOf(1).data());  // before any budget: ignored
  cache.SetBudget(0);
  cache.Insert(1, VectorOf(1).data());
  EXPECT_EQ(CountHits(cache, {1}), 0u);
  cache.SetBudget(1 << 16);
  cache.Insert(1, VectorOf(1).data());
  EXPECT_EQ(CountHits(cache, {1}), 1u);
  cache.SetBudget(1 << 16);
  EXPECT_EQ(CountHits(cache, {1}), 0u);
}

TEST(VectorCacheTest, ConcurrentLookupsAndInsertsStayConsistent) {
  VectorCache cache(kDim);
  cache.SetBudget(64 * 1024);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, t] {
      std::mt19937_64 rng(t);
      for (int i = 0; i < 20000; ++i) {
        const uint64_t id = rng() % 5000;
        if (i % 3 == 0) {
          cache.Insert(id, VectorOf(id).data());
        } else {
          CountHits(cache, {id, id + 1});
        }
      }
    });
  }
  for (auto& th : threads) th.join();
}

}  // namespace
}  // namespace shoal::storage

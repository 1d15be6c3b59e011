// SemanticCache under concurrent callers: lookups run in parallel (a rendezvous inside two
// lookups at once), and threads doing Lookup / Store / Invalidate leave every counter equal to
// a per-thread reference model (no lost or double counts).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/test_seed.h"
#include "cache/cache_catalog.h"
#include "cache/semantic_cache.h"

namespace shoal::cache {
namespace {

// A clock whose first `waiters` calls after Arm() wait (up to 20 s) until all of them are
// inside NowMicros at once; one that gives up breaks the rendezvous for good. SemanticCache reads
// the clock under its lock, so a rendezvous of two lookups proves they held the lock together.
class RendezvousClock final : public Clock {
 public:
  void Arm(int waiters) {
    absl::MutexLock lock(&mu_);
    waiters_ = waiters;
    arrived_ = 0;
    broken_ = false;
  }
  bool Met() const {
    absl::MutexLock lock(&mu_);
    return arrived_ >= waiters_ && !broken_;
  }
  int64_t NowMicros() const override {
    absl::MutexLock lock(&mu_);
    if (arrived_ >= waiters_) return kNow;
    ++arrived_;
    auto all_in = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return arrived_ >= waiters_; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&all_in), absl::Seconds(20))) broken_ = true;
    return kNow;
  }

 private:
  static constexpr int64_t kNow = 1'700'000'000'000'000;
  mutable absl::Mutex mu_;
  mutable int waiters_ ABSL_GUARDED_BY(mu_) = 0;
  mutable int arrived_ ABSL_GUARDED_BY(mu_) = 0;
  mutable bool broken_ ABSL_GUARDED_BY(mu_) = false;
};

// A clock whose calls after Close() wait until Open() (or, giving up, 10 s).
class GateClock final : public Clock {
 public:
  void Close() {
    absl::MutexLock lock(&mu_);
    open_ = false;
  }
  void Open() {
    absl::MutexLock lock(&mu_);
    open_ = true;
  }
  // Waits (up to 10 s) until a caller is held at the gate.
  bool AwaitHeld() const {
    absl::MutexLock lock(&mu_);
    auto held = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return held_ > 0; };
    return mu_.AwaitWithTimeout(absl::Condition(&held), absl::Seconds(10));
  }
  bool gave_up() const {
    absl::MutexLock lock(&mu_);
    return gave_up_;
  }
  int64_t NowMicros() const override {
    absl::MutexLock lock(&mu_);
    ++held_;
    auto open = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return open_; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&open), absl::Seconds(10))) gave_up_ = true;
    --held_;
    return 1'700'000'000'000'000;
  }

 private:
  mutable absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = true;
  mutable int held_ ABSL_GUARDED_BY(mu_) = 0;
  mutable bool gave_up_ ABSL_GUARDED_BY(mu_) = false;
};

class SemanticCacheConcurrencyTest : public ::testing::Test {
 protected:
  void Open(const Clock* clock) {
    std::string tmpl = ::testing::TempDir() + "semantic_cache_conc_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto store = storage::RecordStore::Open(dir_, {});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    auto catalog = CacheCatalog::Open(store_.get(), clock);
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    catalog_ = *std::move(catalog);
    ASSERT_TRUE(catalog_->Create({.name = "c", .dimension = kDim, .metric = Metric::kCosine}).ok());
    cache_ = *catalog_->Find("c");
    // Only an identical vector (or the exact prompt) hits; no learning.
    ASSERT_TRUE(cache_->SetPolicy("", {.threshold = 0.9999, .target_false_hit_rate = 0}).ok());
  }
  void TearDown() override {
    cache_.reset();
    catalog_.reset();
    store_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  static constexpr uint32_t kDim = 16;
  std::string dir_;
  std::unique_ptr<storage::RecordStore> store_;
  std::unique_ptr<CacheCatalog> catalog_;
  std::shared_ptr<SemanticCache> cache_;
};

TEST_F(SemanticCacheConcurrencyTest, LookupsHoldTheLockTogether) {
  RendezvousClock clock;
  Open(&clock);
  std::vector<float> v(kDim, 0);
  v[0] = 1;
  CacheLookupRequest q{.partition = {.model = "m"}, .embedding = v};
  ASSERT_TRUE(cache_->Store({.lookup = q, .response = "r"}, /*sync=*/false).ok());
  ASSERT_TRUE(cache_->Lookup(q).ok());  // the category exists before the race
  v[0] = 0;
  v[1] = 1;  // a miss: no hit bookkeeping
  CacheLookupRequest miss{.partition = {.model = "m"}, .embedding = v};
  clock.Arm(2);
  std::thread a([&] { EXPECT_TRUE(cache_->Lookup(miss).ok()); });
  std::thread b([&] { EXPECT_TRUE(cache_->Lookup(miss).ok()); });
  a.join();
  b.join();
  EXPECT_TRUE(clock.Met()) << "two lookups never ran under the cache's lock at once";
}

TEST_F(SemanticCacheConcurrencyTest, StatsAndInfoDoNotWaitForALookup) {
  GateClock clock;
  Open(&clock);
  std::vector<float> v(kDim, 0);
  v[0] = 1;
  CacheLookupRequest q{.partition = {.model = "m"}, .embedding = v};
  ASSERT_TRUE(cache_->Store({.lookup = q, .response = "r"}, /*sync=*/false).ok());
  ASSERT_TRUE(cache_->Lookup(q).ok());  // the category exists: lookups take the reader lock
  clock.Close();
  std::thread lookup([&] { EXPECT_TRUE(cache_->Lookup(q).ok()); });
  ASSERT_TRUE(clock.AwaitHeld());  // the lookup holds the reader lock, stopped in the clock
  const CacheStats stats = cache_->Stats();
  const CacheInfo info = cache_->Info();
  const bool lookup_still_held = !clock.gave_up();
  clock.Open();
  lookup.join();
  EXPECT_TRUE(lookup_still_held) << "Stats or Info waited for the lookup's reader lock";
  EXPECT_EQ(stats.total.lookups, 1u);
  EXPECT_EQ(info.entries, 1u);
}

// Per thread: its own tenant, keys 0..kKeys-1 (a random unit vector and a prompt each).
struct ThreadModel {
  std::map<int, int> stored;  // key -> 0 absent, 1 stored without its prompt, 2 with it
  CacheCounters expect;
  uint64_t present = 0;
};

TEST_F(SemanticCacheConcurrencyTest, CountersMatchAReferenceModelUnderConcurrency) {
  FakeClock clock;
  Open(&clock);
  constexpr int kThreads = 6;
  constexpr int kKeys = 40;
  constexpr int kOps = 1500;
  const uint64_t seed = base::TestSeed();
  std::vector<std::vector<std::vector<float>>> vectors(kThreads);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  for (auto& keys : vectors) {
    for (int k = 0; k < kKeys; ++k) {
      std::vector<float> v(kDim);
      for (float& x : v) x = normal(rng);
      keys.push_back(v);
    }
  }
  std::vector<ThreadModel> models(kThreads);
  std::atomic<bool> stop{false};
  std::thread stats_reader([&] {
    while (!stop.load()) (void)cache_->Stats();
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 r(seed + 1 + t);
      ThreadModel& m = models[t];
      const std::string tenant = absl::StrCat("t", t);
      for (int op = 0; op < kOps; ++op) {
        const int key = static_cast<int>(r() % kKeys);
        CacheLookupRequest q{.partition = {.tenant = tenant, .model = "m"},
                             .embedding = vectors[t][key]};
        if (r() % 2) q.prompt = absl::StrCat("prompt ", key);
        const int kind = static_cast<int>(r() % 100);
        if (kind < 60) {
          auto got = cache_->Lookup(q);
          ASSERT_TRUE(got.ok()) << got.status();
          const bool want = m.stored[key] != 0;
          ASSERT_EQ(got->hit, want) << "thread " << t << " op " << op << " key " << key;
          if (want) {
            ASSERT_EQ(got->response, absl::StrCat(tenant, ":", key));
          }
          ++m.expect.lookups;
          ++(want ? m.expect.hits : m.expect.misses);
          if (m.stored[key] == 2 && !q.prompt.empty()) ++m.expect.exact_hits;
        } else if (kind < 95) {
          if (m.stored[key] != 0) continue;  // keep one entry per key (no replacements)
          auto id = cache_->Store({.lookup = q, .response = absl::StrCat(tenant, ":", key)},
                                  /*sync=*/false);
          ASSERT_TRUE(id.ok()) << id.status();
          ASSERT_NE(*id, 0u);
          m.stored[key] = q.prompt.empty() ? 1 : 2;
          ++m.expect.stores;
          ++m.present;
        } else {
          auto n = cache_->Invalidate({.tenant = tenant, .dry_run = false});
          ASSERT_TRUE(n.ok()) << n.status();
          ASSERT_EQ(*n, m.present);
          m.expect.invalidated += m.present;
          m.present = 0;
          m.stored.clear();
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  stop.store(true);
  stats_reader.join();
  CacheStats stats = cache_->Stats();
  CacheCounters want;
  for (const ThreadModel& m : models) {
    want.lookups += m.expect.lookups;
    want.hits += m.expect.hits;
    want.exact_hits += m.expect.exact_hits;
    want.misses += m.expect.misses;
    want.stores += m.expect.stores;
    want.invalidated += m.expect.invalidated;
    want.entries += m.present;
  }
  EXPECT_EQ(stats.total.lookups, want.lookups);
  EXPECT_EQ(stats.total.hits, want.hits);
  EXPECT_EQ(stats.total.exact_hits, want.exact_hits);
  EXPECT_EQ(stats.total.misses, want.misses);
  EXPECT_EQ(stats.total.stores, want.stores);
  EXPECT_EQ(stats.total.invalidated, want.invalidated);
  EXPECT_EQ(stats.total.entries, want.entries);
  uint64_t histogram = 0;
  for (uint64_t c : stats.latency_counts) histogram += c;
  EXPECT_EQ(histogram, want.lookups);
  // Per partition (= per thread's tenant), where the thread saw a shard at all.
  ASSERT_EQ(stats.partitions.size(), static_cast<size_t>(kThreads));
  for (const CachePartitionStats& p : stats.partitions) {
    const int t = std::stoi(p.partition.tenant.substr(1));
    const ThreadModel& m = models[t];
    EXPECT_EQ(p.counters.stores, m.expect.stores) << p.partition.tenant;
    EXPECT_EQ(p.counters.hits, m.expect.hits) << p.partition.tenant;
    EXPECT_EQ(p.counters.entries, m.present) << p.partition.tenant;
    EXPECT_EQ(p.counters.invalidated, m.expect.invalidated) << p.partition.tenant;
  }
}

}  // namespace
}  // namespace shoal::cache

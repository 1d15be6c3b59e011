// TenantStats: the token bucket's refusals, and the latency percentiles a tenant's searches
// report (within a bucket's width of the true ones, following the recent searches, in a few
// hundred bytes a tenant).
#include "db/tenant_stats.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"

namespace shoal::db {
namespace {

TEST(TenantStatsTest, PercentilesAreWithinABucketOfTheLatencies) {
  TenantStats stats;
  std::mt19937_64 rng(base::TestSeed());
  std::vector<double> us;
  std::uniform_real_distribution<double> any(1, 2000);
  for (int i = 0; i < 3000; ++i) us.push_back(any(rng));
  for (double u : us) stats.RecordSearch(u, 2);
  std::sort(us.begin(), us.end());
  TenantInfo info;
  stats.Fill(&info);
  EXPECT_EQ(info.searches, 3000u);
  EXPECT_EQ(info.buckets_scanned, 6000u);
  // A bucket is 2^(1/8) wide: its middle is within 4.5% of every latency in it.
  EXPECT_NEAR(info.search_p50_us / us[1500], 1.0, 0.045) << info.search_p50_us;
  EXPECT_NEAR(info.search_p99_us / us[2970], 1.0, 0.045) << info.search_p99_us;
}

TEST(TenantStatsTest, PercentilesFollowTheRecentSearches) {
  TenantStats stats;
  for (size_t i = 0; i < 3 * TenantStats::kWindow; ++i) stats.RecordSearch(100, 1);
  for (size_t i = 0; i < 3 * TenantStats::kWindow; ++i) stats.RecordSearch(1000, 1);
  TenantInfo info;
  stats.Fill(&info);
  EXPECT_NEAR(info.search_p50_us / 1000, 1.0, 0.045);
  EXPECT_EQ(info.searches, 6 * TenantStats::kWindow);
}

TEST(TenantStatsTest, AnIdleTenantKeepsNoLatenciesABusyOneAFewHundredBytes) {
  TenantStats stats;
  EXPECT_EQ(stats.HeapBytes(), 0u);
  TenantInfo info;
  stats.Fill(&info);
  EXPECT_EQ(info.search_p50_us, 0);
  for (size_t i = 0; i < 2 * TenantStats::kWindow; ++i) stats.RecordSearch(10.0 + i % 500, 1);
  // (A window of the last kWindow latencies as floats took 16 KiB.)
  EXPECT_LE(stats.HeapBytes(), 544u);
  // The rate limit's state is made then too: an idle tenant's stats are its counters, a lock
  // and a pointer (were 72 bytes, the token bucket's 32 among them).
  EXPECT_LE(sizeof(TenantStats), 32u);
  EXPECT_GT(stats.HeapBytes(), 0u);
}

TEST(TenantStatsTest, BucketsCoverOneMicrosecondToTheLast) {
  EXPECT_EQ(TenantStats::BucketOf(0), 0);
  EXPECT_EQ(TenantStats::BucketOf(std::nan("")), 0);
  EXPECT_EQ(TenantStats::BucketOf(1e12), TenantStats::kBuckets - 1);
  for (double us : {1.5, 37.0, 812.0, 65000.0}) {
    EXPECT_NEAR(TenantStats::MicrosOf(TenantStats::BucketOf(us)) / us, 1.0, 0.045) << us;
  }
}

TEST(TenantStatsTest, TheTokenBucketRefusesPastItsBurst) {
  TenantStats stats;
  const absl::Time now = absl::Now();
  EXPECT_TRUE(stats.TakeSearchToken(2, now));
  EXPECT_TRUE(stats.TakeSearchToken(2, now));
  EXPECT_FALSE(stats.TakeSearchToken(2, now));
  EXPECT_TRUE(stats.TakeSearchToken(2, now + absl::Milliseconds(600)));
  EXPECT_TRUE(stats.TakeSearchToken(0, now));  // unlimited
}

}  // namespace
}  // namespace shoal::db

// Tests of `shoal_bench cache`'s workload: the paper mix's ceilings fall in the published
// ranges, the legacy mix stays reachable, the stream is seeded, and the ceilings count as
// documented (exact vs semantic, TTL, answer versions).
#include "bench/cache_workload.h"

#include <cmath>

#include "base/test_seed.h"
#include "gtest/gtest.h"

namespace shoal::bench {
namespace {

double Dot(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += double{a[i]} * b[i];
  return d;
}

// The category-aware caching paper's hit rates (research digest §4): 40–60% for repetitive
// categories (code), 5–15% for rare or volatile ones (chat, stocks). Both the exact-match cache
// and a perfect semantic cache must land inside them on the paper mix.
TEST(CacheWorkloadTest, PaperMixCeilingsFallInThePublishedRanges) {
  const CacheWorkload w = MakeCacheWorkload({.seed = base::TestSeed(), .mix = CacheMix::kPaper});
  const std::vector<CacheCeiling> c = StreamCeilings(w);
  ASSERT_EQ(c.size(), 3u);
  ASSERT_STREQ(w.categories[0].name, "code");
  EXPECT_GE(c[0].exact, 0.40);
  EXPECT_LE(c[0].semantic, 0.60);
  for (int k : {1, 2}) {
    EXPECT_GE(c[k].exact, 0.05) << w.categories[k].name;
    EXPECT_LE(c[k].semantic, 0.15) << w.categories[k].name;
  }
  for (const CacheCeiling& x : c) EXPECT_LE(x.exact, x.semantic);
}

TEST(CacheWorkloadTest, LegacyMixIsReachableAndRepeatsMostly) {
  const CacheWorkload w = MakeCacheWorkload({.seed = base::TestSeed(), .mix = CacheMix::kLegacy});
  EXPECT_EQ(w.intents, (std::vector<int>{200, 200, 200}));
  const std::vector<CacheCeiling> c = StreamCeilings(w);
  EXPECT_GE(c[0].exact, 0.7);  // code: exact repeats carry most of the traffic
  EXPECT_GE(c[1].exact, 0.7);  // chat too, against the paper's 5–15%
}

TEST(CacheWorkloadTest, SeededUnitEmbeddingsWithParaphrasesNearTheirIntent) {
  const uint64_t seed = base::TestSeed();
  const CacheWorkloadOptions o{.seed = seed, .queries = 3000, .mix = CacheMix::kPaper};
  const CacheWorkload a = MakeCacheWorkload(o), b = MakeCacheWorkload(o);
  ASSERT_EQ(a.queries.size(), 3000u);
  for (size_t i = 0; i < a.queries.size(); ++i) {
    ASSERT_EQ(a.queries[i].intent, b.queries[i].intent);
    ASSERT_EQ(a.embeddings[i], b.embeddings[i]);
    EXPECT_NEAR(Dot(a.embeddings[i], a.embeddings[i]), 1.0, 1e-4);
  }
  // Two phrasings of one code intent: cosine about 0.95² (each at 0.95 to the intent).
  size_t pairs = 0;
  for (size_t i = 0; i < a.queries.size() && pairs < 20; ++i) {
    for (size_t j = i + 1; j < a.queries.size() && pairs < 20; ++j) {
      const CacheQuery &x = a.queries[i], &y = a.queries[j];
      if (x.category != 0 || y.category != 0 || x.intent != y.intent) continue;
      const double cos = Dot(a.embeddings[i], a.embeddings[j]);
      EXPECT_NEAR(cos, x.phrasing == y.phrasing ? 1.0 : 0.9025, 0.06);
      ++pairs;
    }
  }
  EXPECT_GT(pairs, 0u);
}

// A hand-made stream: the exact cache keeps an entry for the TTL from its store; the oracle
// keeps the intent's entry for the TTL from its store and hits any phrasing of it at its
// version; the semantic ceiling counts an intent asked at the current version within the TTL.
TEST(CacheWorkloadTest, CeilingsCountTtlAndVersions) {
  CacheWorkload w;
  w.categories = {{"s", 0, 0, 0.9, 0, /*period_s=*/100, 1.0, /*ttl_s=*/30, 0, 0}};
  w.intents = {10};
  w.queries = {
      {0, 1, 0, 0},    // miss; exact stores (1,0) at 0, the oracle intent 1 at 0
      {0, 1, 0, 10},   // every one hits
      {0, 1, 1, 20},   // oracle and semantic hit (another phrasing); exact stores (1,1) at 20
      {0, 1, 1, 45},   // exact hit (stored at 20, TTL 30); semantic too (asked at 20); the
                       // oracle's entry (stored at 0) expired: it stores again at 45
      {0, 1, 1, 80},   // expired for all: miss; exact stores (1,1) at 80, the oracle too
      {0, 1, 1, 105},  // within TTL but the answer changed (version 1): miss for all
      {0, 2, 0, 106},  // another intent, never asked: miss for all
  };
  const std::vector<CacheCeiling> c = StreamCeilings(w);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].queries, 7u);
  EXPECT_DOUBLE_EQ(c[0].exact, 2.0 / 7);
  EXPECT_DOUBLE_EQ(c[0].oracle, 2.0 / 7);
  EXPECT_DOUBLE_EQ(c[0].semantic, 3.0 / 7);
}

// The oracle hits exactly the live intent at its version, so it lies between the exact cache
// (any exact hit's intent was stored by the oracle too, unless its own entry expired first) and
// the semantic bound, on both mixes.
TEST(CacheWorkloadTest, OracleLiesUnderTheSemanticBound) {
  for (CacheMix mix : {CacheMix::kPaper, CacheMix::kLegacy}) {
    const CacheWorkload w = MakeCacheWorkload({.seed = base::TestSeed(), .mix = mix});
    for (const CacheCeiling& x : StreamCeilings(w)) {
      EXPECT_LE(x.oracle, x.semantic);
      EXPECT_GT(x.oracle, 0.9 * x.exact);
    }
  }
}

}  // namespace
}  // namespace shoal::bench

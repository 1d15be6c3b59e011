#include "cache/threshold_learning.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "cache/cache_policy.h"

namespace shoal::cache {
namespace {

CachePolicy Learning(double delta) {
  return Resolve({.threshold = 0.85, .target_false_hit_rate = delta, .max_threshold = 0.99});
}

// Feeds `reports` verdicts, one in `wrong_every` wrong, at a category hit rate `hit_rate`.
CategoryLearning Feed(const CachePolicy& p, int reports, int wrong_every, double hit_rate) {
  CategoryLearning l;
  for (int i = 1; i <= reports; ++i) LearnFromReport(p, i % wrong_every == 0, hit_rate, &l);
  return l;
}

TEST(ThresholdLearningTest, DeltaBoundsFalseHitsPerLookupNotPerHit) {
  const CachePolicy p = Learning(0.02);
  // 5% of hits wrong at a 30% hit rate: 1.5% of lookups are false hits, within delta.
  CategoryLearning within = Feed(p, 400, 20, 0.3);
  EXPECT_DOUBLE_EQ(within.offset, 0.0);
  // The same share of wrong hits at a 60% hit rate: 3% of lookups, over delta: tighten.
  CategoryLearning over = Feed(p, 400, 20, 0.6);
  EXPECT_GT(over.offset, 0.05);
}

TEST(ThresholdLearningTest, LoosensAgainWhenFalseHitsPerLookupFallBelowHalfDelta) {
  const CachePolicy p = Learning(0.02);
  CategoryLearning l = Feed(p, 200, 5, 0.5);  // 10% of lookups wrong: tightens to the cap
  EXPECT_NEAR(l.offset, 0.14, 1e-9);
  for (int i = 0; i < 400; ++i) LearnFromReport(p, false, 0.5, &l);
  EXPECT_DOUBLE_EQ(l.offset, 0.0);
}

TEST(ThresholdLearningTest, OffLeavesNoOffset) {
  CategoryLearning l = Feed(Learning(0), 100, 1, 1.0);
  EXPECT_DOUBLE_EQ(l.offset, 0.0);
}

TEST(ThresholdLearningTest, EntryFloorLiftsOnlyThatEntry) {
  const CachePolicy p = Learning(0.02);
  EXPECT_FLOAT_EQ(EntryThreshold(p, 0, 0, -INFINITY), 0.85f);
  EXPECT_GT(EntryThreshold(p, 0, 0, 0.9f), 0.9f);
  EXPECT_FLOAT_EQ(EntryThreshold(p, 0, 0.5, -INFINITY), 0.99f);  // capped at max_threshold
}

TEST(ThresholdLearningTest, MarginAwareBandUsesOnlyTheMeasuredMargin) {
  CachePolicy p = Learning(0.02);
  p.min_threshold = 0.75;  // a band of 0.10 at full load
  p.ttl_seconds = 100;
  p.max_ttl_seconds = 300;
  EXPECT_DOUBLE_EQ(BandShare(p, CategoryLearning{}), 0.0);  // no reports: no measured margin
  // 2% of hits wrong at a 50% hit rate: r ~ 1% of lookups, about half of delta: about half
  // the band (the running w is read 25 reports after a wrong one).
  const CategoryLearning half = Feed(p, 425, 50, 0.5);
  const double g = BandShare(p, half);
  EXPECT_DOUBLE_EQ(g, (0.02 - half.rate) / 0.02);
  EXPECT_GT(g, 0.3);
  EXPECT_LT(g, 0.7);
  EXPECT_NEAR(EntryThreshold(p, 1.0, 0, -INFINITY, g), 0.85 - g * 0.10, 1e-6);
  EXPECT_EQ(TtlMicrosUnderLoad(p, 1.0, g), static_cast<int64_t>((100 + g * 200) * 1e6));
  EXPECT_FLOAT_EQ(EntryThreshold(p, 0.5, 0, -INFINITY, g), 0.85f);  // not overloaded
  // At or over delta: none of the band.
  const CategoryLearning over = Feed(p, 400, 20, 0.5);
  EXPECT_DOUBLE_EQ(BandShare(p, over), 0.0);
  EXPECT_FLOAT_EQ(EntryThreshold(p, 1.0, over.offset, -INFINITY, BandShare(p, over)),
                  static_cast<float>(std::min(0.85 + over.offset, 0.99)));
  // No false hits at all: the whole band. Learning off: the band as set.
  EXPECT_DOUBLE_EQ(BandShare(p, Feed(p, 100, 1000, 0.5)), 1.0);
  EXPECT_DOUBLE_EQ(BandShare(Learning(0), CategoryLearning{}), 1.0);
}

}  // namespace
}  // namespace shoal::cache

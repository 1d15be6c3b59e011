#include "cache/cache_policy.h"

#include <gtest/gtest.h>

namespace shoal::cache {
namespace {

TEST(CachePolicyTest, BandIsLinearBetweenLoadHighAndOne) {
  CachePolicy p = Resolve({.threshold = 0.9,
                           .ttl_seconds = 100,
                           .min_threshold = 0.7,
                           .max_ttl_seconds = 300,
                           .load_high = 0.6});
  EXPECT_DOUBLE_EQ(ThresholdUnderLoad(p, 0.0), 0.9);
  EXPECT_DOUBLE_EQ(ThresholdUnderLoad(p, 0.6), 0.9);
  EXPECT_NEAR(ThresholdUnderLoad(p, 0.8), 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(ThresholdUnderLoad(p, 1.0), 0.7);
  EXPECT_DOUBLE_EQ(ThresholdUnderLoad(p, 7.0), 0.7);  // clamped
  EXPECT_EQ(TtlMicrosUnderLoad(p, 0.5), 100'000'000);
  EXPECT_EQ(TtlMicrosUnderLoad(p, 0.8), 200'000'000);
  EXPECT_EQ(TtlMicrosUnderLoad(p, 1.0), 300'000'000);
  EXPECT_EQ(HardTtlMicros(p), 300'000'000);
}

TEST(CachePolicyTest, DefaultsSwitchTheBandOff) {
  CachePolicy p = Resolve({.threshold = 0.85, .ttl_seconds = 10});
  EXPECT_DOUBLE_EQ(p.min_threshold, 0.85);
  EXPECT_EQ(p.max_ttl_seconds, 10);
  EXPECT_DOUBLE_EQ(p.max_threshold, 1.0);
  EXPECT_DOUBLE_EQ(ThresholdUnderLoad(p, 1.0), 0.85);
  EXPECT_EQ(TtlMicrosUnderLoad(p, 1.0), 10'000'000);
  EXPECT_EQ(TtlMicrosUnderLoad(Resolve({}), 1.0), 0);  // no expiry stays no expiry
}

TEST(CachePolicyTest, EncodingRoundTrips) {
  CachePolicy p{.enabled = false,
                .threshold = 0.91,
                .ttl_seconds = 7,
                .refresh_ttl_on_hit = true,
                .max_entries = 5,
                .max_bytes = 6,
                .eviction = CacheEviction::kLfu,
                .min_threshold = 0.5,
                .max_ttl_seconds = 8,
                .load_high = 0.3,
                .target_false_hit_rate = 0.05,
                .max_threshold = 0.99};
  auto q = DecodePolicy(EncodePolicy(p), "x");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(EncodePolicy(*q), EncodePolicy(p));
  EXPECT_EQ(q->eviction, CacheEviction::kLfu);
  EXPECT_EQ(DecodePolicy("junk", "x").status().code(), absl::StatusCode::kDataLoss);
}

TEST(CachePolicyTest, RejectsOutOfRangeValuesByName) {
  auto field_of = [](const CachePolicy& p) {
    return std::string(ValidatePolicy(p, "policy").message());
  };
  EXPECT_TRUE(ValidatePolicy({}, "policy").ok());
  EXPECT_NE(field_of({.threshold = -0.1}).find("policy.threshold"), std::string::npos);
  EXPECT_NE(field_of({.threshold = 0.5, .max_threshold = 0.4}).find("policy.max_threshold"),
            std::string::npos);
  EXPECT_NE(field_of({.ttl_seconds = -1}).find("policy.ttl_seconds"), std::string::npos);
  EXPECT_NE(field_of({.max_ttl_seconds = 5}).find("policy.max_ttl_seconds"), std::string::npos);
  EXPECT_NE(field_of({.load_high = 1.0}).find("policy.load_high"), std::string::npos);
  EXPECT_NE(field_of({.target_false_hit_rate = 1.0}).find("policy.target_false_hit_rate"),
            std::string::npos);
  EXPECT_TRUE(ValidateCategory("", "c").ok());
  EXPECT_TRUE(ValidateCategory("code-2", "c").ok());
  EXPECT_FALSE(ValidateCategory("a/b", "c").ok());
}

}  // namespace
}  // namespace shoal::cache

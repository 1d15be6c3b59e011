#include "rpc/rate_limiter.h"

#include <gtest/gtest.h>

namespace shoal::rpc {
namespace {

TEST(RateLimiterTest, AllowsTheBurstThenRefillsAtTheRate) {
  RateLimiter limiter(/*requests_per_second=*/10, /*burst=*/3);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.Admit("a", t0).ok()) << i;
  absl::Status refused = limiter.Admit("a", t0);
  EXPECT_TRUE(absl::IsResourceExhausted(refused));
  EXPECT_NE(refused.message().find("rate limit"), std::string::npos) << refused;
  // Another key has its own bucket.
  EXPECT_TRUE(limiter.Admit("b", t0).ok());
  // 100 ms at 10/s refills one token.
  EXPECT_TRUE(limiter.Admit("a", t0 + absl::Milliseconds(100)).ok());
  EXPECT_FALSE(limiter.Admit("a", t0 + absl::Milliseconds(100)).ok());
}

TEST(RateLimiterTest, ZeroRateIsOff) {
  RateLimiter limiter(0, 0);
  EXPECT_FALSE(limiter.enabled());
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(limiter.Admit("a", absl::Now()).ok());
}

}  // namespace
}  // namespace shoal::rpc

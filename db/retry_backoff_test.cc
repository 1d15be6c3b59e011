#include "db/retry_backoff.h"

#include "gtest/gtest.h"

namespace shoal::db {
namespace {

TEST(RetryBackoffTest, SuccessNeedsNoWait) {
  RetryBackoff b;
  EXPECT_EQ(b.OnRound(absl::OkStatus()), absl::ZeroDuration());
  EXPECT_EQ(b.failures(), 0);
}

TEST(RetryBackoffTest, WaitDoublesAfterEachFailureUpToTheCap) {
  RetryBackoff b;
  const absl::Status eio = absl::InternalError("EIO");
  EXPECT_EQ(b.OnRound(eio), absl::Milliseconds(200));
  EXPECT_EQ(b.OnRound(eio), absl::Milliseconds(400));
  EXPECT_EQ(b.OnRound(eio), absl::Milliseconds(800));
  EXPECT_EQ(b.OnRound(eio), absl::Milliseconds(1600));
  EXPECT_EQ(b.OnRound(eio), absl::Milliseconds(3200));
  EXPECT_EQ(b.OnRound(eio), absl::Milliseconds(3200));
  EXPECT_EQ(b.failures(), 6);
}

TEST(RetryBackoffTest, SuccessResetsTheWait) {
  RetryBackoff b;
  const absl::Status enospc = absl::ResourceExhaustedError("ENOSPC");
  b.OnRound(enospc);
  b.OnRound(enospc);
  EXPECT_EQ(b.OnRound(absl::OkStatus()), absl::ZeroDuration());
  EXPECT_EQ(b.OnRound(enospc), absl::Milliseconds(200));
}

}  // namespace
}  // namespace shoal::db

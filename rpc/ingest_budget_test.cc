#include "rpc/ingest_budget.h"

#include <gtest/gtest.h>

namespace shoal::rpc {
namespace {

TEST(IngestBudgetTest, AdmitsUpToTheLimitAndAlwaysOneBatchWhenIdle) {
  IngestBudget budget(100);
  EXPECT_TRUE(budget.TryAcquire(60));
  EXPECT_TRUE(budget.TryAcquire(40));
  EXPECT_FALSE(budget.TryAcquire(1));  // over the limit: back off
  EXPECT_EQ(budget.inflight(), 100u);
  budget.Release(60);
  EXPECT_TRUE(budget.TryAcquire(50));
  budget.Release(40);
  budget.Release(50);
  EXPECT_EQ(budget.inflight(), 0u);
  // Larger than the whole budget, but nothing else is in flight: admitted.
  EXPECT_TRUE(budget.TryAcquire(1000));
  EXPECT_FALSE(budget.TryAcquire(1));
  budget.Release(1000);
}

}  // namespace
}  // namespace shoal::rpc

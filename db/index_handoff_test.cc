#include "db/index_handoff.h"

#include <optional>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace shoal::db {
namespace {

IndexHandoff::Batch MakeBatch(uint64_t first, size_t n, size_t dim = 2) {
  IndexHandoff::Batch b;
  for (size_t i = 0; i < n; ++i) b.ids.push_back(first + i);
  b.vectors.assign(n * dim, 1.0f);
  return b;
}

TEST(IndexHandoffTest, StepTakesTheLowestBatchesAndItsWatermarkStopsAtTheNext) {
  IndexHandoff h("c");
  h.AddPending(MakeBatch(10, 4));
  h.AddPending(MakeBatch(0, 4));
  h.AddPending(MakeBatch(20, 4));
  IndexHandoff::Step step = h.TakeStep(/*batch=*/4, /*max_step=*/4);
  ASSERT_EQ(step.batches.size(), 1u);
  EXPECT_EQ(step.batches[0]->ids.front(), 0u);
  EXPECT_EQ(step.watermark, 10u);
  h.FinishStep(step);
  step = h.TakeStep(/*batch=*/100, /*max_step=*/100);
  ASSERT_EQ(step.batches.size(), 2u);
  EXPECT_EQ(step.watermark, 24u);  // past the last id taken
}

TEST(IndexHandoffTest, StepTakesHalfTheBacklogOrAllOfItWhileAFlushWaits) {
  IndexHandoff h("c");
  for (uint64_t first = 0; first < 100; first += 10) h.AddPending(MakeBatch(first, 10));
  IndexHandoff::Step step = h.TakeStep(/*batch=*/10, /*max_step=*/1000);
  EXPECT_EQ(step.batches.size(), 5u);
  EXPECT_EQ(step.watermark, 50u);
  h.FinishStep(step);
  for (uint64_t first = 100; first < 150; first += 10) h.AddPending(MakeBatch(first, 10));
  h.AddFlushRequest(/*sweep_all=*/false);
  step = h.TakeStep(/*batch=*/10, /*max_step=*/1000);
  EXPECT_EQ(step.batches.size(), 10u);  // 50..149: the flush's caller waits for all of them
  EXPECT_EQ(step.watermark, 150u);
  h.FinishStep(step);
  for (uint64_t first = 150; first < 200; first += 10) h.AddPending(MakeBatch(first, 10));
  step = h.TakeStep(/*batch=*/10, /*max_step=*/20);
  EXPECT_EQ(step.batches.size(), 2u);  // never more than max_step
}

TEST(IndexHandoffTest, WatermarkStaysBelowABatchStillCommitting) {
  IndexHandoff h("c");
  h.MarkCommitting(5);
  h.AddPending(MakeBatch(8, 2));
  IndexHandoff::Step step = h.TakeStep(10, 10);
  EXPECT_EQ(step.watermark, 5u);
  h.FinishStep(step);
  h.AddPending(MakeBatch(5, 3), /*committing_first=*/5);
  step = h.TakeStep(10, 10);
  ASSERT_EQ(step.batches.size(), 1u);
  EXPECT_EQ(step.watermark, 8u);
}

TEST(IndexHandoffTest, EmptyStepWhenNothingIsPending) {
  IndexHandoff h("c");
  const IndexHandoff::Step step = h.TakeStep(10, 10);
  EXPECT_TRUE(step.batches.empty());
  EXPECT_EQ(step.watermark, UINT64_MAX);
}

TEST(IndexHandoffTest, FlushReturnsTheStatusOfTheRoundThatServedIt) {
  IndexHandoff h("c");
  std::thread worker([&] {
    IndexHandoff::Round round;
    do {
      round = h.AwaitRound(1, absl::Milliseconds(10), absl::ZeroDuration());
    } while (round.flush == 0);
    h.EndRound(round.flush, absl::DataLossError("bad page"), /*done=*/false, absl::ZeroDuration());
  });
  const absl::Status s = h.RequestFlush(/*sweep_all=*/true);
  worker.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
}

// FlushIndexUpdates asks for every tombstone swept, DrainIndexUpdates does not: the round that
// serves each request says which it was asked for.
TEST(IndexHandoffTest, ARoundSaysWhetherItsFlushAskedForAFullSweep) {
  IndexHandoff h("c");
  std::vector<bool> sweep_all;
  std::thread worker([&] {
    for (int served = 0; served < 2;) {
      const IndexHandoff::Round round =
          h.AwaitRound(1, absl::Milliseconds(10), absl::ZeroDuration());
      if (round.flush == 0) continue;
      sweep_all.push_back(round.sweep_all);
      h.EndRound(round.flush, absl::OkStatus(), /*done=*/true, absl::ZeroDuration());
      ++served;
    }
  });
  EXPECT_TRUE(h.RequestFlush(/*sweep_all=*/false).ok());
  EXPECT_TRUE(h.RequestFlush(/*sweep_all=*/true).ok());
  worker.join();
  EXPECT_EQ(sweep_all, (std::vector<bool>{false, true}));
}

// A flushing caller that does the work itself (a helper) serves every flush requested so far;
// the maintenance thread starts no round meanwhile, and its round that ends later (left when the
// helper began) changes no served flush's status.
TEST(IndexHandoffTest, AHelperServesTheFlushesSoFarAndTheThreadWaitsMeanwhile) {
  IndexHandoff h("c");
  h.AddPending(MakeBatch(0, 4));
  const uint64_t first = h.AddFlushRequest(/*sweep_all=*/false);
  const IndexHandoff::Round left = h.AwaitRound(1, absl::ZeroDuration(), absl::ZeroDuration());
  EXPECT_EQ(left.flush, first);
  const uint64_t second = h.AddFlushRequest(/*sweep_all=*/true);
  const IndexHandoff::Round help = h.BeginHelping();
  EXPECT_TRUE(h.helping());
  EXPECT_EQ(help.flush, second);
  EXPECT_TRUE(help.sweep_all);
  const IndexHandoff::Round none = h.AwaitRound(1, absl::Milliseconds(1), absl::ZeroDuration());
  EXPECT_FALSE(none.writes);
  EXPECT_EQ(none.flush, 0u);
  h.EndHelping(help.flush, absl::OkStatus(), /*done=*/true);
  EXPECT_FALSE(h.helping());
  h.EndRound(left.flush, absl::DataLossError("bad page"), /*done=*/false, absl::ZeroDuration());
  for (uint64_t ticket : {first, second}) {
    const std::optional<absl::Status> s = h.AwaitFlush(ticket, absl::ZeroDuration());
    ASSERT_TRUE(s.has_value()) << ticket;
    EXPECT_TRUE(s->ok()) << *s;
  }
  // Writes still pending: the thread's next round takes them.
  EXPECT_TRUE(h.AwaitRound(1, absl::ZeroDuration(), absl::ZeroDuration()).writes);
}

TEST(IndexHandoffTest, AClaimHoldsTheThreadsRoundsBackAndServesNothing) {
  IndexHandoff h("c");
  h.AddPending(MakeBatch(0, 4));
  h.EndRound(0, absl::DataLossError("bad page"), /*done=*/false, absl::ZeroDuration());
  const uint64_t ticket = h.AddFlushRequest(/*sweep_all=*/false);
  h.BeginClaim();
  EXPECT_TRUE(h.helping());
  const IndexHandoff::Round none = h.AwaitRound(1, absl::Milliseconds(1), absl::ZeroDuration());
  EXPECT_FALSE(none.writes);
  EXPECT_EQ(none.flush, 0u);
  h.EndClaim();
  EXPECT_FALSE(h.helping());
  // The flush is still the thread's to serve, and the last error still stands.
  EXPECT_FALSE(h.AwaitFlush(ticket, absl::ZeroDuration()).has_value());
  const absl::Status s = h.AwaitBacklog(/*limit=*/4, absl::ZeroDuration());
  EXPECT_NE(s.message().find("bad page"), std::string_view::npos) << s;
  const IndexHandoff::Round round = h.AwaitRound(1, absl::ZeroDuration(), absl::ZeroDuration());
  EXPECT_TRUE(round.writes);
  EXPECT_EQ(round.flush, ticket);
}

TEST(IndexHandoffTest, CloseAnswersAWaitingFlushWithUnavailable) {
  IndexHandoff h("c");
  std::thread closer([&] {
    while (h.AwaitRound(1, absl::Milliseconds(10), absl::ZeroDuration()).flush == 0) {
    }
    h.Close();
  });
  EXPECT_EQ(h.RequestFlush(/*sweep_all=*/true).code(), absl::StatusCode::kUnavailable);
  closer.join();
}

TEST(IndexHandoffTest, BacklogWaitNamesTheLastMaintenanceError) {
  IndexHandoff h("docs");
  h.AddPending(MakeBatch(0, 8));
  EXPECT_TRUE(h.AwaitBacklog(/*limit=*/9, absl::ZeroDuration()).ok());
  h.EndRound(0, absl::ResourceExhaustedError("disk full"), false, absl::ZeroDuration());
  const absl::Status s = h.AwaitBacklog(/*limit=*/8, absl::Milliseconds(1));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("disk full"), std::string_view::npos) << s;
  EXPECT_NE(s.message().find("'docs'"), std::string_view::npos) << s;
}

TEST(IndexHandoffTest, PublicationsArriveInOrderAndEmptyOnesAreDropped) {
  IndexHandoff h("c");
  index::UpdateStats stats;
  stats.splits = 3;
  IndexHandoff::Publication a, b;
  a.watermark = 7;
  b.drained = {1, 2};
  h.Publish(a, stats);
  h.Publish(IndexHandoff::Publication{}, stats);
  h.Publish(b, stats);
  EXPECT_EQ(h.stats().splits, 3u);
  IndexHandoff::Publication p;
  ASSERT_TRUE(h.NextPublication(&p));
  EXPECT_EQ(p.watermark, 7u);
  h.DonePublishing();
  ASSERT_TRUE(h.NextPublication(&p));
  EXPECT_EQ(p.drained.size(), 2u);
  h.DonePublishing();
  h.AwaitPublished();  // returns: nothing queued or in progress
  h.Close();
  EXPECT_FALSE(h.NextPublication(&p));
}

TEST(IndexHandoffTest, ClearForgetsPendingWritesAndPublications) {
  IndexHandoff h("c");
  h.AddPending(MakeBatch(0, 3));
  IndexHandoff::Publication a;
  a.watermark = 3;
  h.Publish(a, {});
  h.Clear();
  EXPECT_TRUE(h.TakeStep(10, 10).batches.empty());
  h.AwaitPublished();  // nothing left to wait for
}

}  // namespace
}  // namespace shoal::db

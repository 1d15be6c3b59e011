// Online inserts append to postings (index/spann/update_work.cc WritePosting): after the first
// rewrite of a posting, later drains that only add entries write just the new entries' pages after
// its extent. Every vector stays findable, Verify (which decodes every posting page) is clean, a
// reopen and a power loss lose nothing acknowledged, and an append that fails (EIO on the
// posting file) leaves the old posting serving until a retry (no reopen) succeeds. Tombstoned
// entries: a few do not stop appends, and the lazy GC of DrainIndexUpdates (and background
// maintenance) leaves them until there are many. Both tiers.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <map>

#include "absl/container/flat_hash_set.h"
#include "db/fault_db_testing.h"
#include "shoal/db.h"
#include "storage/io/fault_injection.h"

namespace shoal {
namespace {

using storage::FaultOp;

class PostingAppendTest : public ::testing::TestWithParam<std::string>, protected testing::FaultDb {
 protected:
  void SetUp() override {
    Create("posting_append_test");
    ASSERT_TRUE(db_->CreateCollection({"c", testing::kClusteredDim, Metric::kL2}).ok());
    Upsert(0, 2000);
    ASSERT_TRUE(db_->BuildIndex("c", "spann:centroid_ratio=0.005,replicas=2" + GetParam()).ok());
  }
  void TearDown() override { Destroy(); }
  void Upsert(uint64_t begin, uint64_t end) { UpsertClustered(begin, end); }
  // Small drains, one after another: each posting gains a few entries per round.
  void InsertRounds(uint64_t begin, int rounds, uint64_t per_round) {
    for (int r = 0; r < rounds; ++r, begin += per_round) {
      Upsert(begin, begin + per_round);
      ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
    }
  }
  // Every key found, and nothing left unindexed.
  void ExpectEveryKeyFound() {
    FaultDb::ExpectEveryKeyFound();
    EXPECT_EQ(Info().unindexed_vectors, 0u);
  }
};

TEST_P(PostingAppendTest, SmallDrainsAppendAndEveryVectorStaysFound) {
  // The first drain after the build rewrites each posting it touches (keeping pages for
  // appends after it); the next ones append to them.
  InsertRounds(2000, 1, 100);
  const CollectionInfo first = Info();
  EXPECT_EQ(first.posting_appends, 0u);
  InsertRounds(2100, 4, 100);
  const CollectionInfo info = Info();
  EXPECT_GT(info.posting_appends, 0u);
  // An append writes the new entries' pages only: a round of appends at most half of what the
  // first drain's rewrites wrote (a rewrite of the grown postings would write more than it).
  EXPECT_LE((info.posting_bytes_written - first.posting_bytes_written) / 4,
            first.posting_bytes_written / 2);
  ExpectEveryKeyFound();
  ExpectVerifyClean();
  db_.reset();
  Open();
  ExpectEveryKeyFound();
  ExpectVerifyClean();
  InsertRounds(2500, 3, 100);  // after a reopen: a rewrite first, appends again after it
  ExpectEveryKeyFound();
  ExpectVerifyClean();
}

// A drain appends to a posting that holds a few tombstoned entries (under a quarter of it)
// instead of rewriting it to drop them; the flush's sweep then drops them, and no deleted key is
// ever returned.
TEST_P(PostingAppendTest, FewTombstonesDoNotTurnAppendsIntoRewrites) {
  InsertRounds(2000, 1, 100);  // the first drain rewrites; pages kept for appends after it
  // Every 13th old key: ~8% of each of the 10 clusters (key % 10), so every posting holds some.
  std::vector<Key> deleted;
  std::vector<uint64_t> kept;
  for (uint64_t k : keys_) (k < 2000 && k % 13 == 0 ? deleted.push_back(k) : kept.push_back(k));
  auto n = db_->Delete("c", deleted, {.sync = true});
  ASSERT_TRUE(n.ok()) << n.status();
  ASSERT_EQ(*n, deleted.size());
  keys_ = kept;
  const uint64_t appends = Info().posting_appends;
  InsertRounds(2100, 1, 100);  // one new entry or more in every cluster's postings
  const CollectionInfo info = Info();
  // Measured 9 of the 10 postings appended to; before, none (each held a tombstoned entry).
  EXPECT_GE(info.posting_appends, appends + info.postings / 2);
  EXPECT_EQ(info.tombstones, 0u);  // the flush swept them out
  ExpectEveryKeyFound();
  ExpectVerifyClean();
  std::vector<float> q;
  for (const Key& k : deleted) {
    const Record r = testing::ClusteredRecord(std::get<uint64_t>(k));
    q.insert(q.end(), r.vector.begin(), r.vector.end());
  }
  auto hits = db_->Search("c", q, {.k = 1, .max_postings = 64});
  ASSERT_TRUE(hits.ok()) << hits.status();
  for (size_t i = 0; i < deleted.size(); ++i) {
    ASSERT_FALSE((*hits)[i].empty());
    EXPECT_NE((*hits)[i][0].key, deleted[i]);
  }
}

// DrainIndexUpdates garbage-collects lazily, as background maintenance does: its due sweep
// rewrites the postings that are mostly deleted and erases their tombstones, but leaves a posting
// a few deleted entries (skipped by searches) with their tombstones kept. No deleted key is
// returned, Verify (every posting id live or tombstoned) stays clean, through a power loss too;
// FlushIndexUpdates then sweeps every tombstone out.
TEST_P(PostingAppendTest, DrainLeavesFewTombstonesToTheLazyGc) {
  InsertRounds(2000, 1, 100);
  // Clusters 0-4 entirely (their postings are merged away), ~30% of cluster 5 (its posting is
  // rewritten) and every 13th key of the others (~8% of each of their postings stays): over the
  // 1,000 tombstones that make a sweep due.
  std::vector<Key> deleted;
  std::vector<uint64_t> kept;
  for (uint64_t k : keys_) {
    const bool gone = k % 10 < 5 || k % 13 == 0 || (k % 10 == 5 && k % 13 < 4);
    (gone ? deleted.push_back(k) : kept.push_back(k));
  }
  ASSERT_GE(deleted.size(), 1000u);
  auto n = db_->Delete("c", deleted, {.sync = true});
  ASSERT_TRUE(n.ok()) << n.status();
  keys_ = kept;
  const CollectionInfo before = Info();
  ASSERT_TRUE(db_->DrainIndexUpdates("c").ok());
  const CollectionInfo lazy = Info();
  EXPECT_GT(lazy.tombstones, 0u);                  // the few in the other postings stay
  EXPECT_LT(lazy.tombstones, deleted.size() / 2);  // those of the merged and rewritten ones go
  EXPECT_LT(lazy.postings, before.postings);
  EXPECT_GT(lazy.posting_bytes_written, before.posting_bytes_written);
  auto expect_no_deleted_key = [&] {
    std::vector<float> q;
    for (const Key& k : deleted) {
      const Record r = testing::ClusteredRecord(std::get<uint64_t>(k));
      q.insert(q.end(), r.vector.begin(), r.vector.end());
    }
    auto hits = db_->Search("c", q, {.k = 5, .max_postings = 64});
    ASSERT_TRUE(hits.ok()) << hits.status();
    const absl::flat_hash_set<Key> gone(deleted.begin(), deleted.end());
    for (const auto& list : *hits) {
      for (const Hit& h : list) ASSERT_FALSE(gone.contains(h.key)) << std::get<uint64_t>(h.key);
    }
  };
  expect_no_deleted_key();
  ExpectEveryKeyFound();
  ExpectVerifyClean();
  ASSERT_NO_FATAL_FAILURE(PowerLossAndReopen());
  EXPECT_EQ(Info().tombstones, lazy.tombstones);
  expect_no_deleted_key();
  ExpectEveryKeyFound();
  ExpectVerifyClean();
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  EXPECT_EQ(Info().tombstones, 0u);
  expect_no_deleted_key();
  ExpectEveryKeyFound();
  ExpectVerifyClean();
}

TEST_P(PostingAppendTest, PowerLossAfterAppendsLosesNoAcknowledgedWrite) {
  InsertRounds(2000, 4, 100);
  ASSERT_GT(Info().posting_appends, 0u);
  Upsert(2400, 2450);  // acknowledged, maybe not drained
  ASSERT_NO_FATAL_FAILURE(PowerLossAndReopen());
  ExpectVerifyClean();
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  ExpectEveryKeyFound();
  ExpectVerifyClean();
}

TEST_P(PostingAppendTest, FailedAppendKeepsTheOldPostingsUntilARetry) {
  InsertRounds(2000, 2, 100);
  fs_.Fail(FaultOp::kWrite, "postings.dat", EIO, /*one_shot=*/false);
  Upsert(2200, 2300);
  absl::Status s = db_->FlushIndexUpdates("c");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  ExpectVerifyClean();
  fs_.Clear();
  // The retry needs no reopen: the failed change's pages were freed and are written anew.
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  InsertRounds(2300, 2, 100);
  EXPECT_GT(Info().posting_appends, 0u);
  ExpectEveryKeyFound();
  ExpectVerifyClean();
}

INSTANTIATE_TEST_SUITE_P(Tiers, PostingAppendTest, ::testing::Values("", ",quant=sq8"),
                         [](const auto& info) { return info.param.empty() ? "Full" : "Sq8"; });

}  // namespace
}  // namespace shoal

// Online inserts append to postings (index/update_work.cc WritePosting): after the first rewrite
// of a posting, later drains that only add entries write just the new entries' pages after its
// extent. Every vector stays findable, Verify (which decodes every posting page) is clean, a
// reopen and a power loss lose nothing acknowledged, and an append that fails (EIO on the
// posting file) leaves the old posting serving until a retry (no reopen) succeeds. Both tiers.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <map>

#include "db/db_impl.h"
#include "shoal/db.h"
#include "storage/fault_injection.h"

namespace shoal {
namespace {

using storage::FaultOp;

constexpr uint32_t kDim = 16;

Record R(uint64_t key) {
  Record r;
  r.key = key;
  r.vector.push_back(static_cast<float>(key % 10) * 4.0f);  // 10 clusters
  r.vector.push_back(static_cast<float>(key) * 1e-3f);      // no two keys alike
  for (uint32_t i = 2; i < kDim; ++i) {
    r.vector.push_back(static_cast<float>((key * 37 + i * 11) % 89) * 0.01f);
  }
  return r;
}

class PostingAppendTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "posting_append_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    Open();
    ASSERT_TRUE(db_->CreateCollection({"c", kDim, Metric::kL2}).ok());
    Upsert(0, 2000);
    ASSERT_TRUE(db_->BuildIndex("c", "spann:centroid_ratio=0.005,replicas=2" + GetParam()).ok());
  }
  void TearDown() override {
    db_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Open() {
    Options options;
    options.build_threads = 1;
    options.search_threads = 1;
    auto db = db::DBImpl::Open(dir_, options, {&fs_, fs_.rocksdb_env()});
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
  }
  void Upsert(uint64_t begin, uint64_t end) {
    std::vector<Record> recs;
    for (uint64_t k = begin; k < end; ++k) recs.push_back(R(k)), keys_.push_back(k);
    ASSERT_TRUE(db_->Upsert("c", recs, {.sync = true}).ok());
  }
  // Small drains, one after another: each posting gains a few entries per round.
  void InsertRounds(uint64_t begin, int rounds, uint64_t per_round) {
    for (int r = 0; r < rounds; ++r, begin += per_round) {
      Upsert(begin, begin + per_round);
      ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
    }
  }
  CollectionInfo Info() {
    auto info = db_->DescribeCollection("c");
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? *info : CollectionInfo{};
  }
  void ExpectEveryKeyFound() {
    std::vector<float> q;
    for (uint64_t k : keys_) {
      const Record r = R(k);
      q.insert(q.end(), r.vector.begin(), r.vector.end());
    }
    auto hits = db_->Search("c", q, {.k = 1, .max_postings = 64});
    ASSERT_TRUE(hits.ok()) << hits.status();
    size_t found = 0;
    for (size_t i = 0; i < keys_.size(); ++i) {
      found += !(*hits)[i].empty() && std::get<uint64_t>((*hits)[i][0].key) == keys_[i];
    }
    EXPECT_EQ(found, keys_.size());
    EXPECT_EQ(Info().unindexed_vectors, 0u);
  }
  void ExpectVerifyClean() {
    VerifyReport report;
    absl::Status s = db_->Verify("", &report);
    EXPECT_TRUE(s.ok()) << s;
  }

  std::string dir_;
  storage::FaultInjectingFileSystem fs_;
  std::unique_ptr<DB> db_;
  std::vector<uint64_t> keys_;
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
  // An append writes the new entries' pages only, less than half of a rewrite here.
  EXPECT_LT((info.posting_bytes_written - first.posting_bytes_written) / 4,
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

TEST_P(PostingAppendTest, PowerLossAfterAppendsLosesNoAcknowledgedWrite) {
  InsertRounds(2000, 4, 100);
  ASSERT_GT(Info().posting_appends, 0u);
  Upsert(2400, 2450);  // acknowledged, maybe not drained
  fs_.PowerOff();
  db_.reset();
  ASSERT_TRUE(fs_.DropUnsyncedData().ok());
  Open();
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

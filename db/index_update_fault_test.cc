// Online index maintenance under injected file faults (EIO / ENOSPC on a write or fsync of
// postings.dat or vectors.dat, torn writes), both tiers: while the fault lasts, FlushIndexUpdates
// reports it with a canonical code naming the file, client writes are acknowledged and every
// record stays findable (the buffer answers for what the postings lack); once the fault clears,
// maintenance resumes WITHOUT a reopen — the flush succeeds, nothing is left unindexed, Verify is
// clean — and a reopen, or a power loss, finds the same.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <filesystem>

#include "absl/time/clock.h"
#include "db/fault_db_testing.h"
#include "shoal/db.h"
#include "storage/io/fault_injection.h"

namespace shoal {
namespace {

using storage::FaultOp;

struct UpdateFault {
  const char* name;
  FaultOp op;
  const char* path;  // substring
  int err;           // 0: a torn write
  absl::StatusCode code;
};

struct Param {
  UpdateFault fault;
  const char* tier;  // appended to the index spec
};

void PrintTo(const Param& p, std::ostream* os) { *os << p.fault.name << p.tier; }

class IndexUpdateFaultTest : public ::testing::TestWithParam<Param>, protected testing::FaultDb {
 protected:
  void SetUp() override {
    Create("index_update_fault_test");
    ASSERT_TRUE(db_->CreateCollection({"c", testing::kClusteredDim, Metric::kL2}).ok());
    Upsert(0, 1000);
    ASSERT_TRUE(
        db_->BuildIndex("c", std::string("spann:centroid_ratio=0.01,replicas=2") + GetParam().tier)
            .ok());
    Upsert(1000, 1100);  // drained once: later drains append to postings
    ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  }
  void TearDown() override { Destroy(); }
  void Upsert(uint64_t begin, uint64_t end) { UpsertClustered(begin, end); }
  void Arm(const UpdateFault& f) { FaultDb::Arm(f.op, f.path, f.err); }
  // Fully indexed, every key found, Verify clean.
  void ExpectDrainedAndClean() {
    EXPECT_EQ(Info().unindexed_vectors, 0u);
    ExpectEveryKeyFound();
    ExpectVerifyClean();
  }
  // Arms the fault, writes, and checks that the flush fails naming the file while every write
  // stays acknowledged and found.
  void FailAFlush() {
    const UpdateFault& f = GetParam().fault;
    Arm(f);
    Upsert(1100, 1300);
    absl::Status s = db_->FlushIndexUpdates("c");
    EXPECT_EQ(s.code(), f.code) << s;
    EXPECT_NE(s.message().find(f.path), std::string::npos) << s;
    EXPECT_GT(fs_.injected(), 0u);
    EXPECT_GT(Info().unindexed_vectors, 0u);
    ExpectEveryKeyFound();
    Upsert(1300, 1350);  // writes go on meanwhile
    ExpectEveryKeyFound();
  }
};

TEST_P(IndexUpdateFaultTest, FlushSucceedsOnceTheFaultClearsWithoutAReopen) {
  FailAFlush();
  fs_.Clear();
  absl::Status s = db_->FlushIndexUpdates("c");
  ASSERT_TRUE(s.ok()) << s;
  ExpectDrainedAndClean();
  // Later drains (appends to the postings the retry wrote) go on as usual.
  Upsert(1350, 1450);
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  ExpectDrainedAndClean();

  db_.reset();
  Open();
  ExpectDrainedAndClean();
  Upsert(1450, 1500);
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  ExpectDrainedAndClean();
}

TEST_P(IndexUpdateFaultTest, PowerLossAfterTheRetryLosesNothing) {
  FailAFlush();
  fs_.Clear();
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  Upsert(1350, 1400);  // acknowledged (synced WAL), maybe not drained
  ASSERT_NO_FATAL_FAILURE(PowerLossAndReopen());
  ExpectVerifyClean();
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  ExpectDrainedAndClean();
}

// A sweep (tombstoned entries dropped from the postings, then the tombstones erased) that fails
// part-way is redone once the fault clears; deleted keys stay invisible throughout.
TEST_P(IndexUpdateFaultTest, SweepResumesOnceTheFaultClears) {
  if (std::string(GetParam().fault.path) != "postings.dat")
    GTEST_SKIP() << "a sweep writes postings";
  std::vector<Key> deleted;
  std::vector<uint64_t> kept;
  for (uint64_t k : keys_) (k % 3 == 0 ? deleted.push_back(k) : kept.push_back(k));
  auto n = db_->Delete("c", deleted, {.sync = true});
  ASSERT_TRUE(n.ok()) << n.status();
  ASSERT_EQ(*n, deleted.size());
  keys_ = kept;
  Arm(GetParam().fault);
  absl::Status s = db_->FlushIndexUpdates("c");
  EXPECT_EQ(s.code(), GetParam().fault.code) << s;
  EXPECT_NE(s.message().find("postings.dat"), std::string::npos) << s;
  auto expect_deleted_absent = [&] {
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
  };
  ExpectEveryKeyFound();
  expect_deleted_absent();
  fs_.Clear();
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  ExpectDrainedAndClean();
  expect_deleted_absent();
  db_.reset();
  Open();
  ExpectDrainedAndClean();
  expect_deleted_absent();
}

// The maintenance thread, not only an explicit flush, resumes by itself after its back-off.
TEST_P(IndexUpdateFaultTest, MaintenanceThreadResumesOnItsOwn) {
  FailAFlush();
  fs_.Clear();
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (Info().unindexed_vectors > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  ExpectDrainedAndClean();
}

// The commit of a maintenance step (its RocksDB batch: directory rows and watermark) failing on a
// WAL fsync: RocksDB stops writes; the retry resumes it once the fault clears, with no reopen.
// The step's pages stay allocated until the next open (the batch may have reached the WAL).
class IndexCommitFaultTest : public IndexUpdateFaultTest {};

TEST_P(IndexCommitFaultTest, FlushResumesTheStoreOnceTheFaultClears) {
  Upsert(1100, 1300);
  Arm(GetParam().fault);
  absl::Status s = db_->FlushIndexUpdates("c");
  EXPECT_EQ(s.code(), GetParam().fault.code) << s;
  EXPECT_NE(s.message().find("committing index change"), std::string::npos) << s;
  EXPECT_GT(Info().unindexed_vectors, 0u);
  ExpectEveryKeyFound();
  fs_.Clear();
  s = db_->FlushIndexUpdates("c");
  ASSERT_TRUE(s.ok()) << s;
  ExpectDrainedAndClean();
  Upsert(1300, 1400);  // client writes go on
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  ExpectDrainedAndClean();
  db_.reset();
  Open();
  ExpectDrainedAndClean();
  ASSERT_NO_FATAL_FAILURE(PowerLossAndReopen());
  ExpectDrainedAndClean();
}

INSTANTIATE_TEST_SUITE_P(
    Faults, IndexCommitFaultTest,
    ::testing::Values(
        Param{{"WalFsyncEio", FaultOp::kSync, ".log", EIO, absl::StatusCode::kInternal}, ""},
        Param{{"WalFsyncEio", FaultOp::kSync, ".log", EIO, absl::StatusCode::kInternal},
              ",quant=sq8"}),
    [](const ::testing::TestParamInfo<Param>& info) {
      return std::string(info.param.fault.name) + (*info.param.tier == '\0' ? "Full" : "Sq8");
    });

const UpdateFault kFaults[] = {
    {"PostingWriteEio", FaultOp::kWrite, "postings.dat", EIO, absl::StatusCode::kInternal},
    {"VectorWriteEnospc", FaultOp::kWrite, "vectors.dat", ENOSPC,
     absl::StatusCode::kResourceExhausted},
    {"PostingFsyncEio", FaultOp::kSync, "postings.dat", EIO, absl::StatusCode::kInternal},
    {"VectorFsyncEio", FaultOp::kSync, "vectors.dat", EIO, absl::StatusCode::kInternal},
    {"PostingTornWrite", FaultOp::kWrite, "postings.dat", 0, absl::StatusCode::kInternal},
    {"VectorTornWrite", FaultOp::kWrite, "vectors.dat", 0, absl::StatusCode::kInternal},
};

std::vector<Param> AllParams() {
  std::vector<Param> out;
  for (const char* tier : {"", ",quant=sq8"}) {
    for (const UpdateFault& f : kFaults) out.push_back({f, tier});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Faults, IndexUpdateFaultTest, ::testing::ValuesIn(AllParams()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return std::string(info.param.fault.name) +
                                  (*info.param.tier == '\0' ? "Full" : "Sq8");
                         });

}  // namespace
}  // namespace shoal

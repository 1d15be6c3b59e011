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

class IndexUpdateFaultTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "index_update_fault_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    Open();
    ASSERT_TRUE(db_->CreateCollection({"c", kDim, Metric::kL2}).ok());
    Upsert(0, 1000);
    ASSERT_TRUE(
        db_->BuildIndex("c", std::string("spann:centroid_ratio=0.01,replicas=2") + GetParam().tier)
            .ok());
    Upsert(1000, 1100);  // drained once: later drains append to postings
    ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
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
  void Arm(const UpdateFault& f) {
    if (f.err == 0) {
      fs_.TearWrite(f.path, 100, /*one_shot=*/false);
    } else {
      fs_.Fail(f.op, f.path, f.err, /*one_shot=*/false);
    }
  }
  CollectionInfo Info() {
    auto info = db_->DescribeCollection("c");
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? *info : CollectionInfo{};
  }
  // Every acknowledged key is its own vector's nearest hit.
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
  }
  void ExpectVerifyClean() {
    VerifyReport report;
    absl::Status s = db_->Verify("", &report);
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_TRUE(report.ok()) << ::testing::PrintToString(report.problems);
  }
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

  std::string dir_;
  storage::FaultInjectingFileSystem fs_;
  std::unique_ptr<DB> db_;
  std::vector<uint64_t> keys_;
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
  fs_.PowerOff();
  db_.reset();
  ASSERT_TRUE(fs_.DropUnsyncedData().ok());
  Open();
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
      const Record r = R(std::get<uint64_t>(k));
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
  fs_.PowerOff();
  db_.reset();
  ASSERT_TRUE(fs_.DropUnsyncedData().ok());
  Open();
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

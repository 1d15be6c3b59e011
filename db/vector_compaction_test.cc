// Compaction of an SSD index's vectors.dat (SpannUpdater::CompactVectors): churn a collection
// until most of the file is dead, and the file shrinks while every live vector still reads back
// bit-exact, searches find them, Verify is clean and a reopen (also after a power loss) finds
// every acknowledged write; a compaction that fails (ENOSPC, EIO, a failed rename) leaves the old
// file serving, reports the error, and a later one succeeds. Full-vector and quantized tiers.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>

#include "db/fault_db_testing.h"
#include "shoal/db.h"
#include "storage/io/fault_injection.h"
#include "storage/pages/vector_file.h"

namespace shoal {
namespace {

using storage::FaultOp;
namespace fs = std::filesystem;

constexpr uint32_t kDim = 32;
constexpr uint64_t kBuilt = 3000;

// Deterministic, and the key is readable from the vector itself (element 0).
Record R(uint64_t key, uint64_t version = 0) {
  Record r;
  r.key = key;
  r.vector.push_back(static_cast<float>(key));
  for (uint32_t i = 1; i < kDim; ++i) {
    r.vector.push_back(static_cast<float>((key * 37 + i * 11 + version * 5) % 89) * 0.25f);
  }
  return r;
}

class CompactionTestBase : public ::testing::Test, protected testing::FaultDb {
 protected:
  void SetUpWith(const std::string& quant) {
    Create("vector_compaction_test");
    ASSERT_TRUE(db_->CreateCollection({"c", kDim, Metric::kL2}).ok());
    Upsert(0, kBuilt);
    ASSERT_TRUE(db_->BuildIndex("c", "spann:centroid_ratio=0.05,replicas=2" + quant).ok());
    size_built_ = fs::file_size(VectorPath());
  }
  void TearDown() override { Destroy(); }
  void Upsert(uint64_t begin, uint64_t end, uint64_t version = 0) {
    std::vector<Record> recs;
    for (uint64_t k = begin; k < end; ++k) {
      recs.push_back(R(k, version));
      live_[k] = version;
    }
    ASSERT_TRUE(db_->Upsert("c", recs, {.sync = true}).ok());
  }
  void Delete(uint64_t begin, uint64_t end) {
    std::vector<Key> keys;
    for (uint64_t k = begin; k < end; ++k) keys.push_back(k), live_.erase(k);
    ASSERT_TRUE(db_->Delete("c", keys, {.sync = true}).ok());
  }
  // 80% of the built vectors deleted, a tenth of the rest replaced, a few new ones.
  void Churn() {
    Delete(0, kBuilt * 8 / 10);
    Upsert(kBuilt * 9 / 10, kBuilt, /*version=*/1);
    Upsert(kBuilt, kBuilt + 200);
  }
  std::string VectorPath() {
    for (const auto& e : fs::directory_iterator(dir_ + "/index")) {
      return e.path().string() + "/vectors.dat";
    }
    return "";
  }
  uint64_t Compactions() {
    auto info = db_->DescribeCollection("c");
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? info->vector_file_compactions : 0;
  }
  // Every vector in vectors.dat is bit-exact, and every live key's current vector is there.
  void ExpectVectorFileHoldsEveryLiveVector() {
    auto vf = storage::VectorFile::Open(VectorPath(), kDim, storage::IoBackend::kPread);
    ASSERT_TRUE(vf.ok()) << vf.status();
    std::map<uint64_t, int> current;  // live key -> copies of its current vector
    absl::Status s = (*vf)->Scan([&](uint64_t, const float* v) {
      const auto key = static_cast<uint64_t>(v[0]);
      auto it = live_.find(key);
      if (it == live_.end()) return absl::OkStatus();  // a tombstoned id not swept yet
      const Record want = R(key, it->second);
      if (std::equal(want.vector.begin(), want.vector.end(), v)) ++current[key];
      return absl::OkStatus();
    });
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(current.size(), live_.size());
    for (const auto& [key, n] : current) EXPECT_EQ(n, 1) << key;
  }
  // Each live key is its own nearest neighbour (reranked from vectors.dat in the quantized tier).
  void ExpectSearchFindsLiveKeys() {
    std::vector<float> q;
    std::vector<uint64_t> keys;
    for (const auto& [key, version] : live_) {
      if (key % 7 != 0) continue;
      const Record r = R(key, version);
      q.insert(q.end(), r.vector.begin(), r.vector.end());
      keys.push_back(key);
    }
    auto hits = db_->Search("c", q, {.k = 1, .max_postings = 64});
    ASSERT_TRUE(hits.ok()) << hits.status();
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ((*hits)[i].size(), 1u);
      EXPECT_EQ(std::get<uint64_t>((*hits)[i][0].key), keys[i]);
    }
  }
  std::map<uint64_t, uint64_t> live_;  // key -> version
  uint64_t size_built_ = 0;
};

class VectorCompactionTest : public CompactionTestBase,
                             public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override { SetUpWith(GetParam()); }
};

TEST_P(VectorCompactionTest, ChurnShrinksTheFileAndKeepsEveryLiveVector) {
  Churn();
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  EXPECT_GE(Compactions(), 1u);
  EXPECT_LT(fs::file_size(VectorPath()), size_built_ / 2);
  EXPECT_FALSE(fs::exists(VectorPath() + ".compact"));
  ExpectVectorFileHoldsEveryLiveVector();
  ExpectSearchFindsLiveKeys();
  ExpectVerifyClean();
  // New ids after the compaction land past its packed slots; replaced ones are found too.
  Upsert(kBuilt + 200, kBuilt + 400);
  Upsert(kBuilt * 9 / 10, kBuilt * 9 / 10 + 50, /*version=*/2);
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  db_.reset();
  Open();
  ExpectVectorFileHoldsEveryLiveVector();
  ExpectSearchFindsLiveKeys();
  ExpectVerifyClean();
}

TEST_P(VectorCompactionTest, PowerLossAfterCompactionLosesNoAcknowledgedWrite) {
  Churn();
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  ASSERT_GE(Compactions(), 1u);
  Upsert(kBuilt + 200, kBuilt + 300);
  Delete(kBuilt * 8 / 10, kBuilt * 8 / 10 + 20);
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  ASSERT_NO_FATAL_FAILURE(PowerLossAndReopen());
  ExpectVerifyClean();
  ExpectVectorFileHoldsEveryLiveVector();
  ExpectSearchFindsLiveKeys();
}

TEST_P(VectorCompactionTest, LeftoverFromACrashedCompactionIsRemovedAtOpen) {
  db_.reset();
  { std::ofstream(VectorPath() + ".compact") << "half a file"; }
  Open();
  EXPECT_FALSE(fs::exists(VectorPath() + ".compact"));
  ExpectVerifyClean();
}

INSTANTIATE_TEST_SUITE_P(Tiers, VectorCompactionTest, ::testing::Values("", ",quant=sq8"),
                         [](const auto& info) { return info.param.empty() ? "Full" : "Sq8"; });

struct Fault {
  const char* name;
  const char* quant;
  FaultOp op;
  const char* path;  // substring
  int err;
  absl::StatusCode code;
};

std::ostream& operator<<(std::ostream& os, const Fault& f) { return os << f.name; }

class VectorCompactionFaultTest : public CompactionTestBase,
                                  public ::testing::WithParamInterface<Fault> {
 protected:
  void SetUp() override { SetUpWith(GetParam().quant); }
};

TEST_P(VectorCompactionFaultTest, FailedCompactionKeepsTheOldFileAndARetrySucceeds) {
  const Fault& f = GetParam();
  // Armed before the churn: the maintenance thread may try first.
  fs_.Fail(f.op, f.path, f.err, /*one_shot=*/false);
  Churn();
  absl::Status s = db_->FlushIndexUpdates("c");
  EXPECT_EQ(s.code(), f.code) << s;
  EXPECT_EQ(Compactions(), 0u);
  EXPECT_GE(fs::file_size(VectorPath()), size_built_);  // the old file, grown by the inserts
  ExpectSearchFindsLiveKeys();
  ExpectVerifyClean();
  Upsert(kBuilt + 200, kBuilt + 250);  // the old file still takes inserts
  fs_.Clear();
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  EXPECT_GE(Compactions(), 1u);
  EXPECT_LT(fs::file_size(VectorPath()), size_built_ / 2);
  EXPECT_FALSE(fs::exists(VectorPath() + ".compact"));
  ExpectVectorFileHoldsEveryLiveVector();
  ExpectSearchFindsLiveKeys();
  ExpectVerifyClean();
  db_.reset();
  Open();
  ExpectVectorFileHoldsEveryLiveVector();
  ExpectVerifyClean();
}

INSTANTIATE_TEST_SUITE_P(Faults, VectorCompactionFaultTest,
                         ::testing::Values(Fault{"WriteEnospcFull", "", FaultOp::kWrite, ".compact",
                                                 ENOSPC, absl::StatusCode::kResourceExhausted},
                                           Fault{"WriteEioSq8", ",quant=sq8", FaultOp::kWrite,
                                                 ".compact", EIO, absl::StatusCode::kInternal},
                                           Fault{"SyncEioFull", "", FaultOp::kSync, ".compact", EIO,
                                                 absl::StatusCode::kInternal},
                                           Fault{"RenameEioSq8", ",quant=sq8", FaultOp::kRename,
                                                 ".compact", EIO, absl::StatusCode::kInternal}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace shoal

// Test support for the db/ tests that run a DB over a FaultInjectingFileSystem and check online
// index maintenance: a scratch directory, a DB whose every file goes through the fault-injecting
// seam, and the checks those tests share (every acknowledged key found, Verify clean).
//
//   class MyTest : public ::testing::Test, protected testing::FaultDb {
//     void SetUp() override { Create("my_test"); ... UpsertClustered(0, 1000); }
//     void TearDown() override { Destroy(); }
//   };
//
// Test-only (linked with shoal_fault_injection); not thread-safe.
#ifndef SHOAL_DB_FAULT_DB_TESTING_H_
#define SHOAL_DB_FAULT_DB_TESTING_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "db/db_impl.h"
#include "shoal/db.h"
#include "storage/io/fault_injection.h"

namespace shoal::testing {

// 16-dimensional records in 10 clusters (element 0 = key % 10 * 4), no two keys alike.
inline constexpr uint32_t kClusteredDim = 16;
inline Record ClusteredRecord(uint64_t key) {
  Record r;
  r.key = key;
  r.vector.push_back(static_cast<float>(key % 10) * 4.0f);
  r.vector.push_back(static_cast<float>(key) * 1e-3f);
  for (uint32_t i = 2; i < kClusteredDim; ++i) {
    r.vector.push_back(static_cast<float>((key * 37 + i * 11) % 89) * 0.01f);
  }
  return r;
}

class FaultDb {
 protected:
  // A fresh scratch directory named after `name`, and the DB opened on it.
  void Create(const std::string& name) {
    std::string tmpl = ::testing::TempDir() + name + "_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    Open();
  }
  // (Re)opens the DB on dir_: one build and one search thread, every file through fs_.
  void Open() {
    Options options;
    options.build_threads = 1;
    options.search_threads = 1;
    auto db = db::DBImpl::Open(dir_, options,
                               {.fs = &fs_,
                                .rocksdb_env = fs_.rocksdb_env(),
                                .before_maintenance_round = before_maintenance_round_});
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
  }
  // The machine loses power with the DB open: unsynced file data is gone; then Open().
  void PowerLossAndReopen() {
    fs_.PowerOff();
    db_.reset();
    ASSERT_TRUE(fs_.DropUnsyncedData().ok());
    Open();
  }
  void Destroy() {
    db_.reset();
    std::filesystem::remove_all(dir_);
  }
  // Faults every matching operation until fs_.Clear(); err 0 = writes torn after 100 bytes.
  void Arm(storage::FaultOp op, const char* path, int err, bool one_shot = false) {
    if (err == 0) {
      fs_.TearWrite(path, 100, one_shot);
    } else {
      fs_.Fail(op, path, err, one_shot);
    }
  }
  CollectionInfo Info() {
    auto info = db_->DescribeCollection("c");
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? *info : CollectionInfo{};
  }
  void ExpectVerifyClean() {
    VerifyReport report;
    absl::Status s = db_->Verify("", &report);
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_TRUE(report.ok()) << ::testing::PrintToString(report.problems);
  }
  // Synced ClusteredRecords for keys [begin, end) into collection "c", remembered in keys_.
  void UpsertClustered(uint64_t begin, uint64_t end) {
    std::vector<Record> recs;
    for (uint64_t k = begin; k < end; ++k) recs.push_back(ClusteredRecord(k)), keys_.push_back(k);
    ASSERT_TRUE(db_->Upsert("c", recs, {.sync = true}).ok());
  }
  // Every key in keys_ is its own vector's nearest hit.
  void ExpectEveryKeyFound() {
    std::vector<float> q;
    for (uint64_t k : keys_) {
      const Record r = ClusteredRecord(k);
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

  std::string dir_;
  storage::FaultInjectingFileSystem fs_;
  std::unique_ptr<DB> db_;
  std::vector<uint64_t> keys_;
  std::function<void()> before_maintenance_round_;  // db::StorageHooks' (set before Create)
};

}  // namespace shoal::testing

#endif  // SHOAL_DB_FAULT_DB_TESTING_H_

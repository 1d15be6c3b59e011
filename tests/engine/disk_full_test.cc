// The embedded engine on a small real file system (a tmpfs the test mounts) that fills up while
// a collection has an SSD index: online maintenance (vectors.dat, postings.dat), index builds,
// snapshots, compaction and the writes themselves meet ENOSPC from the kernel, not from the
// fault-injection layer. Nothing crashes, each refusal is ResourceExhausted, Get / Search /
// Verify go on, everything works again once space is freed, and a reopen keeps every
// acknowledged record. (The same through a real shoald: tests/e2e/disk_full_e2e_test.cc.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/test_seed.h"
#include "shoal/db.h"
#include "shoal/verify.h"
#include "tests/support/tmpfs_mount.h"

namespace shoal {
namespace {

using shoal::testing::TmpfsMount;

constexpr uint32_t kDimension = 64;

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TmpfsMount>> fs = TmpfsMount::Create(48u << 20);
    if (absl::IsPermissionDenied(fs.status())) GTEST_SKIP() << fs.status().message();
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
    dir_ = fs_->path() + "/db";
    seed_ = base::TestSeed();
    rng_.seed(seed_);
  }
  void TearDown() override {
    db_.reset();
    fs_.reset();
  }

  absl::Status Open() {
    db_.reset();
    absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(dir_, Options{});
    if (!db.ok()) return db.status();
    db_ = *std::move(db);
    return absl::OkStatus();
  }
  std::vector<Record> NewRecords(size_t n) {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<Record> records(n);
    for (Record& r : records) {
      r.key = next_key_++;
      r.vector.resize(kDimension);
      for (float& x : r.vector) x = uniform(rng_);
    }
    return records;
  }
  absl::Status Write(std::vector<Record> records) {
    absl::Status s = db_->Upsert("c", records, {.sync = true});
    if (s.ok()) acknowledged_.insert(acknowledged_.end(), records.begin(), records.end());
    return s;
  }
  // Every acknowledged record is found with its vector; a search for one written since the
  // build (searched exactly beside the index) finds it first; Verify is clean.
  void ExpectReadsServe(const Record& probe) {
    std::vector<Key> keys;
    for (const Record& r : acknowledged_) keys.push_back(r.key);
    absl::StatusOr<std::vector<std::optional<Record>>> got = db_->Get("c", keys);
    ASSERT_TRUE(got.ok()) << got.status();
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_TRUE((*got)[i].has_value()) << "key " << i;
      ASSERT_EQ((*got)[i]->vector, acknowledged_[i].vector) << "key " << i;
    }
    absl::StatusOr<std::vector<std::vector<Hit>>> hits = db_->Search("c", probe.vector, {.k = 5});
    ASSERT_TRUE(hits.ok()) << hits.status();
    ASSERT_FALSE((*hits)[0].empty());
    EXPECT_EQ((*hits)[0][0].key, probe.key);
    VerifyReport report;
    absl::Status verified = db_->Verify("c", &report);
    EXPECT_TRUE(verified.ok()) << verified;
  }

  std::unique_ptr<TmpfsMount> fs_;
  std::string dir_;
  uint32_t seed_ = 0;
  std::mt19937 rng_;
  std::unique_ptr<DB> db_;
  uint64_t next_key_ = 0;
  std::vector<Record> acknowledged_;
};

TEST_F(DiskFullTest, IndexedCollectionServesThroughAFullDiskAndRecovers) {
  SCOPED_TRACE(::testing::Message() << "seed=" << seed_);
  ASSERT_TRUE(Open().ok());
  ASSERT_TRUE(db_->CreateCollection({.name = "c", .dimension = kDimension}).ok());
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Write(NewRecords(500)).ok());
  ASSERT_TRUE(db_->BuildIndex("c", "spann:posting_cap=64,seed=1").ok());
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());

  // 600 KiB left: a batch of 1000 (~270 KB in the WAL) is acknowledged, but moving it into the
  // index (its vectors.dat slots, then posting replicas) does not fit.
  ASSERT_TRUE(fs_->Fill(/*keep_bytes=*/600 << 10).ok());
  std::vector<Record> pending = NewRecords(1000);
  ASSERT_TRUE(Write(pending).ok());
  absl::Status flushed = db_->FlushIndexUpdates("c");
  EXPECT_TRUE(absl::IsResourceExhausted(flushed)) << flushed;
  // Then the writes fill the rest and are refused.
  absl::Status refused;
  for (int i = 0; i < 40 && refused.ok(); ++i) refused = Write(NewRecords(200));
  ASSERT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  ASSERT_TRUE(fs_->Fill().ok());

  for (int i = 0; i < 5; ++i) {
    absl::Status s = Write(NewRecords(200));
    EXPECT_TRUE(absl::IsResourceExhausted(s)) << "write " << i << ": " << s;
    s = db_->Delete("c", std::vector<Key>{acknowledged_[i].key}, {.sync = true}).status();
    EXPECT_TRUE(absl::IsResourceExhausted(s)) << "delete " << i << ": " << s;
  }
  flushed = db_->FlushIndexUpdates("c");
  EXPECT_TRUE(absl::IsResourceExhausted(flushed)) << flushed;
  absl::Status built = db_->BuildIndex("c", "spann:posting_cap=64,seed=2");
  EXPECT_TRUE(absl::IsResourceExhausted(built)) << built;
  absl::Status snapshot = db_->Snapshot(fs_->path() + "/snapshot");
  EXPECT_TRUE(absl::IsResourceExhausted(snapshot)) << snapshot;
  absl::Status compacted = db_->Compact("c");
  EXPECT_TRUE(absl::IsResourceExhausted(compacted)) << compacted;
  ASSERT_NO_FATAL_FAILURE(ExpectReadsServe(pending[17]));

  // A restart on the full disk is refused, not a crash, and leaves the database as it was.
  // (Closing gives back the unused part of the MANIFEST's 4 MiB preallocation: fill that too.)
  db_.reset();
  ASSERT_TRUE(fs_->Fill().ok());
  absl::Status reopened = Open();
  EXPECT_TRUE(absl::IsResourceExhausted(reopened)) << reopened;

  // Space returns: everything works again with no manual step.
  ASSERT_TRUE(fs_->Unfill().ok());
  ASSERT_TRUE(Open().ok());
  ASSERT_NO_FATAL_FAILURE(ExpectReadsServe(pending[17]));
  ASSERT_TRUE(Write(NewRecords(200)).ok());
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  ASSERT_TRUE(db_->Snapshot(fs_->path() + "/snapshot").ok());
  ASSERT_TRUE(db_->BuildIndex("c", "spann:posting_cap=64,seed=3").ok());
  ASSERT_NO_FATAL_FAILURE(ExpectReadsServe(acknowledged_.back()));
  ASSERT_TRUE(Open().ok());
  ASSERT_NO_FATAL_FAILURE(ExpectReadsServe(acknowledged_.back()));
}

uint64_t DirBytes(const std::string& dir) {
  uint64_t bytes = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) bytes += entry.file_size();
  }
  return bytes;
}

// The snapshot directory on its own small disk, with room for the RocksDB checkpoint but not
// for the index copy after it.
TEST_F(DiskFullTest, SnapshotOntoAFullDiskIsRefusedAndLeavesNothingBehind) {
  SCOPED_TRACE(::testing::Message() << "seed=" << seed_);
  absl::StatusOr<std::unique_ptr<TmpfsMount>> snapshot_fs = TmpfsMount::Create(32u << 20);
  ASSERT_TRUE(snapshot_fs.ok()) << snapshot_fs.status();
  const std::string root = (*snapshot_fs)->path();
  ASSERT_TRUE(Open().ok());
  ASSERT_TRUE(db_->CreateCollection({.name = "c", .dimension = kDimension}).ok());
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Write(NewRecords(500)).ok());
  ASSERT_TRUE(db_->BuildIndex("c", "spann:posting_cap=64,seed=1").ok());
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  ASSERT_TRUE(db_->Snapshot(root + "/probe").ok());
  const uint64_t checkpoint_bytes = DirBytes(root + "/probe/rocksdb");
  const uint64_t index_bytes = DirBytes(root + "/probe/index");
  std::filesystem::remove_all(root + "/probe");
  ASSERT_GT(index_bytes, 1u << 20);

  const uint64_t keep = checkpoint_bytes + index_bytes / 2;
  ASSERT_TRUE((*snapshot_fs)->Fill(keep).ok());
  const uint64_t free_before = *(*snapshot_fs)->FreeBytes();
  absl::Status s = db_->Snapshot(root + "/s1");
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("/s1.tmp/index/"));
  // The partial copy is gone: no snapshot, no temporary directory, the space is free again.
  EXPECT_FALSE(std::filesystem::exists(root + "/s1"));
  EXPECT_FALSE(std::filesystem::exists(root + "/s1.tmp"));
  EXPECT_EQ(*(*snapshot_fs)->FreeBytes(), free_before);
  ASSERT_TRUE(Write(NewRecords(200)).ok());
  ASSERT_NO_FATAL_FAILURE(ExpectReadsServe(acknowledged_.back()));

  ASSERT_TRUE((*snapshot_fs)->Unfill().ok());
  ASSERT_TRUE(db_->Snapshot(root + "/s1").ok());
}

}  // namespace
}  // namespace shoal

// Injected faults through the DB: each gives the client a clear error, the DB stays readable,
// writes resume once the fault clears, nothing acknowledged is lost (checked after a reopen
// without faults) and Verify stays clean.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <thread>

#include "db/db_impl.h"
#include "db/fault_db_testing.h"
#include "shoal/db.h"
#include "storage/io/fault_injection.h"

namespace shoal {
namespace {

using storage::FaultOp;
using ::testing::HasSubstr;

constexpr uint32_t kDim = 8;

Record R(uint64_t key, float salt = 0) {
  Record r;
  r.key = key;
  for (uint32_t i = 0; i < kDim; ++i)
    r.vector.push_back(static_cast<float>((key * 31 + i) % 97) + salt);
  return r;
}

class FaultTest : public ::testing::Test, protected testing::FaultDb {
 protected:
  void SetUp() override {
    Create("fault_test");
    ASSERT_TRUE(db_->CreateCollection({"c", kDim, Metric::kL2}).ok());
  }
  void TearDown() override { Destroy(); }
  void OpenWithFaults() {
    db_.reset();
    Open();
  }
  // Reopens on the plain POSIX file system and checks every acknowledged key and Verify.
  void ReopenAndCheck() {
    db_.reset();
    fs_.Clear();
    auto db = DB::Open(dir_, Options{});
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
    CheckAcked();
    VerifyReport report;
    EXPECT_TRUE(db_->Verify("", &report).ok())
        << (report.problems.empty() ? "" : report.problems.front());
  }
  void CheckAcked() {
    std::vector<Key> keys;
    for (const auto& [k, salt] : acked_) keys.push_back(k);
    if (keys.empty()) return;
    auto got = db_->Get("c", keys);
    ASSERT_TRUE(got.ok()) << got.status();
    for (size_t i = 0; i < keys.size(); ++i) {
      const uint64_t k = std::get<uint64_t>(keys[i]);
      ASSERT_TRUE((*got)[i].has_value()) << "lost acknowledged key " << k;
      EXPECT_EQ((*got)[i]->vector, R(k, acked_[k]).vector) << k;
    }
  }
  absl::Status Put(uint64_t key, bool sync = true, float salt = 0) {
    Record r = R(key, salt);
    absl::Status s = db_->Upsert("c", {&r, 1}, {.sync = sync});
    if (s.ok()) acked_[key] = salt;
    return s;
  }
  void PutRange(uint64_t begin, uint64_t end) {
    for (uint64_t k = begin; k < end; ++k) {
      absl::Status s = Put(k);
      ASSERT_TRUE(s.ok()) << k << ": " << s;
    }
  }
  void ExpectReadable() {
    CheckAcked();
    auto hits = db_->Search("c", R(acked_.begin()->first, acked_.begin()->second).vector, {.k = 1});
    ASSERT_TRUE(hits.ok()) << hits.status();
    EXPECT_EQ((*hits)[0][0].distance, 0.0f);
  }

  std::map<uint64_t, float> acked_;  // key -> salt of its last acknowledged vector
};

TEST_F(FaultTest, WalFsyncEioFailsTheWriteThenWritesResume) {
  PutRange(0, 10);
  fs_.Fail(FaultOp::kSync, ".log", EIO);
  absl::Status s = Put(10);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("injected"));
  ExpectReadable();
  PutRange(11, 20);  // the fault was one-shot: writes resume
  ReopenAndCheck();
}

// With every memtable flushed (a whole-database compaction or a snapshot empties them), a WAL
// fault must still end with a fresh WAL writer: RocksDB 7.8's Resume() replaces the failed one
// only by flushing a non-empty memtable, and reusing it aborts the process (an assertion).
TEST_F(FaultTest, WalFaultsAfterEveryMemtableWasFlushedThenWritesResume) {
  PutRange(0, 10);
  for (const auto& [op, err] : {std::pair{FaultOp::kWrite, EIO}, std::pair{FaultOp::kSync, EIO},
                                std::pair{FaultOp::kWrite, ENOSPC}}) {
    ASSERT_TRUE(db_->Compact("").ok());
    fs_.Fail(op, ".log", err);
    EXPECT_FALSE(Put(100).ok());
    ExpectReadable();
    PutRange(11, 20);  // one-shot: writes resume on a fresh WAL
  }
  ReopenAndCheck();
}

// A full disk: the WAL write fails, then so does each resume's flush after it switched to a
// fresh WAL, until every memtable is empty again (the data waits in immutable ones). Once
// space returns, writes must resume without a restart.
TEST_F(FaultTest, ResumeThatSwitchedTheWalButCouldNotFlushResumesWhenSpaceReturns) {
  PutRange(0, 10);
  fs_.Fail(FaultOp::kWrite, ".log", ENOSPC);
  fs_.Fail(FaultOp::kWrite, ".sst", ENOSPC, /*one_shot=*/false);
  EXPECT_EQ(Put(10).code(), absl::StatusCode::kResourceExhausted);
  // Each resume switches one more column family's memtable before its flush fails.
  for (uint64_t k = 11; k < 17; ++k) EXPECT_FALSE(Put(k).ok()) << k;
  ExpectReadable();
  fs_.Clear();
  PutRange(20, 30);
  ReopenAndCheck();
}

TEST_F(FaultTest, WalWriteEnospcIsResourceExhaustedUntilCleared) {
  PutRange(0, 10);
  fs_.Fail(FaultOp::kWrite, ".log", ENOSPC, /*one_shot=*/false);
  absl::Status s = Put(10);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  s = Put(11);
  EXPECT_FALSE(s.ok());  // still full
  ExpectReadable();
  fs_.Clear();
  PutRange(12, 20);
  ReopenAndCheck();
}

TEST_F(FaultTest, WalFsyncEnospcIsResourceExhaustedThenWritesResume) {
  PutRange(0, 10);
  fs_.Fail(FaultOp::kSync, ".log", ENOSPC);
  absl::Status s = Put(10);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  ExpectReadable();
  PutRange(11, 20);
  ReopenAndCheck();
}

TEST_F(FaultTest, RenameFailureAtOpenIsAClearErrorAndTheNextOpenWorks) {
  PutRange(0, 10);
  db_.reset();
  // Opening rewrites CURRENT through a temporary file renamed over it.
  fs_.Fail(FaultOp::kRename, "dbtmp", EIO, /*one_shot=*/false);
  auto failed = db::DBImpl::Open(dir_, Options{}, {&fs_, fs_.rocksdb_env()});
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr("injected")) << failed.status();
  fs_.Clear();
  OpenWithFaults();
  PutRange(10, 20);
  ReopenAndCheck();
}

TEST_F(FaultTest, WalWriteEioWithUnsyncedWrites) {
  PutRange(0, 5);
  fs_.Fail(FaultOp::kWrite, ".log", EIO);
  EXPECT_FALSE(Put(5, /*sync=*/false).ok());
  ExpectReadable();
  for (uint64_t k = 6; k < 12; ++k) ASSERT_TRUE(Put(k, /*sync=*/false).ok());
  ASSERT_TRUE(Put(12).ok());
  ReopenAndCheck();
}

TEST_F(FaultTest, TornWalWriteLosesNothingAcknowledged) {
  PutRange(0, 10);
  fs_.TearWrite(".log", 7);
  EXPECT_FALSE(Put(10).ok());
  ExpectReadable();
  PutRange(11, 20);
  ASSERT_TRUE(Put(3, true, 0.5f).ok());  // an update after the torn record
  ReopenAndCheck();
}

TEST_F(FaultTest, PowerLossKeepsEverySyncedWrite) {
  PutRange(0, 20);
  for (uint64_t k = 20; k < 30; ++k) ASSERT_TRUE(Put(k, /*sync=*/false).ok());
  ASSERT_TRUE(Put(30).ok());  // syncs the WAL, and with it the unsynced writes before it
  for (uint64_t k = 31; k < 40; ++k) {
    Record r = R(k);
    ASSERT_TRUE(db_->Upsert("c", {&r, 1}, {.sync = false}).ok());
  }
  fs_.PowerOff();
  db_.reset();
  ASSERT_TRUE(fs_.DropUnsyncedData().ok());
  ReopenAndCheck();
}

TEST_F(FaultTest, ConcurrentSyncedWritersShareWalFsyncs) {
  constexpr int kThreads = 8, kPerThread = 25;
  auto run = [&](uint64_t first_key) {
    const uint64_t syncs_before = fs_.Count(FaultOp::kSync, ".log");
    std::vector<std::thread> threads;
    std::atomic<int> failed{0};
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          Record r = R(first_key + static_cast<uint64_t>(t * 1000 + i));
          if (!db_->Upsert("c", {&r, 1}, {.sync = true}).ok()) ++failed;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failed.load(), 0);
    return fs_.Count(FaultOp::kSync, ".log") - syncs_before;
  };
  // The disk's own fsync latency: printed, not asserted (it may be too fast to group).
  const uint64_t plain = run(0);
  // A slow fsync (3 ms) makes the writers queue up behind the group leader.
  fs_.SetSyncDelay(".log", absl::Milliseconds(3));
  const uint64_t slow = run(100000);
  std::printf("%d synced writes from %d threads: %lu WAL fsyncs (disk as is), %lu (3 ms fsyncs)\n",
              kThreads * kPerThread, kThreads, static_cast<unsigned long>(plain),
              static_cast<unsigned long>(slow));
  EXPECT_LT(slow, static_cast<uint64_t>(kThreads * kPerThread));
}

TEST_F(FaultTest, ConcurrentWritesToTheSameKeysAgreeInMemoryAndOnDisk) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 30; ++i) {
        std::vector<Record> batch = {R(i % 5, static_cast<float>(t)), R(5 + t, i)};
        EXPECT_TRUE(db_->Upsert("c", batch, {.sync = i % 2 == 0}).ok());
        if (i % 7 == 0) {
          Key k = uint64_t(i % 5);
          EXPECT_TRUE(db_->Delete("c", {&k, 1}, {}).ok());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<Key> keys;
  for (uint64_t k = 0; k < 5 + kThreads; ++k) keys.push_back(k);
  auto before = db_->Get("c", keys);
  ASSERT_TRUE(before.ok());
  auto hits = db_->Search("c", R(0).vector, {.k = 100});
  ASSERT_TRUE(hits.ok());
  ReopenAndCheck();
  auto after = db_->Get("c", keys);
  ASSERT_TRUE(after.ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ((*before)[i].has_value(), (*after)[i].has_value()) << i;
    if ((*before)[i]) {
      EXPECT_EQ((*before)[i]->vector, (*after)[i]->vector) << i;
    }
  }
  auto hits_after = db_->Search("c", R(0).vector, {.k = 100});
  ASSERT_TRUE(hits_after.ok());
  EXPECT_EQ((*hits)[0].size(), (*hits_after)[0].size());
}

// Beside an SSD index, a large write's buffer buckets are worked out on a side thread while its
// commit waits for the fsync (Collection::PrepareForms). A failed commit drops that work: none of
// the batch shows, and the same batch written again is found whole, concurrent writers too.
TEST_F(FaultTest, LargeWritesBesideAnSsdIndexFailWholeAndSucceedWhole) {
  std::vector<Record> first;
  for (uint64_t k = 0; k < 1000; ++k) first.push_back(R(k)), acked_[k] = 0;
  ASSERT_TRUE(db_->Upsert("c", first, {.sync = true}).ok());
  ASSERT_TRUE(db_->BuildIndex("c", "spann:centroid_ratio=0.02,replicas=2").ok());
  // A salt per key: no two vectors of these batches alike.
  auto salt_of = [](uint64_t k, float base) { return base + static_cast<float>(k) * 1e-4f; };
  auto batch_of = [&](uint64_t begin, float base) {
    std::vector<Record> b;
    for (uint64_t k = begin; k < begin + 64; ++k) b.push_back(R(k, salt_of(k, base)));
    return b;
  };
  auto expect_found = [&](const std::vector<Record>& batch, bool found) {
    std::vector<float> q;
    for (const Record& r : batch) q.insert(q.end(), r.vector.begin(), r.vector.end());
    auto hits = db_->Search("c", q, {.k = 1, .max_postings = 64});
    ASSERT_TRUE(hits.ok()) << hits.status();
    for (size_t i = 0; i < batch.size(); ++i) {
      ASSERT_FALSE((*hits)[i].empty());
      EXPECT_EQ((*hits)[i][0].key == batch[i].key && (*hits)[i][0].distance == 0.0f, found) << i;
    }
  };
  const std::vector<Record> failed = batch_of(5000, 0.25f);
  fs_.Fail(FaultOp::kSync, ".log", EIO);
  EXPECT_FALSE(db_->Upsert("c", failed, {.sync = true}).ok());
  expect_found(failed, false);
  auto info = db_->DescribeCollection("c");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->num_vectors, 1000u);
  // Written again, and beside it three writers' batches at once (one gets the side thread).
  ASSERT_TRUE(db_->Upsert("c", failed, {.sync = true}).ok());
  for (uint64_t k = 5000; k < 5064; ++k) acked_[k] = salt_of(k, 0.25f);
  std::vector<std::thread> writers;
  for (uint64_t t = 0; t < 3; ++t) {
    writers.emplace_back([&, t] {
      for (uint64_t j = 0; j < 10; ++j) {
        EXPECT_TRUE(
            db_->Upsert("c", batch_of(6000 + (t * 10 + j) * 64, 0.5f), {.sync = true}).ok());
      }
    });
  }
  for (std::thread& w : writers) w.join();
  expect_found(failed, true);
  for (uint64_t b = 6000; b < 6000 + 30 * 64; b += 64) {
    expect_found(batch_of(b, 0.5f), true);
    for (uint64_t k = b; k < b + 64; ++k) acked_[k] = salt_of(k, 0.5f);
  }
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  expect_found(failed, true);
  ReopenAndCheck();
}

}  // namespace
}  // namespace shoal

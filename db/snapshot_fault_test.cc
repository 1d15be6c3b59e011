// Snapshot and restore under injected faults (db/snapshot.h through FaultInjectingFileSystem):
// EIO and ENOSPC on writes, fsyncs and renames, and a power loss at every step of a restore and
// of a snapshot. After each, the database opens and holds either its old data intact or the
// snapshot's data whole, never a mix, and Verify is clean; a failed snapshot leaves no partial
// snapshot behind.
//
// The "old" database: collection "c" with keys [0, 400) and an SPANN index, plus collection
// "later". The snapshot ("new"): "c" with keys [0, 300) and its index, no "later".
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "db/db_impl.h"
#include "db/fault_db_testing.h"
#include "db/snapshot.h"
#include "shoal/db.h"
#include "shoal/verify.h"
#include "storage/io/fault_injection.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;
using storage::FaultInjectingFileSystem;
using storage::FaultOp;
using testing::ClusteredRecord;

constexpr char kSpec[] = "spann:centroid_ratio=0.05,seed=1";
constexpr uint64_t kNewKeys = 300;
constexpr uint64_t kOldKeys = 400;
// A procedure of a few dozen steps is crashed at each; this bounds a runaway loop.
constexpr uint64_t kMaxSteps = 2000;

absl::StatusOr<std::unique_ptr<DB>> OpenDb(const std::string& dir, FaultInjectingFileSystem* fs) {
  Options options;
  options.build_threads = 1;
  options.search_threads = 1;
  return db::DBImpl::Open(dir, options, {fs, fs->rocksdb_env()});
}

absl::Status Upsert(DB& db, uint64_t begin, uint64_t end) {
  std::vector<Record> records;
  for (uint64_t k = begin; k < end; ++k) records.push_back(ClusteredRecord(k));
  return db.Upsert("c", records, {.sync = true});
}

// Which state `db` holds: "old", "new", or what is wrong.
std::string Observe(DB* db) {
  absl::StatusOr<std::vector<CollectionInfo>> all = db->ListCollections();
  if (!all.ok()) return all.status().ToString();
  for (const CollectionInfo& info : *all) {
    if (!info.damage.empty()) return absl::StrCat(info.spec.name, " damaged: ", info.damage);
  }
  const bool later = absl::c_any_of(*all, [](const auto& i) { return i.spec.name == "later"; });
  const uint64_t expected = later ? kOldKeys : kNewKeys;
  std::vector<Key> keys;
  std::vector<float> queries;
  for (uint64_t k = 0; k < kOldKeys; ++k) {
    keys.push_back(k);
    const Record r = ClusteredRecord(k);
    if (k < expected) queries.insert(queries.end(), r.vector.begin(), r.vector.end());
  }
  absl::StatusOr<std::vector<std::optional<Record>>> got = db->Get("c", keys);
  if (!got.ok()) return got.status().ToString();
  for (uint64_t k = 0; k < kOldKeys; ++k) {
    if ((*got)[k].has_value() != (k < expected)) {
      return absl::StrCat(later ? "old" : "new", " catalog but key ", k,
                          (k < expected ? " missing" : " present"));
    }
  }
  auto hits = db->Search("c", queries, {.k = 1, .max_postings = 64});
  if (!hits.ok()) return hits.status().ToString();
  for (uint64_t k = 0; k < expected; ++k) {
    if ((*hits)[k].empty() || (*hits)[k][0].key != Key(k)) {
      return absl::StrCat("key ", k, " not its own nearest");
    }
  }
  VerifyReport report;
  if (absl::Status s = db->Verify("", &report); !s.ok()) return s.ToString();
  return later ? "old" : "new";
}

// Opens `dir` through `fs` and says which state it holds.
std::string Observe(const std::string& dir, FaultInjectingFileSystem* fs) {
  absl::StatusOr<std::unique_ptr<DB>> db = OpenDb(dir, fs);
  if (!db.ok()) return absl::StrCat("open failed: ", db.status().ToString());
  return Observe(db->get());
}

// VerifyDatabase (offline, read-only) of `dir`: "old", "new", or its problems.
std::string OfflineVerify(const std::string& dir) {
  absl::StatusOr<VerifyReport> report = VerifyDatabase(dir);
  if (!report.ok()) return report.status().ToString();
  if (!report->ok()) return absl::StrCat("offline verify: ", absl::StrJoin(report->problems, "; "));
  const bool later =
      absl::c_any_of(report->collections, [](const auto& c) { return c.spec.name == "later"; });
  return later ? "old" : "new";
}

class SnapshotFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "snapshot_fault_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    FaultInjectingFileSystem plain;  // no rules: POSIX with bookkeeping
    auto db = OpenDb(Path("template"), &plain);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->CreateCollection({"c", testing::kClusteredDim, Metric::kL2}).ok());
    ASSERT_TRUE(Upsert(**db, 0, kNewKeys).ok());
    ASSERT_TRUE((*db)->BuildIndex("c", kSpec).ok());
    ASSERT_TRUE((*db)->Snapshot(Path("snap")).ok());
    ASSERT_TRUE(Upsert(**db, kNewKeys, kOldKeys).ok());
    ASSERT_TRUE((*db)->FlushIndexUpdates("c").ok());
    ASSERT_TRUE((*db)->CreateCollection({"later", 4, Metric::kL2}).ok());
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string Path(const std::string& name) const { return root_ + "/" + name; }
  // A fresh copy of the old database, to restore into.
  std::string CopyOfOld(const std::string& name) {
    fs::remove_all(Path(name));
    fs::copy(Path("template"), Path(name), fs::copy_options::recursive);
    return Path(name);
  }

  std::string root_;
};

TEST_F(SnapshotFaultTest, TheFixtureHoldsTwoDistinctStates) {
  FaultInjectingFileSystem fs;
  EXPECT_EQ(Observe(CopyOfOld("db"), &fs), "old");
  ASSERT_TRUE(db::RestoreSnapshot(fs, Path("snap"), Path("db")).ok());
  EXPECT_EQ(Observe(Path("db"), &fs), "new");
}

struct Fault {
  FaultOp op;
  const char* path;
  int err;
  absl::StatusCode code;
  const char* after;  // the state the next Open finds
};

TEST_F(SnapshotFaultTest, AFailedRestoreLeavesTheOldDataOrFinishesAtOpen) {
  const Fault faults[] = {
      {FaultOp::kWrite, "restore.staging/index", ENOSPC, absl::StatusCode::kResourceExhausted,
       "old"},
      {FaultOp::kWrite, "restore.staging/rocksdb", EIO, absl::StatusCode::kInternal, "old"},
      {FaultOp::kSync, "restore.staging/rocksdb", ENOSPC, absl::StatusCode::kResourceExhausted,
       "old"},
      {FaultOp::kSync, "restore.staging/index", EIO, absl::StatusCode::kInternal, "old"},
      {FaultOp::kWrite, "READY", ENOSPC, absl::StatusCode::kResourceExhausted, "old"},
      // After READY: the swap is interrupted, and Open completes it.
      {FaultOp::kRename, "restore.staging/index", EIO, absl::StatusCode::kInternal, "new"},
  };
  for (const Fault& f : faults) {
    SCOPED_TRACE(absl::StrCat(f.path, " errno ", f.err));
    const std::string dir = CopyOfOld("db");
    FaultInjectingFileSystem fs;
    fs.Fail(f.op, f.path, f.err, /*one_shot=*/false);
    absl::Status s = db::RestoreSnapshot(fs, Path("snap"), dir);
    EXPECT_EQ(s.code(), f.code) << s;
    EXPECT_GT(fs.injected(), 0u);
    // Before the swap a failure cleans up at once (a full disk gets its space back).
    EXPECT_EQ(fs::exists(dir + "/restore.staging"), f.after == std::string("new"));
    fs.Clear();
    EXPECT_EQ(Observe(dir, &fs), f.after);
    EXPECT_FALSE(fs::exists(dir + "/restore.staging"));
    // Once the fault is gone, the restore goes through.
    ASSERT_TRUE(db::RestoreSnapshot(fs, Path("snap"), dir).ok());
    EXPECT_EQ(Observe(dir, &fs), "new");
  }
}

TEST_F(SnapshotFaultTest, APowerLossAtAnyStepOfARestoreLeavesOldOrNew) {
  int old_states = 0, new_states = 0;
  uint64_t step = 0;
  for (; step < kMaxSteps; ++step) {
    SCOPED_TRACE(absl::StrCat("power lost after ", step, " operations"));
    const std::string dir = CopyOfOld("db");
    FaultInjectingFileSystem fs;
    fs.PowerOffAfter(step);
    const absl::Status s = db::RestoreSnapshot(fs, Path("snap"), dir);
    ASSERT_TRUE(fs.DropUnsyncedData().ok());
    // Offline verify, before the Open that finishes the restore, checks what that Open installs.
    const std::string offline = OfflineVerify(dir);
    const std::string state = Observe(dir, &fs);
    EXPECT_EQ(offline, state);
    if (s.ok()) {
      EXPECT_EQ(state, "new");
      break;  // the restore finished before the power went
    }
    EXPECT_TRUE(state == "old" || state == "new") << state;
    old_states += state == "old";
    new_states += state == "new";
  }
  std::cout << "restore: " << step << " steps; power lost at each: old " << old_states << ", new "
            << new_states << "\n";
  EXPECT_LT(step, kMaxSteps);
  EXPECT_GT(old_states, 0);  // crashes before READY
  EXPECT_GT(new_states, 0);  // and after it, finished by Open
}

absl::StatusCode CodeOf(int err) {
  return err == ENOSPC ? absl::StatusCode::kResourceExhausted : absl::StatusCode::kInternal;
}

// The names of the snapshots ListSnapshots finds under `root`.
std::string Listed(FaultInjectingFileSystem& fs, const std::string& root) {
  absl::StatusOr<std::vector<SnapshotInfo>> all = db::ListSnapshots(fs, root);
  if (!all.ok()) return all.status().ToString();
  std::vector<std::string> names;
  for (const SnapshotInfo& info : *all) names.push_back(info.name);
  return absl::StrJoin(names, ",");
}

// EIO, then ENOSPC, at each write, fsync and rename of a restore in turn: the call fails with
// the errno's canonical code naming the file, the snapshot is untouched, the next Open finds the
// old data (failed before READY was durable) or the new data whole (after), and a retry succeeds.
TEST_F(SnapshotFaultTest, AnErrorAtAnyStepOfARestoreIsReportedAndARetrySucceeds) {
  for (int err : {EIO, ENOSPC}) {
    int old_states = 0, new_states = 0;
    uint64_t step = 0;
    for (; step < kMaxSteps; ++step) {
      SCOPED_TRACE(absl::StrCat("errno ", err, " at step ", step));
      const std::string dir = CopyOfOld("db");
      FaultInjectingFileSystem fs;
      fs.FailAfter(step, dir, err);
      const absl::Status s = db::RestoreSnapshot(fs, Path("snap"), dir);
      if (fs.injected() == 0) {
        ASSERT_TRUE(s.ok()) << s;  // every step went through: the restore is whole
        EXPECT_EQ(Observe(dir, &fs), "new");
        break;
      }
      EXPECT_EQ(s.code(), CodeOf(err)) << s;
      EXPECT_TRUE(absl::StrContains(s.message(), dir)) << s;
      fs.Clear();
      EXPECT_TRUE(db::DescribeSnapshot(fs, Path("snap")).ok());
      const std::string state = Observe(dir, &fs);
      EXPECT_TRUE(state == "old" || state == "new") << state;
      old_states += state == "old";
      new_states += state == "new";
      EXPECT_FALSE(fs::exists(dir + "/restore.staging"));
      ASSERT_TRUE(db::RestoreSnapshot(fs, Path("snap"), dir).ok());
      EXPECT_EQ(Observe(dir, &fs), "new");
    }
    std::cout << "restore, errno " << err << ": " << step << " steps; failed at each: old "
              << old_states << ", new " << new_states << "\n";
    EXPECT_LT(step, kMaxSteps);
    EXPECT_GT(old_states, 0);  // failures while staging
    EXPECT_GT(new_states, 0);  // and mid-swap, finished by Open
  }
}

class SnapshotWriteFaultTest : public SnapshotFaultTest, protected testing::FaultDb {
 protected:
  void SetUp() override {
    SnapshotFaultTest::SetUp();
    dir_ = CopyOfOld("db");
    Open();
  }
  void TearDown() override {
    db_.reset();
    SnapshotFaultTest::TearDown();
  }
  // The snapshot `name` is complete and restores to the old data (what db_ held at the time).
  void ExpectRestoresToOld(const std::string& name) {
    FaultInjectingFileSystem plain;
    const std::string target = Path("restored");
    fs::remove_all(target);
    ASSERT_TRUE(db::RestoreSnapshot(plain, Path(name), target).ok());
    EXPECT_EQ(Observe(target, &plain), "old");
  }
};

TEST_F(SnapshotWriteFaultTest, AFailedSnapshotLeavesNothingAndTheDatabaseServes) {
  const Fault faults[] = {
      {FaultOp::kWrite, "s.tmp/index", ENOSPC, absl::StatusCode::kResourceExhausted, ""},
      {FaultOp::kSync, "s.tmp/index", EIO, absl::StatusCode::kInternal, ""},
      {FaultOp::kSync, "s.tmp/rocksdb", EIO, absl::StatusCode::kInternal, ""},
      {FaultOp::kWrite, "s.tmp/SNAPSHOT", ENOSPC, absl::StatusCode::kResourceExhausted, ""},
      {FaultOp::kRename, "s.tmp", EIO, absl::StatusCode::kInternal, ""},
  };
  for (const Fault& f : faults) {
    SCOPED_TRACE(absl::StrCat(f.path, " errno ", f.err));
    fs_.Fail(f.op, f.path, f.err, /*one_shot=*/false);
    absl::Status s = db_->Snapshot(Path("s"));
    EXPECT_EQ(s.code(), f.code) << s;
    fs_.Clear();
    EXPECT_FALSE(fs::exists(Path("s")));
    EXPECT_FALSE(fs::exists(Path("s.tmp")));
    EXPECT_TRUE(absl::IsNotFound(db::DescribeSnapshot(fs_, Path("s")).status()));
    Record r = ClusteredRecord(0);
    EXPECT_TRUE(db_->Upsert("c", {&r, 1}, {.sync = true}).ok());
  }
  ASSERT_TRUE(db_->Snapshot(Path("s")).ok());
  db_.reset();
  EXPECT_EQ(Observe(dir_, &fs_), "old");
  ExpectRestoresToOld("s");
}

// EIO, then ENOSPC, at each write, fsync and rename of a snapshot in turn: the call fails with
// the errno's canonical code naming the file, nothing lists as a snapshot, the database serves
// its data, and a retry succeeds.
TEST_F(SnapshotWriteFaultTest, AnErrorAtAnyStepOfASnapshotIsReportedAndARetrySucceeds) {
  const std::string before = Listed(fs_, root_);  // "snap"
  for (int err : {EIO, ENOSPC}) {
    uint64_t step = 0;
    for (; step < kMaxSteps; ++step) {
      SCOPED_TRACE(absl::StrCat("errno ", err, " at step ", step));
      const uint64_t injected = fs_.injected();
      fs_.FailAfter(step, Path("s.tmp"), err);
      const absl::Status s = db_->Snapshot(Path("s"));
      fs_.Clear();
      if (fs_.injected() == injected) {
        ASSERT_TRUE(s.ok()) << s;  // every step went through
        ExpectRestoresToOld("s");
        fs::remove_all(Path("s"));
        break;
      }
      EXPECT_EQ(s.code(), CodeOf(err)) << s;
      EXPECT_TRUE(absl::StrContains(s.message(), Path("s.tmp"))) << s;
      EXPECT_FALSE(fs::exists(Path("s")));
      EXPECT_FALSE(fs::exists(Path("s.tmp")));
      EXPECT_EQ(Listed(fs_, root_), before);
      EXPECT_EQ(Observe(db_.get()), "old");
      ASSERT_TRUE(db_->Snapshot(Path("s")).ok());
      EXPECT_TRUE(db::DescribeSnapshot(fs_, Path("s")).ok());
      fs::remove_all(Path("s"));
    }
    std::cout << "snapshot, errno " << err << ": " << step << " steps\n";
    EXPECT_LT(step, kMaxSteps);
    EXPECT_GT(step, 3u);
  }
}

TEST_F(SnapshotWriteFaultTest, APowerLossAtAnyStepOfASnapshotKeepsTheDataAndNoHalfSnapshot) {
  int complete = 0, absent = 0;
  uint64_t step = 0;
  for (; step < kMaxSteps; ++step) {
    SCOPED_TRACE(absl::StrCat("power lost after ", step, " operations"));
    const std::string name = absl::StrCat("s", step);
    fs_.PowerOffAfter(step);
    const absl::Status s = db_->Snapshot(Path(name));
    fs_.PowerOff();  // a no-op when it already went
    db_.reset();
    ASSERT_TRUE(fs_.DropUnsyncedData().ok());
    Open();
    EXPECT_EQ(Observe(db_.get()), "old");
    if (db::DescribeSnapshot(fs_, Path(name)).ok()) {
      ++complete;
      ExpectRestoresToOld(name);
    } else {
      ++absent;
    }
    if (s.ok()) break;
  }
  std::cout << "snapshot: " << step << " steps; power lost at each: complete " << complete
            << ", absent " << absent << "\n";
  EXPECT_LT(step, kMaxSteps);
  EXPECT_GT(absent, 0);
  // Complete once its rename returns, even if the power goes before the last directory fsync.
  // (Background work makes the count of steps vary a little from round to round.)
  EXPECT_GT(complete, 0);
}

}  // namespace
}  // namespace shoal

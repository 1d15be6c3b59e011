// Aliases, compaction, snapshots and restore through the public DB API.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "shoal/db.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;

std::string TempDir() {
  std::string pattern = ::testing::TempDir() + "db_admin_test_XXXXXX";
  EXPECT_NE(mkdtemp(pattern.data()), nullptr);
  return pattern;
}

std::unique_ptr<DB> OpenDb(const std::string& dir) {
  absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(dir, Options{});
  EXPECT_TRUE(db.ok()) << db.status();
  return db.ok() ? *std::move(db) : nullptr;
}

std::vector<Record> Records(uint64_t first, size_t n) {
  std::vector<Record> records(n);
  for (size_t i = 0; i < n; ++i) {
    records[i].key = first + i;
    records[i].vector = {static_cast<float>(first + i), 1.0f};
  }
  return records;
}

class DbAdminTest : public ::testing::Test {
 protected:
  void SetUp() override { root_ = TempDir(); }
  void TearDown() override { fs::remove_all(root_); }
  std::string root_;
};

TEST_F(DbAdminTest, AliasesResolveEverywhereAndSurviveReopen) {
  const std::string dir = root_ + "/db";
  {
    std::unique_ptr<DB> db = OpenDb(dir);
    ASSERT_TRUE(db->CreateCollection({.name = "v1", .dimension = 2}).ok());
    ASSERT_TRUE(db->CreateCollection({.name = "v2", .dimension = 2}).ok());
    ASSERT_TRUE(db->CreateAlias("live", "v1").ok());
    EXPECT_TRUE(absl::IsInvalidArgument(db->CreateAlias("other", "live")));  // alias of alias
    EXPECT_TRUE(absl::IsAlreadyExists(db->CreateCollection({.name = "live", .dimension = 2})));
    EXPECT_TRUE(absl::IsInvalidArgument(db->CreateAlias("bad name", "v1")));
    ASSERT_TRUE(db->Upsert("live", Records(0, 3), {}).ok());
    EXPECT_EQ(db->DescribeCollection("v1")->num_vectors, 3u);
    ASSERT_TRUE(db->AlterAlias("live", "v2").ok());
    EXPECT_TRUE(absl::IsNotFound(db->AlterAlias("missing", "v2")));
    EXPECT_TRUE(db->Search("live", std::vector<float>{0, 1}, {.k = 1})->at(0).empty());
    EXPECT_TRUE(absl::IsFailedPrecondition(db->DropCollection("v2")));
  }
  std::unique_ptr<DB> db = OpenDb(dir);
  absl::StatusOr<std::vector<AliasInfo>> aliases = db->ListAliases();
  ASSERT_TRUE(aliases.ok());
  EXPECT_EQ(*aliases, (std::vector<AliasInfo>{{"live", "v2"}}));
  EXPECT_EQ(db->DescribeCollection("live")->spec.name, "v2");
  EXPECT_EQ(db->DescribeCollection("v2")->aliases, std::vector<std::string>{"live"});
  EXPECT_TRUE(db->HasCollection("live"));
  EXPECT_TRUE(db->HasCollection("v2"));
  ASSERT_TRUE(db->DropAlias("live").ok());
  ASSERT_TRUE(db->DropCollection("v2").ok());
  EXPECT_FALSE(db->HasCollection("live"));
  EXPECT_FALSE(db->HasCollection("v2"));
  EXPECT_TRUE(db->HasCollection("v1"));
  ASSERT_TRUE(db->Compact("").ok());
  ASSERT_TRUE(db->Compact("v1").ok());
  EXPECT_TRUE(absl::IsNotFound(db->Compact("v2")));
}

TEST_F(DbAdminTest, SnapshotThenRestoreGoesBackInTime) {
  const std::string dir = root_ + "/db";
  const std::string snapshot = root_ + "/snap";
  {
    std::unique_ptr<DB> db = OpenDb(dir);
    ASSERT_TRUE(db->CreateCollection({.name = "c", .dimension = 2}).ok());
    ASSERT_TRUE(db->Upsert("c", Records(0, 300), {}).ok());
    ASSERT_TRUE(db->BuildIndex("c", "spann:centroid_ratio=0.05,seed=1").ok());
    ASSERT_TRUE(db->Snapshot(snapshot).ok());
    EXPECT_TRUE(absl::IsAlreadyExists(db->Snapshot(snapshot)));
    ASSERT_TRUE(db->Upsert("c", Records(1000, 5), {}).ok());
    ASSERT_TRUE(db->CreateCollection({.name = "later", .dimension = 2}).ok());
  }
  ASSERT_TRUE(DB::RestoreSnapshot(snapshot, dir).ok());
  std::unique_ptr<DB> db = OpenDb(dir);
  absl::StatusOr<std::vector<CollectionInfo>> list = db->ListCollections();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].num_vectors, 300u);
  EXPECT_EQ((*list)[0].index.rfind("spann", 0), 0u);
  EXPECT_EQ(db->Search("c", std::vector<float>{42, 1}, {.k = 1})->at(0).at(0).key,
            Key(uint64_t{42}));
  EXPECT_TRUE(absl::IsNotFound(DB::RestoreSnapshot(root_ + "/nothing", dir)));
}

TEST_F(DbAdminTest, ListSnapshotsNamesOnlyCompleteOnes) {
  const std::string snapshots = root_ + "/snapshots";
  {
    std::unique_ptr<DB> db = OpenDb(root_ + "/db");
    ASSERT_TRUE(db->CreateCollection({.name = "c", .dimension = 2}).ok());
    ASSERT_TRUE(db->Upsert("c", Records(0, 50), {}).ok());
    fs::create_directories(snapshots);
    ASSERT_TRUE(db->Snapshot(snapshots + "/b").ok());
    ASSERT_TRUE(db->Snapshot(snapshots + "/a").ok());
  }
  fs::create_directories(snapshots + "/half.tmp/rocksdb");  // a crash mid-snapshot
  fs::create_directories(snapshots + "/other");
  absl::StatusOr<std::vector<SnapshotInfo>> all = DB::ListSnapshots(snapshots);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].name, "a");
  EXPECT_EQ((*all)[1].name, "b");
  EXPECT_GT((*all)[0].files, 1u);
  EXPECT_GT((*all)[0].bytes, 0u);
  EXPECT_GT((*all)[0].created_unix_seconds, 0);
  EXPECT_TRUE(absl::IsNotFound(DB::DescribeSnapshot(snapshots + "/half.tmp").status()));
  EXPECT_TRUE(absl::IsNotFound(DB::DescribeSnapshot(snapshots + "/missing").status()));
}

TEST_F(DbAdminTest, OpenFinishesARestoreInterruptedAfterStaging) {
  const std::string dir = root_ + "/db";
  const std::string snapshot = root_ + "/snap";
  {
    std::unique_ptr<DB> db = OpenDb(dir);
    ASSERT_TRUE(db->CreateCollection({.name = "old", .dimension = 2}).ok());
    ASSERT_TRUE(db->Snapshot(snapshot).ok());
    ASSERT_TRUE(db->DropCollection("old").ok());
    ASSERT_TRUE(db->CreateCollection({.name = "new", .dimension = 2}).ok());
  }
  // What RestoreSnapshot leaves if it dies after staging and swapping in rocksdb/ only.
  const fs::path staging = fs::path(dir) / "restore.staging";
  fs::create_directories(staging);
  fs::copy(fs::path(snapshot) / "index", staging / "index", fs::copy_options::recursive);
  fs::remove_all(fs::path(dir) / "rocksdb");
  fs::copy(fs::path(snapshot) / "rocksdb", fs::path(dir) / "rocksdb", fs::copy_options::recursive);
  std::ofstream(staging / "READY") << "ready\n";
  std::unique_ptr<DB> db = OpenDb(dir);
  ASSERT_NE(db, nullptr);
  EXPECT_TRUE(db->DescribeCollection("old").ok());
  EXPECT_TRUE(absl::IsNotFound(db->DescribeCollection("new").status()));
  EXPECT_FALSE(fs::exists(staging));

  // A staging directory without READY is an interrupted copy: discarded, data kept.
  db.reset();
  fs::create_directories(staging / "rocksdb");
  db = OpenDb(dir);
  EXPECT_TRUE(db->DescribeCollection("old").ok());
  EXPECT_FALSE(fs::exists(staging));
}

}  // namespace
}  // namespace shoal

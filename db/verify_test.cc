// DB::Verify: clean on a healthy database (flat and SPANN, after updates and deletes), and
// DataLoss naming file and offset when a posting or vector page is corrupted on disk.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "shoal/db.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kDim = 8;

Record R(uint64_t key, float salt = 0) {
  Record r;
  r.key = key;
  for (uint32_t i = 0; i < kDim; ++i) {
    r.vector.push_back(static_cast<float>((key * 131 + i * 7) % 101) + salt);
  }
  return r;
}

class VerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "verify_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    Reopen();
    ASSERT_TRUE(db_->CreateCollection({"c", kDim, Metric::kL2}).ok());
    std::vector<Record> recs;
    for (uint64_t k = 0; k < 600; ++k) recs.push_back(R(k));
    ASSERT_TRUE(db_->Upsert("c", recs, {}).ok());
  }
  void TearDown() override {
    db_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    db_.reset();
    Options options;
    options.build_threads = 1;
    auto db = DB::Open(dir_, options);
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
  }
  // The one index directory's file `name`.
  std::string IndexFile(const std::string& name) {
    for (const auto& e : std::filesystem::directory_iterator(dir_ + "/index")) {
      return e.path().string() + "/" + name;
    }
    return "";
  }
  void FlipByte(const std::string& path, uint64_t offset) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(&c, 1);
  }
  void ChurnAfterBuild() {
    ASSERT_TRUE(db_->BuildIndex("c", "spann:centroid_ratio=0.05,replicas=2").ok());
    std::vector<Record> recs;
    for (uint64_t k = 550; k < 650; ++k) recs.push_back(R(k, 0.25f));  // 50 rewrites, 50 new
    ASSERT_TRUE(db_->Upsert("c", recs, {}).ok());
    std::vector<Key> gone = {uint64_t{1}, uint64_t{2}, uint64_t{600}};
    ASSERT_TRUE(db_->Delete("c", gone, {}).ok());
  }

  std::string dir_;
  std::unique_ptr<DB> db_;
};

TEST_F(VerifyTest, CleanFlatCollection) {
  VerifyReport report;
  ASSERT_TRUE(db_->Verify("c", &report).ok());
  ASSERT_EQ(report.collections.size(), 1u);
  EXPECT_EQ(report.collections[0].records, 600u);
  EXPECT_EQ(report.collections[0].keys, 600u);
  EXPECT_EQ(report.collections[0].vectors_in_delta, 600u);
  EXPECT_EQ(report.collections[0].index, "flat");
}

TEST_F(VerifyTest, CleanSpannCollectionAfterUpdatesAndDeletesAndReopen) {
  ChurnAfterBuild();
  for (int pass = 0; pass < 2; ++pass) {
    VerifyReport report;
    absl::Status s = db_->Verify("", &report);
    ASSERT_TRUE(s.ok()) << s;
    const VerifyReport::CollectionReport& c = report.collections.at(0);
    EXPECT_EQ(c.records, 647u);
    // Verify first moves buffered writes into the postings (online updates): every record is in
    // a posting; each rewrite (50) and delete (3, one of a key written after the build) left a
    // tombstone on the id it replaced.
    EXPECT_EQ(c.vectors_in_postings, 647u);
    EXPECT_EQ(c.vectors_in_delta, 0u);
    EXPECT_EQ(c.stale_marks, 53u);
    EXPECT_GT(c.index_postings, 0u);
    EXPECT_EQ(c.index_vectors, c.vectors_in_postings);
    Reopen();
  }
}

TEST_F(VerifyTest, OfflineVerifyAgreesWithTheOpenDatabase) {
  ChurnAfterBuild();
  VerifyReport online;
  ASSERT_TRUE(db_->Verify("", &online).ok());
  db_.reset();
  auto offline = VerifyDatabase(dir_);
  ASSERT_TRUE(offline.ok()) << offline.status();
  EXPECT_TRUE(offline->ok()) << offline->problems.front();
  ASSERT_EQ(offline->collections.size(), 1u);
  EXPECT_EQ(offline->collections[0].records, online.collections[0].records);
  EXPECT_EQ(offline->collections[0].vectors_in_postings, online.collections[0].vectors_in_postings);
  EXPECT_EQ(offline->collections[0].vectors_in_delta, online.collections[0].vectors_in_delta);
  Reopen();
}

TEST_F(VerifyTest, ReportsACorruptPostingPageWithFileAndOffset) {
  ChurnAfterBuild();
  db_.reset();
  FlipByte(IndexFile("postings.dat"), 4096 + 100);  // a payload byte of the second page
  Reopen();
  VerifyReport report;
  absl::Status s = db_->Verify("c", &report);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  ASSERT_FALSE(report.problems.empty());
  EXPECT_THAT(report.problems[0], HasSubstr("postings.dat"));
  EXPECT_THAT(report.problems[0], HasSubstr("offset 4096"));
}

TEST_F(VerifyTest, ReportsACorruptVectorPage) {
  ChurnAfterBuild();
  db_.reset();
  FlipByte(IndexFile("vectors.dat"), 200);
  Reopen();
  VerifyReport report;
  EXPECT_EQ(db_->Verify("c", &report).code(), absl::StatusCode::kDataLoss);
  ASSERT_FALSE(report.problems.empty());
  EXPECT_THAT(report.problems[0], HasSubstr("vectors.dat"));
}

TEST_F(VerifyTest, UnknownCollectionIsNotFound) {
  VerifyReport report;
  EXPECT_EQ(db_->Verify("nope", &report).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace shoal

// Hand-damaged RocksDB files and the offline tools (issue 20): a flipped WAL byte must fail the
// open loudly instead of dropping every acknowledged write after it; a salvage keeps what
// precedes the damage after copying the WAL aside; `VerifyDatabase` / `DescribeDatabase` never
// write into the directory they inspect, and report a truncated MANIFEST instead of an empty
// database.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "shoal/db.h"
#include "shoal/verify.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr int kWrites = 400;

// path relative to the directory -> contents, of every regular file under `dir` (without
// RocksDB's info logs, LOG*, when `with_info_logs` is false).
std::map<std::string, std::string> Files(const std::string& dir, bool with_info_logs = true) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    if (!with_info_logs && entry.path().filename().string().starts_with("LOG")) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream contents;
    contents << in.rdbuf();
    out[fs::relative(entry.path(), dir).string()] = contents.str();
  }
  return out;
}

std::vector<std::string> FilesEndingIn(const std::string& dir, std::string_view suffix) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().string().ends_with(suffix)) out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class DamagedFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "damaged_files_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // kWrites synced single-record upserts, all still in the WAL when the DB closes.
  void WriteSynced(bool with_index) {
    auto db = DB::Open(dir_, {});
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->CreateCollection({"c", 4, Metric::kL2}).ok());
    for (int i = 0; i < kWrites; ++i) {
      std::vector<Record> r(1);
      r[0].key = static_cast<uint64_t>(i);
      r[0].vector = {static_cast<float>(i), 1, 2, static_cast<float>(i % 7)};
      ASSERT_TRUE((*db)->Upsert("c", r, {.sync = true}).ok());
    }
    if (with_index) {
      ASSERT_TRUE((*db)->Compact("").ok());  // records into SSTs
      ASSERT_TRUE((*db)->BuildIndex("c", "spann:centroid_ratio=0.02").ok());
    }
  }

  uint64_t Count(DB* db) {
    auto info = db->DescribeCollection("c");
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? info->num_vectors : 0;
  }

  std::string rocks() const { return dir_ + "/rocksdb"; }
  std::string dir_;
};

TEST_F(DamagedFilesTest, AFlippedWalByteFailsTheOpenAndSalvageKeepsThePrefix) {
  WriteSynced(/*with_index=*/false);
  std::vector<std::string> wals = FilesEndingIn(rocks(), ".log");
  ASSERT_FALSE(wals.empty());
  const std::string wal = wals.back();
  {
    std::fstream f(wal, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    const std::streamoff at = f.tellg() / 10;
    f.seekg(at);
    char c = 0;
    f.read(&c, 1);
    c ^= 0x10;
    f.seekp(at);
    f.write(&c, 1);
  }
  const auto damaged = Files(dir_);
  const auto damaged_without_logs = Files(dir_, /*with_info_logs=*/false);

  // Before the fix: the open succeeded with only the writes before the damaged record.
  auto db = DB::Open(dir_, {});
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kDataLoss) << db.status();
  EXPECT_THAT(db.status().message(), HasSubstr("salvage"));
  EXPECT_EQ(Files(dir_, /*with_info_logs=*/false), damaged_without_logs)
      << "the failed open changed more than RocksDB's info log";
  const auto after_open = Files(dir_);
  auto report = VerifyDatabase(dir_);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kDataLoss) << report.status();
  EXPECT_EQ(Files(dir_), after_open) << "verify changed the directory";

  Options salvage;
  salvage.salvage_damaged_wal = true;
  db = DB::Open(dir_, salvage);
  ASSERT_TRUE(db.ok()) << db.status();
  const uint64_t kept = Count(db->get());
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, static_cast<uint64_t>(kWrites));
  db->reset();
  // The damaged WAL, byte for byte, is kept aside.
  std::vector<std::string> quarantined;
  for (const auto& entry : fs::recursive_directory_iterator(rocks() + ".quarantine")) {
    if (entry.is_regular_file()) quarantined.push_back(entry.path().string());
  }
  ASSERT_EQ(quarantined.size(), wals.size());
  EXPECT_EQ(Files(fs::path(quarantined.back()).parent_path().string())
                .at(fs::path(wal).filename().string()),
            damaged.at(fs::relative(wal, dir_).string()));
  // And the salvaged database opens normally from now on.
  db = DB::Open(dir_, {});
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(Count(db->get()), kept);
}

TEST_F(DamagedFilesTest, OfflineToolsNeverWriteTheDirectory) {
  WriteSynced(/*with_index=*/true);
  const auto before = Files(dir_);
  auto described = DescribeDatabase(dir_);
  ASSERT_TRUE(described.ok()) << described.status();
  ASSERT_EQ(described->size(), 1u);
  EXPECT_EQ((*described)[0].num_vectors, static_cast<uint64_t>(kWrites));
  EXPECT_THAT((*described)[0].index, HasSubstr("spann"));
  auto report = VerifyDatabase(dir_);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok()) << report->problems.front();
  EXPECT_EQ(report->collections[0].records, static_cast<uint64_t>(kWrites));
  EXPECT_EQ(Files(dir_), before);
}

TEST_F(DamagedFilesTest, VerifyReportsATruncatedManifestAndDeletesNothing) {
  WriteSynced(/*with_index=*/true);
  const std::vector<std::string> tables = FilesEndingIn(rocks(), ".sst");
  ASSERT_FALSE(tables.empty());
  std::string manifest;
  for (const auto& entry : fs::directory_iterator(rocks())) {
    if (entry.path().filename().string().starts_with("MANIFEST-")) manifest = entry.path();
  }
  ASSERT_FALSE(manifest.empty());
  const uintmax_t size = fs::file_size(manifest);
  const std::string pristine = dir_ + ".pristine";
  fs::copy(dir_, pristine, fs::copy_options::recursive);
  for (double fraction : {0.2, 0.4, 0.6, 0.8, 0.95}) {
    SCOPED_TRACE(fraction);
    fs::remove_all(dir_);
    fs::copy(pristine, dir_, fs::copy_options::recursive);
    fs::resize_file(manifest, static_cast<uintmax_t>(size * fraction));
    const auto damaged = Files(dir_);
    auto report = VerifyDatabase(dir_);
    // Either RocksDB refuses the MANIFEST, or verify names the tables it lost: never a clean,
    // smaller database.
    if (report.ok()) {
      EXPECT_FALSE(report->ok()) << "verify called a truncated MANIFEST clean";
    }
    EXPECT_EQ(Files(dir_), damaged);
  }
  fs::remove_all(pristine);
}

// Issue 20: a bad centroids.ckpt or a missing index directory made the whole database refuse to
// open. Now only that collection is quarantined; the others serve, and the admin rebuilds or
// drops it.
class QuarantineTest : public DamagedFilesTest {
 protected:
  void MakeTwoIndexedCollections() {
    auto db = DB::Open(dir_, {});
    ASSERT_TRUE(db.ok()) << db.status();
    for (const char* name : {"a", "b"}) {
      ASSERT_TRUE((*db)->CreateCollection({name, 4, Metric::kL2}).ok());
      std::vector<Record> recs(300);
      for (size_t i = 0; i < recs.size(); ++i) {
        recs[i].key = static_cast<uint64_t>(i);
        recs[i].vector = {static_cast<float>(i), static_cast<float>(i % 11), 1, 2};
      }
      ASSERT_TRUE((*db)->Upsert(name, recs, {}).ok());
      ASSERT_TRUE((*db)->BuildIndex(name, "spann:centroid_ratio=0.05").ok());
    }
  }
  // The index directory of collection "a" (created first: the lowest collection id).
  std::string IndexDirOfA() {
    std::vector<std::string> dirs;
    for (const auto& e : fs::directory_iterator(dir_ + "/index")) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    return dirs.empty() ? "" : dirs.front();
  }
  void ExpectServes(DB* db, const char* name) {
    const std::vector<float> q = {17, 6, 1, 2};
    auto hits = db->Search(name, q, {.k = 1});
    ASSERT_TRUE(hits.ok()) << name << ": " << hits.status();
    EXPECT_EQ((*hits)[0][0].key, Key(uint64_t{17})) << name;
  }
};

TEST_F(QuarantineTest, ADamagedIndexQuarantinesOnlyItsCollectionUntilRebuilt) {
  MakeTwoIndexedCollections();
  const std::string ckpt = IndexDirOfA() + "/centroids.ckpt";
  ASSERT_TRUE(fs::exists(ckpt)) << ckpt;
  {
    std::fstream f(ckpt, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(ckpt) / 2));
    f.write("\xde\xad\xbe\xef", 4);
  }
  auto db = DB::Open(dir_, {});  // before the fix: DataLoss for the whole database
  ASSERT_TRUE(db.ok()) << db.status();
  ExpectServes(db->get(), "b");
  auto hits = (*db)->Search("a", std::vector<float>{1, 2, 3, 4}, {.k = 1});
  EXPECT_EQ(hits.status().code(), absl::StatusCode::kDataLoss) << hits.status();
  EXPECT_THAT(hits.status().message(), HasSubstr("quarantined"));
  auto info = (*db)->DescribeCollection("a");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_THAT(info->damage, HasSubstr("centroids.ckpt"));
  auto all = (*db)->ListCollections();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*db)->CreateCollection({"a", 4, Metric::kL2}).code(),
            absl::StatusCode::kAlreadyExists);

  ASSERT_TRUE((*db)->BuildIndex("a", "spann:centroid_ratio=0.05").ok());
  ExpectServes(db->get(), "a");
  EXPECT_EQ((*db)->DescribeCollection("a")->num_vectors, 300u);
  db->reset();
  db = DB::Open(dir_, {});
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_TRUE((*db)->DescribeCollection("a")->damage.empty());
  ExpectServes(db->get(), "a");
  VerifyReport report;
  EXPECT_TRUE((*db)->Verify("", &report).ok()) << ::testing::PrintToString(report.problems);
}

// Issue 20: a zeroed page of vectors.dat made a search fail with NOT_FOUND, which clients read as
// "no such collection"; a vector a posting lists but the file lacks is damage.
TEST_F(QuarantineTest, AZeroedVectorFilePageIsDataLossNotNotFound) {
  {
    auto db = DB::Open(dir_, {});
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->CreateCollection({"a", 4, Metric::kL2}).ok());
    std::vector<Record> recs(300);
    for (size_t i = 0; i < recs.size(); ++i) {
      recs[i].key = static_cast<uint64_t>(i);
      recs[i].vector = {static_cast<float>(i), static_cast<float>(i % 11), 1, 2};
    }
    ASSERT_TRUE((*db)->Upsert("a", recs, {}).ok());
    // Quantized: a search reranks from vectors.dat.
    ASSERT_TRUE((*db)->BuildIndex("a", "spann:centroid_ratio=0.05,quant=sq8").ok());
  }
  const std::string vectors = IndexDirOfA() + "/vectors.dat";
  ASSERT_TRUE(fs::exists(vectors)) << vectors;
  const auto size = fs::file_size(vectors);
  ASSERT_GT(size, 0u);
  {  // every page (at dimension 4 the first one holds the vectors near the query)
    std::fstream f(vectors, std::ios::in | std::ios::out | std::ios::binary);
    const std::string zeros(size, '\0');
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  auto db = DB::Open(dir_, {});
  ASSERT_TRUE(db.ok()) << db.status();
  auto hits = (*db)->Search("a", std::vector<float>{17, 6, 1, 2}, {.k = 10});
  EXPECT_EQ(hits.status().code(), absl::StatusCode::kDataLoss) << hits.status();
  EXPECT_THAT(hits.status().message(), HasSubstr("the index is damaged"));
}

TEST_F(QuarantineTest, AMissingIndexDirectoryQuarantinesAndDropRemovesIt) {
  MakeTwoIndexedCollections();
  fs::remove_all(IndexDirOfA());
  auto db = DB::Open(dir_, {});
  ASSERT_TRUE(db.ok()) << db.status();
  ExpectServes(db->get(), "b");
  EXPECT_FALSE((*db)->DescribeCollection("a")->damage.empty());
  ASSERT_TRUE((*db)->DropCollection("a").ok());
  EXPECT_EQ((*db)->DescribeCollection("a").status().code(), absl::StatusCode::kNotFound);
  db->reset();
  db = DB::Open(dir_, {});
  ASSERT_TRUE(db.ok()) << db.status();
  auto all = (*db)->ListCollections();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].spec.name, "b");
}

}  // namespace
}  // namespace shoal

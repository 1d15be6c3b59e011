// A real `shoald` whose data directory is on a small real file system (a tmpfs the test mounts)
// that fills up: the server stays up, writes fail with RESOURCE_EXHAUSTED, reads and searches go
// on, and writes, index builds and snapshots work again once space is freed — with nothing
// acknowledged lost across a restart. (The engine-level variant, with an SSD index whose
// maintenance meets the full disk, is tests/engine/disk_full_test.cc.)
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/test_seed.h"
#include "rpc/client/shoal_client.h"
#include "tests/e2e/shoald_process.h"
#include "tests/support/tmpfs_mount.h"

namespace shoal::e2e {
namespace {

using client::Client;
using client::SnapshotInfo;
using shoal::testing::TmpfsMount;

constexpr uint32_t kDimension = 128;
constexpr size_t kBatch = 200;

std::vector<Record> RandomRecords(uint64_t first_key, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<Record> records(kBatch);
  for (size_t i = 0; i < kBatch; ++i) {
    records[i].key = first_key + i;
    records[i].vector.resize(kDimension);
    for (float& x : records[i].vector) x = uniform(rng);
  }
  return records;
}

class DiskFullE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TmpfsMount>> fs = TmpfsMount::Create(32u << 20);
    if (absl::IsPermissionDenied(fs.status())) GTEST_SKIP() << fs.status().message();
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
    data_dir_ = fs_->path() + "/data";
    snapshot_dir_ = fs_->path() + "/snapshots";
    std::filesystem::create_directory(snapshot_dir_);
  }
  void TearDown() override {
    client_.reset();
    shoald_.reset();
    fs_.reset();
  }
  void Start() {
    shoald_ = std::make_unique<ShoaldProcess>();
    absl::Status started = shoald_->Start(data_dir_, {"--snapshot-dir", snapshot_dir_});
    ASSERT_TRUE(started.ok()) << started;
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(shoald_->address());
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }
  // Every acknowledged record is there with its vector, and a search for one finds it first.
  void ExpectReadsServe(const std::vector<Record>& acknowledged) {
    ASSERT_TRUE(client_->IsServing().value_or(false)) << shoald_->Stderr();
    std::vector<Key> keys;
    for (const Record& r : acknowledged) keys.push_back(r.key);
    absl::StatusOr<std::vector<std::optional<Record>>> got = client_->Get("docs", keys);
    ASSERT_TRUE(got.ok()) << got.status();
    for (size_t i = 0; i < acknowledged.size(); ++i) {
      ASSERT_TRUE((*got)[i].has_value()) << "key " << i;
      ASSERT_EQ((*got)[i]->vector, acknowledged[i].vector) << "key " << i;
    }
    const Record& probe = acknowledged[acknowledged.size() / 2];
    absl::StatusOr<std::vector<std::vector<Hit>>> hits =
        client_->Search("docs", probe.vector, {.k = 3});
    ASSERT_TRUE(hits.ok()) << hits.status();
    ASSERT_FALSE((*hits)[0].empty());
    EXPECT_EQ((*hits)[0][0].key, probe.key);
  }

  std::unique_ptr<TmpfsMount> fs_;
  std::string data_dir_;
  std::string snapshot_dir_;
  std::unique_ptr<ShoaldProcess> shoald_;
  std::unique_ptr<Client> client_;
};

TEST_F(DiskFullE2eTest, ServerStaysUpAndWritesResumeWhenSpaceReturns) {
  const uint32_t seed = base::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  std::mt19937 rng(seed);
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_TRUE(client_->CreateCollection({.name = "docs", .dimension = kDimension}).ok());
  std::vector<Record> acknowledged;
  uint64_t next_key = 0;
  for (int i = 0; i < 5; ++i) {
    std::vector<Record> batch = RandomRecords(next_key, rng);
    next_key += kBatch;
    ASSERT_EQ(client_->Upsert("docs", batch, /*sync=*/true).value_or(0), kBatch);
    acknowledged.insert(acknowledged.end(), batch.begin(), batch.end());
  }

  // The writes themselves fill the last megabyte: some are acknowledged, then one is refused.
  ASSERT_TRUE(fs_->Fill(/*keep_bytes=*/1 << 20).ok());
  absl::Status refused;
  for (int i = 0; i < 40 && refused.ok(); ++i) {
    std::vector<Record> batch = RandomRecords(next_key, rng);
    next_key += kBatch;
    absl::StatusOr<uint64_t> written = client_->Upsert("docs", batch, /*sync=*/true);
    refused = written.status();
    if (written.ok()) acknowledged.insert(acknowledged.end(), batch.begin(), batch.end());
  }
  ASSERT_TRUE(absl::IsResourceExhausted(refused)) << refused << "\nshoald stderr:\n"
                                                  << shoald_->Stderr();
  // The server died on the third synced write after the disk filled (RocksDB's info
  // log); twenty cover every retry of RocksDB's recovery meeting the full disk again.
  for (int i = 0; i < 20; ++i) {
    std::vector<Record> batch = RandomRecords(next_key, rng);
    next_key += kBatch;
    absl::StatusOr<uint64_t> written = client_->Upsert("docs", batch, /*sync=*/true);
    ASSERT_TRUE(absl::IsResourceExhausted(written.status()))
        << "write " << i << ": " << written.status() << "\nshoald stderr:\n"
        << shoald_->Stderr();
    ASSERT_NO_FATAL_FAILURE(ExpectReadsServe(acknowledged)) << "after write " << i;
  }
  absl::StatusOr<SnapshotInfo> snapshot = client_->Snapshot("full");
  EXPECT_TRUE(absl::IsResourceExhausted(snapshot.status())) << snapshot.status();
  absl::StatusOr<CollectionInfo> built = client_->BuildIndex("docs", "spann:posting_cap=64");
  EXPECT_TRUE(absl::IsResourceExhausted(built.status())) << built.status();
  ASSERT_NO_FATAL_FAILURE(ExpectReadsServe(acknowledged));

  // Space returns: the next write goes through, and so do a build and a snapshot.
  ASSERT_TRUE(fs_->Unfill().ok());
  for (int i = 0; i < 3; ++i) {
    std::vector<Record> batch = RandomRecords(next_key, rng);
    next_key += kBatch;
    absl::StatusOr<uint64_t> written = client_->Upsert("docs", batch, /*sync=*/true);
    ASSERT_TRUE(written.ok()) << "write " << i << " after freeing space: " << written.status();
    acknowledged.insert(acknowledged.end(), batch.begin(), batch.end());
  }
  built = client_->BuildIndex("docs", "spann:posting_cap=64");
  ASSERT_TRUE(built.ok()) << built.status();
  snapshot = client_->Snapshot("after");
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  ASSERT_NO_FATAL_FAILURE(ExpectReadsServe(acknowledged));

  // A restore needs room for a second copy: on a full disk it is refused and the server goes
  // on serving the database it had.
  ASSERT_TRUE(fs_->Fill().ok());
  absl::StatusOr<std::vector<CollectionInfo>> restored = client_->Restore("after");
  EXPECT_TRUE(absl::IsResourceExhausted(restored.status())) << restored.status();
  ASSERT_NO_FATAL_FAILURE(ExpectReadsServe(acknowledged));
  ASSERT_TRUE(fs_->Unfill().ok());

  // Nothing acknowledged is lost across a clean restart.
  client_.reset();
  ASSERT_EQ(shoald_->Terminate(), 0) << shoald_->Stderr();
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_NO_FATAL_FAILURE(ExpectReadsServe(acknowledged));
}

}  // namespace
}  // namespace shoal::e2e

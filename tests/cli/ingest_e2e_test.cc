// End-to-end: `shoal ingest` against a real shoald — Fashion-MNIST killed with SIGKILL midway
// and resumed from its checkpoint, ending with exactly 60000 vectors; bad input named by file
// and record; and `shoal offline dump|verify` on the data directory afterwards (verify also on
// a directory with a corrupted index page). Only loopback addresses are bound.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "shoal/db.h"
#include "tests/cli/child_process.h"
#include "tests/cli/shoald_test.h"
#include "tests/e2e/shoald_process.h"

namespace shoal::cli_test {
namespace {

constexpr char kFashionMnist[] = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";

// The number after "\"name\":" in a one-object JSON line (0 when absent).
uint64_t JsonNumber(const std::string& json, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  const size_t at = json.find(key);
  if (at == std::string::npos) return 0;
  const size_t end = json.find_first_of(",}", at);
  uint64_t value = 0;
  (void)absl::SimpleAtoi(json.substr(at + key.size(), end - at - key.size()), &value);
  return value;
}

uint64_t CheckpointDone(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  uint64_t done = 0;
  while (std::getline(in, line)) {
    if (line.rfind("done=", 0) == 0) (void)absl::SimpleAtoi(line.substr(5), &done);
  }
  return done;
}

class IngestE2eTest : public ShoaldTest {
 protected:
  std::vector<std::string> Ingest(const std::vector<std::string>& more) {
    std::vector<std::string> args = {"--server", shoald_->address(), "ingest"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  uint64_t Count(const std::string& collection) {
    RunResult r = RunShoal({"--server", shoald_->address(), "describe", collection});
    EXPECT_EQ(r.exit_status, 0) << r.err;
    return JsonNumber(r.out, "vectors");
  }
};

TEST_F(IngestE2eTest, FashionMnistKilledMidwayResumesToExactly60000) {
  struct stat st;
  ASSERT_EQ(stat(kFashionMnist, &st), 0) << kFashionMnist << " (dataset-fashion-mnist)";
  const std::string checkpoint = work_dir_ + "/fmnist.ckpt";
  const std::vector<std::string> args = {
      kFashionMnist, "--collection", "fmnist",    "--create", "--metric",     "l2",
      "--batch",     "500",          "--streams", "2",        "--checkpoint", checkpoint};
  // First run, throttled so that it is surely still going when killed.
  std::vector<std::string> throttled = Ingest(args);
  throttled.insert(throttled.end(), {"--max-rate", "10000"});
  BackgroundChild first;
  ASSERT_TRUE(first.Start(throttled, work_dir_ + "/first.log").ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(120);
  while (CheckpointDone(checkpoint) < 5000 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  first.Kill(SIGKILL);
  absl::StatusOr<int> killed = first.Wait(absl::Seconds(30));
  ASSERT_TRUE(killed.ok()) << killed.status();
  ASSERT_EQ(*killed, 128 + SIGKILL);
  const uint64_t saved = CheckpointDone(checkpoint);
  ASSERT_GE(saved, 5000u);
  ASSERT_LT(saved, 60000u);
  const uint64_t partial = Count("fmnist");
  EXPECT_GE(partial, saved);  // everything in the checkpoint was acknowledged
  EXPECT_LT(partial, 60000u);

  // The rerun continues from the checkpoint and ends with every row exactly once.
  RunResult second = RunShoal(Ingest(args));
  ASSERT_EQ(second.exit_status, 0) << second.err;
  EXPECT_EQ(JsonNumber(second.out, "rows"), 60000u) << second.out;
  EXPECT_EQ(JsonNumber(second.out, "resumed_from"), saved) << second.out;
  EXPECT_EQ(JsonNumber(second.out, "sent"), 60000u - saved) << second.out;
  EXPECT_EQ(CheckpointDone(checkpoint), 60000u);
  EXPECT_EQ(Count("fmnist"), 60000u);

  // Row r has key r: row 59999 is there, row 60000 is not.
  RunResult get = RunShoal(
      {"--server", shoald_->address(), "get", "fmnist", "59999", "60000", "--output", "csv"});
  ASSERT_EQ(get.exit_status, 0) << get.err;
  EXPECT_NE(get.out.find("\n59999,true,"), std::string::npos);
  EXPECT_NE(get.out.find("\n60000,false,"), std::string::npos);

  // A finished checkpoint makes a third run a no-op; another collection is refused.
  RunResult third = RunShoal(Ingest(args));
  ASSERT_EQ(third.exit_status, 0) << third.err;
  EXPECT_EQ(JsonNumber(third.out, "sent"), 0u) << third.out;
  std::vector<std::string> other = Ingest(args);
  other[5] = "other";  // --collection's value
  RunResult refused = RunShoal(other);
  EXPECT_EQ(refused.exit_status, 1);
  EXPECT_NE(refused.err.find("FAILED_PRECONDITION: --checkpoint"), std::string::npos)
      << refused.err;

  // Offline, with the server stopped: dump and verify see all 60000.
  ASSERT_EQ(shoald_->Terminate(), 0);
  RunResult dump = RunShoal({"offline", "--data", data_dir_, "dump"});
  ASSERT_EQ(dump.exit_status, 0) << dump.err;
  EXPECT_NE(dump.out.find("\"name\":\"fmnist\",\"dimension\":784"), std::string::npos) << dump.out;
  EXPECT_EQ(JsonNumber(dump.out, "vectors"), 60000u) << dump.out;
  RunResult verify = RunShoal({"offline", "--data", data_dir_, "verify"});
  ASSERT_EQ(verify.exit_status, 0) << verify.err;
  EXPECT_EQ(JsonNumber(verify.out, "records"), 60000u) << verify.out;
  EXPECT_EQ(JsonNumber(verify.out, "keys"), 60000u) << verify.out;
}

TEST_F(IngestE2eTest, BadInputNamesFileAndRecord) {
  // 5 records of dimension 4; record 3 holds a NaN.
  const std::string path = work_dir_ + "/bad.fvecs";
  {
    std::ofstream out(path, std::ios::binary);
    for (int r = 0; r < 5; ++r) {
      const int32_t dim = 4;
      out.write(reinterpret_cast<const char*>(&dim), 4);
      for (int j = 0; j < dim; ++j) {
        const float v = (r == 3 && j == 2) ? std::nanf("") : static_cast<float>(r + j);
        out.write(reinterpret_cast<const char*>(&v), 4);
      }
    }
  }
  RunResult r = RunShoal(Ingest({path, "--collection", "bad", "--create", "--batch", "2"}));
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("INVALID_ARGUMENT: " + path + ": record 3: value 2 is nan"),
            std::string::npos)
      << r.err;

  // A truncated file: the reader names the file and the record.
  std::filesystem::resize_file(path, 5 * 20 - 6);
  r = RunShoal(Ingest({path, "--collection", "bad"}));
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("record 4"), std::string::npos) << r.err;

  // Dimension mismatch with an existing collection; a missing collection without --create.
  ASSERT_EQ(
      RunShoal({"--server", shoald_->address(), "create", "d3", "--dimension", "3"}).exit_status,
      0);
  std::filesystem::resize_file(path, 3 * 20);
  r = RunShoal(Ingest({path, "--collection", "d3"}));
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("4 values per record, but collection 'd3' has dimension 3"),
            std::string::npos)
      << r.err;
  r = RunShoal(Ingest({path, "--collection", "absent"}));
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("NOT_FOUND: --collection"), std::string::npos) << r.err;
}

TEST(OfflineVerifyTest, FindsACorruptedIndexPage) {
  const std::string dir = e2e::MakeTempDir();
  {
    absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(dir, Options());
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->CreateCollection({.name = "v", .dimension = 16}).ok());
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    std::vector<Record> records(2000);
    for (size_t i = 0; i < records.size(); ++i) {
      records[i].key = uint64_t{i};
      for (int j = 0; j < 16; ++j) records[i].vector.push_back(normal(rng));
    }
    ASSERT_TRUE((*db)->Upsert("v", records, {.sync = true}).ok());
    absl::Status built = (*db)->BuildIndex("v", "spann:centroid_ratio=0.02");
    ASSERT_TRUE(built.ok()) << built;
  }
  RunResult clean = RunShoal({"offline", "--data", dir, "verify"});
  ASSERT_EQ(clean.exit_status, 0) << clean.err;
  EXPECT_EQ(JsonNumber(clean.out, "records"), 2000u) << clean.out;
  EXPECT_GT(JsonNumber(clean.out, "postings_checked"), 0u) << clean.out;
  EXPECT_EQ(JsonNumber(clean.out, "vectors_checked"), 2000u) << clean.out;

  // Flip one byte inside the first posting page's payload.
  std::string postings;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().filename() == "postings.dat") postings = entry.path().string();
  }
  ASSERT_FALSE(postings.empty());
  {
    std::fstream file(postings, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(100);
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5a);
    file.seekp(100);
    file.write(&byte, 1);
  }
  RunResult corrupt = RunShoal({"offline", "--data", dir, "verify"});
  EXPECT_EQ(corrupt.exit_status, 1);
  EXPECT_NE(corrupt.err.find("problem: collection 'v' index posting"), std::string::npos)
      << corrupt.err;
  EXPECT_NE(corrupt.err.find("checksum mismatch"), std::string::npos) << corrupt.err;
  EXPECT_NE(corrupt.err.find("error: DATA_LOSS"), std::string::npos) << corrupt.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shoal::cli_test

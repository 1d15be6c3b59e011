// End-to-end: `shoal ingest` loads every supported file format into a real shoald, and the
// stored vectors are exactly the file's rows under keys = row numbers (or a key prefix).
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "storage/dataset/test_files.h"
#include "tests/cli/child_process.h"
#include "tests/cli/shoald_test.h"
#include "tests/e2e/shoald_process.h"

namespace shoal::cli_test {
namespace {

using storage::testing::Bin;
using storage::testing::Npy;
using storage::testing::Vecs;
using storage::testing::WriteFile;

constexpr size_t kRows = 20;
constexpr size_t kCols = 6;

void WriteHdf5(const std::string& path, const std::vector<float>& train) {
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  hsize_t dims[2] = {kRows, kCols};
  hid_t space = H5Screate_simple(2, dims, nullptr);
  for (const char* name : {"train", "test"}) {
    hid_t dataset =
        H5Dcreate2(file, name, H5T_NATIVE_FLOAT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(dataset, 0);
    ASSERT_GE(H5Dwrite(dataset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, train.data()), 0);
    H5Dclose(dataset);
  }
  H5Sclose(space);
  H5Fclose(file);
}

class IngestFormatsE2eTest : public ShoaldTest {
 protected:
  // Ingests `path` into a new collection and checks rows 0 and kRows - 1 come back as `rows`.
  void IngestAndCheck(const std::string& path, const std::string& collection,
                      const std::vector<float>& rows, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "--server", shoald_->address(), "ingest",  path, "--collection",
        collection, "--create",         "--batch", "7",  "--streams",
        "3"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = RunShoal(args);
    ASSERT_EQ(r.exit_status, 0) << path << ": " << r.err;
    EXPECT_NE(r.out.find(absl::StrCat("\"rows\":", kRows)), std::string::npos) << r.out;
    const std::string prefix = extra.empty() ? "" : extra[1];
    const std::string last = absl::StrCat(prefix, kRows - 1);
    r = RunShoal(
        {"--server", shoald_->address(), "get", collection, prefix + "0", last, "--output", "csv"});
    ASSERT_EQ(r.exit_status, 0) << r.err;
    auto row_text = [&](size_t i) {
      return absl::StrJoin(rows.begin() + i * kCols, rows.begin() + (i + 1) * kCols, ",");
    };
    EXPECT_NE(r.out.find(absl::StrCat(prefix, "0,true,\"", row_text(0), "\"")), std::string::npos)
        << path << "\n"
        << r.out;
    EXPECT_NE(r.out.find(absl::StrCat(last, ",true,\"", row_text(kRows - 1), "\"")),
              std::string::npos)
        << path << "\n"
        << r.out;
  }
};

TEST_F(IngestFormatsE2eTest, LoadsEveryFormatExactly) {
  const std::vector<float> floats = storage::testing::Pattern<float>(kRows, kCols);
  std::vector<uint8_t> bytes(kRows * kCols);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 % 251);
  const std::vector<float> bytes_as_floats(bytes.begin(), bytes.end());

  WriteFile(work_dir_ + "/a.fvecs", Vecs<float>(floats, kCols));
  IngestAndCheck(work_dir_ + "/a.fvecs", "f_fvecs", floats);
  WriteFile(work_dir_ + "/a.bvecs", Vecs<uint8_t>(bytes, kCols));
  IngestAndCheck(work_dir_ + "/a.bvecs", "f_bvecs", bytes_as_floats);
  WriteFile(work_dir_ + "/a.fbin", Bin<float>(floats, kRows, kCols));
  IngestAndCheck(work_dir_ + "/a.fbin", "f_fbin", floats, {"--key-prefix", "img-"});
  WriteFile(work_dir_ + "/a.u8bin", Bin<uint8_t>(bytes, kRows, kCols));
  IngestAndCheck(work_dir_ + "/a.u8bin", "f_u8bin", bytes_as_floats);
  WriteFile(work_dir_ + "/a.npy", Npy<float>(1, "<f4", floats, kRows, kCols));
  IngestAndCheck(work_dir_ + "/a.npy", "f_npy", floats);
  WriteHdf5(work_dir_ + "/a.hdf5", floats);
  IngestAndCheck(work_dir_ + "/a.hdf5", "f_hdf5", floats);

  // --format must agree with the name.
  RunResult r = RunShoal({"--server", shoald_->address(), "ingest", work_dir_ + "/a.npy",
                          "--collection", "f_npy", "--format", "fvecs"});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("INVALID_ARGUMENT: --format: fvecs does not match"), std::string::npos)
      << r.err;
}

// A server whose ingest budget admits one batch at a time makes concurrent streams back off
// (each batch is fsynced, so it stays in flight long enough for the others to collide);
// the resent batches still land exactly once.
TEST(IngestBackoffE2eTest, BacksOffAndStillLoadsEveryRow) {
  const std::string data_dir = e2e::MakeTempDir();
  e2e::ShoaldProcess shoald;
  absl::Status started = shoald.Start(data_dir, {"--ingest-inflight-bytes", "1"});
  ASSERT_TRUE(started.ok()) << started;
  constexpr size_t kMany = 3000;
  const std::string file = data_dir + "-many.fvecs";
  WriteFile(file, Vecs<float>(storage::testing::Pattern<float>(kMany, 32), 32));
  RunResult r =
      RunShoal({"--server", shoald.address(), "ingest", file, "--collection", "many", "--create",
                "--batch", "100", "--streams", "4", "--window", "4", "--sync"});
  std::filesystem::remove(file);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.out.find("\"sent\":3000,"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"backoffs\":0}"), std::string::npos) << r.out;  // some backed off
  r = RunShoal({"--server", shoald.address(), "describe", "many"});
  EXPECT_NE(r.out.find("\"vectors\":3000,"), std::string::npos) << r.out;
  EXPECT_EQ(shoald.Terminate(), 0);
  std::filesystem::remove_all(data_dir);
}

TEST_F(IngestFormatsE2eTest, ProgressBarOnATerminal) {
  WriteFile(work_dir_ + "/p.fvecs",
            Vecs<float>(storage::testing::Pattern<float>(kRows, kCols), kCols));
  PtyChild ingest;
  ASSERT_TRUE(ingest
                  .Start({"--server", shoald_->address(), "ingest", work_dir_ + "/p.fvecs",
                          "--collection", "progress", "--create", "--batch", "5"},
                         {})
                  .ok());
  absl::StatusOr<std::string> out = ingest.ReadUntil("rows/s");
  ASSERT_TRUE(out.ok()) << out.status();
  out = ingest.ReadUntil("backoffs");  // the result table follows the bar
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NE(out->find("[####################] 20/20 rows 100%"), std::string::npos) << *out;
  absl::StatusOr<int> status = ingest.Wait(absl::Seconds(30));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, 0);
}

}  // namespace
}  // namespace shoal::cli_test

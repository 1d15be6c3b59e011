#include "storage/io/block_reader.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shoal::storage {
namespace {

using ::testing::HasSubstr;

// A directory on a real disk: O_DIRECT is refused on some tmpfs mounts.
std::string MakeTestDir() {
  const char* base = getenv("SHOAL_TEST_DISK_DIR");
  std::string tmpl = std::string(base ? base : "/var/tmp") + "/shoal_io_XXXXXX";
  char* dir = mkdtemp(tmpl.data());
  EXPECT_NE(dir, nullptr);
  return tmpl;
}

constexpr size_t kFileBytes = 8 << 20;

class BlockReaderTest : public ::testing::TestWithParam<IoBackend> {
 protected:
  void SetUp() override {
    dir_ = MakeTestDir();
    path_ = dir_ + "/data";
    std::mt19937_64 rng(42);
    data_.resize(kFileBytes);
    for (auto& b : data_) b = static_cast<uint8_t>(rng());
    int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, data_.data(), data_.size()), static_cast<ssize_t>(data_.size()));
    ASSERT_EQ(::fdatasync(fd), 0);
    ::close(fd);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<BlockReader> Open(IoBackend b, uint32_t max_in_flight = 64) {
    auto r = BlockReader::Open(path_, b, max_in_flight);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : nullptr;
  }

  // Reads `reqs` and checks every byte against data_.
  void ReadAndCompare(BlockReader& reader, const std::vector<ReadRequest>& reqs) {
    std::vector<int> seen(reqs.size(), 0);
    absl::Status s = reader.ReadBatch(reqs, [&](size_t i, std::span<const uint8_t> b) {
      EXPECT_EQ(b.size(), reqs[i].length);
      EXPECT_EQ(std::memcmp(b.data(), data_.data() + reqs[i].offset, b.size()), 0) << i;
      ++seen[i];
      return absl::OkStatus();
    });
    ASSERT_TRUE(s.ok()) << s;
    for (size_t i = 0; i < reqs.size(); ++i) ASSERT_EQ(seen[i], 1) << i;
  }

  std::string dir_, path_;
  std::vector<uint8_t> data_;
};

std::vector<ReadRequest> RandomRequests(uint64_t seed, size_t n, uint32_t max_pages) {
  std::mt19937_64 rng(seed);
  std::vector<ReadRequest> reqs(n);
  const uint64_t file_pages = kFileBytes / kPageSize;
  for (auto& r : reqs) {
    const uint32_t pages = 1 + rng() % max_pages;
    r.offset = (rng() % (file_pages - pages + 1)) * kPageSize;
    r.length = pages * kPageSize;
  }
  return reqs;
}

TEST_P(BlockReaderTest, RandomBatchReadsExactBytes) {
  auto reader = Open(GetParam());
  EXPECT_EQ(reader->backend(), GetParam() == IoBackend::kPread ? "pread" : "io_uring");
  std::vector<ReadRequest> reqs = RandomRequests(1, 300, 16);
  ReadAndCompare(*reader, reqs);
  uint64_t total = 0;
  for (auto& r : reqs) total += r.length;
  EXPECT_EQ(reader->bytes_read(), total);
}

TEST_P(BlockReaderTest, LargeRequestsAndGrowingSlots) {
  auto reader = Open(GetParam(), 8);
  ReadAndCompare(*reader, RandomRequests(2, 20, 1));
  ReadAndCompare(*reader, RandomRequests(3, 20, 64));           // Slots grow to 256 KiB.
  ReadAndCompare(*reader, {{0, 2 << 20}, {4 << 20, 3 << 20}});  // Over 1 MiB: own buffers.
  ReadAndCompare(*reader, RandomRequests(4, 50, 3));
}

TEST_P(BlockReaderTest, MoreRequestsThanMaxInFlight) {
  auto reader = Open(GetParam(), 4);
  ReadAndCompare(*reader, RandomRequests(5, 500, 4));
}

TEST_P(BlockReaderTest, ConcurrentBatchesFromFourThreads) {
  auto reader = Open(GetParam(), 16);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        ReadAndCompare(*reader, RandomRequests(100 * t + round, 40, 8));
      }
    });
  }
  for (auto& t : threads) t.join();
}

TEST_P(BlockReaderTest, ReentrantReadBatchFromCallback) {
  auto reader = Open(GetParam(), 4);
  std::vector<ReadRequest> outer = RandomRequests(6, 8, 2);
  absl::Status s = reader->ReadBatch(outer, [&](size_t i, std::span<const uint8_t> b) {
    ReadAndCompare(*reader, RandomRequests(7 + i, 6, 2));
    EXPECT_EQ(std::memcmp(b.data(), data_.data() + outer[i].offset, b.size()), 0);
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
}

TEST_P(BlockReaderTest, CallbackErrorStopsTheBatch) {
  auto reader = Open(GetParam(), 4);
  std::vector<ReadRequest> reqs = RandomRequests(8, 100, 2);
  std::atomic<int> calls{0};
  absl::Status s = reader->ReadBatch(reqs, [&](size_t, std::span<const uint8_t>) {
    return ++calls == 3 ? absl::AbortedError("enough") : absl::OkStatus();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(calls.load(), 3);
  ReadAndCompare(*reader, RandomRequests(9, 10, 2));  // The reader still works.
}

TEST_P(BlockReaderTest, MisalignedRequestIsInvalidArgument) {
  auto reader = Open(GetParam());
  for (ReadRequest r : {ReadRequest{100, 4096}, ReadRequest{0, 100}, ReadRequest{4096, 0}}) {
    std::vector<ReadRequest> reqs = {{0, 4096}, r};
    EXPECT_EQ(reader->ReadBatch(reqs, [](size_t, auto) { return absl::OkStatus(); }).code(),
              absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(reader->bytes_read(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, BlockReaderTest,
                         ::testing::Values(IoBackend::kIoUring, IoBackend::kPread),
                         [](const auto& info) {
                           return info.param == IoBackend::kPread ? "Pread" : "IoUring";
                         });

class BackendAgreementTest : public BlockReaderTest {};

TEST_F(BackendAgreementTest, IoUringAndPreadReturnIdenticalBytes) {
  auto uring = Open(IoBackend::kIoUring, 32);
  auto pread = Open(IoBackend::kPread);
  std::vector<ReadRequest> reqs = RandomRequests(11, 400, 8);
  std::vector<std::vector<uint8_t>> a(reqs.size()), b(reqs.size());
  auto collect = [&](std::vector<std::vector<uint8_t>>* out) {
    return [out](size_t i, std::span<const uint8_t> bytes) {
      (*out)[i].assign(bytes.begin(), bytes.end());
      return absl::OkStatus();
    };
  };
  ASSERT_TRUE(uring->ReadBatch(reqs, collect(&a)).ok());
  ASSERT_TRUE(pread->ReadBatch(reqs, collect(&b)).ok());
  EXPECT_EQ(a, b);
}

TEST_F(BackendAgreementTest, ReadPastEndIsTheSameDataLossOnBoth) {
  auto uring = Open(IoBackend::kIoUring, 4);
  auto pread = Open(IoBackend::kPread);
  const uint64_t end = kFileBytes;
  for (ReadRequest bad :
       {ReadRequest{end - 4096, 8192}, ReadRequest{end, 4096}, ReadRequest{end + 65536, 4096}}) {
    std::vector<ReadRequest> reqs = RandomRequests(12, 20, 2);
    reqs.insert(reqs.begin() + 7, bad);
    reqs.push_back({end + 4096, 4096});  // A later failure: the lowest index wins.
    absl::Status su = uring->ReadBatch(reqs, [](size_t, auto) { return absl::OkStatus(); });
    absl::Status sp = pread->ReadBatch(reqs, [](size_t, auto) { return absl::OkStatus(); });
    EXPECT_EQ(su.code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(su, sp);
    EXPECT_THAT(su.message(), HasSubstr(path_ + ": read at offset " + std::to_string(bad.offset)));
    EXPECT_THAT(su.message(), HasSubstr("past end of file"));
  }
}

TEST_F(BackendAgreementTest, AutoPicksIoUringWhereAvailable) {
  auto reader = Open(IoBackend::kAuto);
  EXPECT_THAT(reader->backend(), ::testing::AnyOf("io_uring", "pread"));
}

TEST_F(BackendAgreementTest, WithoutIoUringAutoFallsBackAndIoUringIsUnavailable) {
  setenv("SHOAL_IO_URING", "off", 1);
  auto fallback = BlockReader::Open(path_, IoBackend::kAuto);
  auto refused = BlockReader::Open(path_, IoBackend::kIoUring);
  unsetenv("SHOAL_IO_URING");
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  EXPECT_EQ((*fallback)->backend(), "pread");
  ReadAndCompare(**fallback, RandomRequests(13, 10, 2));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
}

TEST(BlockReaderOpenTest, MissingFileIsNotFound) {
  EXPECT_EQ(BlockReader::Open("/nonexistent/shoal/file", IoBackend::kAuto).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(BlockReader::Open("/nonexistent/shoal/file", IoBackend::kPread, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal::storage

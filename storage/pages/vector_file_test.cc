#include "storage/pages/vector_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/pages/page_format.h"

namespace shoal::storage {
namespace {

using ::testing::HasSubstr;

std::string MakeTestDir() {
  const char* base = getenv("SHOAL_TEST_DISK_DIR");
  std::string tmpl = std::string(base ? base : "/var/tmp") + "/shoal_vec_XXXXXX";
  EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

std::vector<float> Vec(uint64_t id, uint32_t dim) {
  std::vector<float> v(dim);
  for (uint32_t d = 0; d < dim; ++d) v[d] = static_cast<float>(id) * 1000.0f + d * 0.5f;
  return v;
}

struct Case {
  uint32_t dim;
  IoBackend io;
};

class VectorFileTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { dir_ = MakeTestDir(), path_ = dir_ + "/vectors"; }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void ExpectReads(VectorFile& vf, const std::vector<uint64_t>& ids) {
    std::vector<int> seen(ids.size(), 0);
    absl::Status s = vf.ReadBatch(ids, [&](size_t i, const float* v) {
      std::vector<float> want = Vec(ids[i], vf.dim());
      EXPECT_TRUE(std::equal(want.begin(), want.end(), v)) << ids[i];
      ++seen[i];
      return absl::OkStatus();
    });
    ASSERT_TRUE(s.ok()) << s;
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(seen[i], 1) << i;
  }

  std::string dir_, path_;
};

TEST_P(VectorFileTest, RandomIdsRoundTripAndSurviveReopen) {
  const uint32_t dim = GetParam().dim;
  std::mt19937_64 rng(dim);
  std::vector<uint64_t> ids(300);
  for (uint64_t i = 0; i < ids.size(); ++i) ids[i] = i * 3 + rng() % 3;  // Unique, gaps.
  std::shuffle(ids.begin(), ids.end(), rng);
  {
    auto vf = VectorFile::Create(path_, dim, GetParam().io);
    ASSERT_TRUE(vf.ok()) << vf.status();
    for (uint64_t id : ids) ASSERT_TRUE((*vf)->Put(id, Vec(id, dim).data()).ok());
    ASSERT_TRUE((*vf)->Sync().ok());
    std::vector<uint64_t> query(ids.begin(), ids.begin() + 100);
    query.push_back(query[0]);  // Duplicates are answered too.
    ExpectReads(**vf, query);
    EXPECT_GT((*vf)->bytes_read(), 0u);
  }
  auto vf = VectorFile::Open(path_, dim, GetParam().io);
  ASSERT_TRUE(vf.ok()) << vf.status();
  ExpectReads(**vf, ids);
  // Replace one, add one past the end, read again.
  ASSERT_TRUE((*vf)->Put(ids[5], Vec(ids[5], dim).data()).ok());
  ASSERT_TRUE((*vf)->Put(5000, Vec(5000, dim).data()).ok());
  ASSERT_TRUE((*vf)->Sync().ok());
  ExpectReads(**vf, {5000, ids[5], ids[6]});
}

TEST_P(VectorFileTest, NeverWrittenIdsAreNotFound) {
  const uint32_t dim = GetParam().dim;
  auto vf = VectorFile::Create(path_, dim, GetParam().io);
  ASSERT_TRUE(vf.ok());
  ASSERT_TRUE((*vf)->Put(1, Vec(1, dim).data()).ok());
  ASSERT_TRUE((*vf)->Put(40, Vec(40, dim).data()).ok());
  ASSERT_TRUE((*vf)->Sync().ok());
  auto ok = [](size_t, const float*) { return absl::OkStatus(); };
  for (uint64_t missing : {uint64_t{0}, uint64_t{2}, uint64_t{39}, uint64_t{1000000}}) {
    const std::vector<uint64_t> ids = {1, missing};
    absl::Status s = (*vf)->ReadBatch(ids, ok);
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << missing << " " << s;
    EXPECT_THAT(s.message(), HasSubstr("vector " + std::to_string(missing) + " not found"));
  }
}

TEST_P(VectorFileTest, CorruptPageIsDataLossNamingFileAndOffset) {
  const uint32_t dim = GetParam().dim;
  auto vf = VectorFile::Create(path_, dim, GetParam().io);
  ASSERT_TRUE(vf.ok());
  for (uint64_t id = 0; id < 20; ++id) ASSERT_TRUE((*vf)->Put(id, Vec(id, dim).data()).ok());
  ASSERT_TRUE((*vf)->Sync().ok());
  const uint64_t id = 13;
  const uint32_t slots = VectorFile::SlotsPerPage(dim);
  const uint64_t page = slots > 0 ? id / slots : id * VectorFile::PagesPerVector(dim);
  int fd = ::open(path_.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const uint8_t junk = 0x77;
  ASSERT_EQ(::pwrite(fd, &junk, 1, page * kPageSize + 100), 1);
  ASSERT_EQ(::fdatasync(fd), 0);
  ::close(fd);
  const std::vector<uint64_t> ids = {0, id};
  absl::Status s = (*vf)->ReadBatch(ids, [](size_t, const float*) { return absl::OkStatus(); });
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(s.message(),
              HasSubstr(path_ + ": page at offset " + std::to_string(page * kPageSize)));
}

// Scan yields every vector written, ascending, with its content.
std::vector<uint64_t> ScanIds(VectorFile& vf) {
  std::vector<uint64_t> out;
  absl::Status s = vf.Scan([&](uint64_t id, const float* v) {
    std::vector<float> want = Vec(id, vf.dim());
    EXPECT_TRUE(std::equal(want.begin(), want.end(), v)) << id;
    out.push_back(id);
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(std::is_sorted(out.begin(), out.end()));
  return out;
}

TEST_P(VectorFileTest, CompactedCopyKeepsChosenIdsAndTakesNewOnes) {
  const uint32_t dim = GetParam().dim;
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 200; ++i) ids.push_back(i * 3 + i % 3);  // gaps
  ids.push_back(1200);  // already at or above the base the compaction picks
  auto keep = [](uint64_t id) { return id % 4 != 1; };
  std::vector<uint64_t> kept;
  for (uint64_t id : ids) {
    if (keep(id)) kept.push_back(id);
  }
  {
    auto vf = VectorFile::Create(path_, dim, GetParam().io);
    ASSERT_TRUE(vf.ok());
    for (uint64_t id : ids) ASSERT_TRUE((*vf)->Put(id, Vec(id, dim).data()).ok());
    ASSERT_TRUE((*vf)->Sync().ok());
    EXPECT_EQ(ScanIds(**vf), ids);
    auto c = VectorFile::WriteCompacted(**vf, path_ + ".c", 1000, keep, FileSystem::Default());
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->kept, kept.size());
    EXPECT_EQ(c->dropped, ids.size() - kept.size());
    EXPECT_LT(c->bytes_after, c->bytes_before);
  }
  std::filesystem::rename(path_ + ".c", path_);
  auto vf = VectorFile::Open(path_, dim, GetParam().io);
  ASSERT_TRUE(vf.ok()) << vf.status();
  EXPECT_EQ((*vf)->base_id(), 1000u);
  EXPECT_EQ((*vf)->packed_count(), kept.size());
  ExpectReads(**vf, kept);
  const std::vector<uint64_t> dropped = {1, 4 * 3 + 1};  // id % 4 == 1
  for (uint64_t id : dropped) {
    const std::vector<uint64_t> one = {id};
    EXPECT_EQ((*vf)->ReadBatch(one, [](size_t, const float*) { return absl::OkStatus(); }).code(),
              absl::StatusCode::kNotFound);
    EXPECT_EQ((*vf)->Put(id, Vec(id, dim).data()).code(), absl::StatusCode::kFailedPrecondition);
  }
  // New ids go to the direct region; kept ones are rewritten in place.
  for (uint64_t id : {uint64_t{1000}, uint64_t{1001}, uint64_t{1500}, kept[3], uint64_t{1200}}) {
    ASSERT_TRUE((*vf)->Put(id, Vec(id, dim).data()).ok()) << id;
  }
  ASSERT_TRUE((*vf)->Sync().ok());
  std::vector<uint64_t> all = kept;
  for (uint64_t id : {uint64_t{1000}, uint64_t{1001}, uint64_t{1500}}) all.push_back(id);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(ScanIds(**vf), all);
  vf->reset();
  vf = VectorFile::Open(path_, dim, GetParam().io);
  ASSERT_TRUE(vf.ok()) << vf.status();
  ExpectReads(**vf, all);
  // A compacted file compacts again: both regions are read.
  auto c = VectorFile::WriteCompacted(
      **vf, path_ + ".c", 2000, [](uint64_t id) { return id >= 1000; }, FileSystem::Default());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kept, 4u);
  std::filesystem::rename(path_ + ".c", path_);
  vf = VectorFile::Open(path_, dim, GetParam().io);
  ASSERT_TRUE(vf.ok()) << vf.status();
  EXPECT_EQ(ScanIds(**vf), (std::vector<uint64_t>{1000, 1001, 1200, 1500}));
  EXPECT_EQ((*vf)->SlotCapacity(), 4u);
}

TEST(VectorFileCompactionTest, CorruptIdTableIsDataLoss) {
  const std::string dir = MakeTestDir(), path = dir + "/v";
  {
    auto vf = VectorFile::Create(path, 8, IoBackend::kPread);
    ASSERT_TRUE(vf.ok());
    for (uint64_t id = 0; id < 100; ++id) ASSERT_TRUE((*vf)->Put(id, Vec(id, 8).data()).ok());
    ASSERT_TRUE((*vf)->Sync().ok());
    auto c = VectorFile::WriteCompacted(
        **vf, path + ".c", 100, [](uint64_t id) { return id % 2 == 0; }, FileSystem::Default());
    ASSERT_TRUE(c.ok()) << c.status();
  }
  // 50 slots of 8 floats fit one page: the table is page 2.
  int fd = ::open((path + ".c").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const uint8_t junk = 0x55;
  ASSERT_EQ(::pwrite(fd, &junk, 1, 2 * kPageSize + 40), 1);
  ::close(fd);
  auto vf = VectorFile::Open(path + ".c", 8, IoBackend::kPread);
  EXPECT_EQ(vf.status().code(), absl::StatusCode::kDataLoss) << vf.status();
  EXPECT_THAT(vf.status().message(), HasSubstr("vector id table"));
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    DimsAndBackends, VectorFileTest,
    ::testing::Values(Case{3, IoBackend::kIoUring}, Case{3, IoBackend::kPread},
                      Case{128, IoBackend::kIoUring}, Case{128, IoBackend::kPread},
                      Case{509, IoBackend::kAuto}, Case{784, IoBackend::kIoUring},
                      Case{784, IoBackend::kPread}, Case{1018, IoBackend::kAuto},
                      Case{1100, IoBackend::kIoUring}, Case{1100, IoBackend::kPread},
                      Case{4000, IoBackend::kAuto}),
    [](const auto& info) {
      return "Dim" + std::to_string(info.param.dim) +
             (info.param.io == IoBackend::kPread     ? "Pread"
              : info.param.io == IoBackend::kIoUring ? "IoUring"
                                                     : "Auto");
    });

TEST(VectorFileLayoutTest, SlotsAndPages) {
  EXPECT_EQ(VectorFile::SlotsPerPage(128), 7u);
  EXPECT_EQ(VectorFile::SlotsPerPage(784), 1u);
  EXPECT_EQ(VectorFile::SlotsPerPage(3), 335u);  // 339 would leave no room for the bitmap.
  EXPECT_EQ(VectorFile::SlotsPerPage(1018), 1u);
  EXPECT_EQ(VectorFile::SlotsPerPage(1019), 0u);
  EXPECT_EQ(VectorFile::PagesPerVector(1018), 1u);
  EXPECT_EQ(VectorFile::PagesPerVector(1100), 2u);
  EXPECT_EQ(VectorFile::PagesPerVector(4000), 4u);
}

}  // namespace
}  // namespace shoal::storage

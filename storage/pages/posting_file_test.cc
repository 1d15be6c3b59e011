#include "storage/pages/posting_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shoal::storage {
namespace {

using ::testing::HasSubstr;

std::string MakeTestDir() {
  const char* base = getenv("SHOAL_TEST_DISK_DIR");
  std::string tmpl = std::string(base ? base : "/var/tmp") + "/shoal_posting_XXXXXX";
  EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

std::vector<uint8_t> Payload(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> p(n);
  for (auto& b : p) b = static_cast<uint8_t>(rng());
  return p;
}

class PostingFileTest : public ::testing::TestWithParam<IoBackend> {
 protected:
  void SetUp() override { dir_ = MakeTestDir(), path_ = dir_ + "/postings"; }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Reads and decodes `extents` (posting i has id ids[i]) in one batch.
  absl::Status ReadAll(const std::vector<Extent>& extents, const std::vector<uint64_t>& ids,
                       std::vector<std::vector<uint8_t>>* out) {
    auto reader = BlockReader::Open(path_, GetParam());
    if (!reader.ok()) return reader.status();
    std::vector<ReadRequest> reqs;
    for (const Extent& e : extents) reqs.push_back(ExtentRequest(e));
    out->assign(extents.size(), {});
    return (*reader)->ReadBatch(reqs, [&](size_t i, std::span<const uint8_t> pages) {
      return DecodePosting(pages, extents[i], ids[i], path_, &(*out)[i]);
    });
  }

  std::string dir_, path_;
};

TEST_P(PostingFileTest, PostingsOfManySizesRoundTrip) {
  auto writer = PostingFileWriter::Create(path_);
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::vector<size_t> sizes = {
      0, 1, kPagePayload - 1, kPagePayload, kPagePayload + 1, 5 * kPagePayload + 17, 300000};
  std::vector<Extent> extents;
  std::vector<uint64_t> ids;
  uint64_t expected_page = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto e = (*writer)->Append(100 + i, Payload(sizes[i], i));
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->first_page, expected_page);
    EXPECT_EQ(e->num_pages, PostingPages(sizes[i]));
    EXPECT_EQ(e->bytes, sizes[i]);
    expected_page += e->num_pages;
    extents.push_back(*e);
    ids.push_back(100 + i);
  }
  EXPECT_EQ((*writer)->size_bytes(), expected_page * kPageSize);
  ASSERT_TRUE((*writer)->Sync().ok());
  std::vector<std::vector<uint8_t>> got;
  ASSERT_TRUE(ReadAll(extents, ids, &got).ok());
  for (size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(got[i], Payload(sizes[i], i)) << i;
}

TEST_P(PostingFileTest, OpenForAppendContinuesAfterExistingPages) {
  Extent a, b;
  {
    auto w = PostingFileWriter::Create(path_);
    ASSERT_TRUE(w.ok());
    a = *(*w)->Append(1, Payload(9000, 1));
    ASSERT_TRUE((*w)->Sync().ok());
  }
  {
    auto w = PostingFileWriter::OpenForAppend(path_);
    ASSERT_TRUE(w.ok()) << w.status();
    b = *(*w)->Append(2, Payload(100, 2));
    EXPECT_EQ(b.first_page, a.num_pages);
    ASSERT_TRUE((*w)->Sync().ok());
  }
  std::vector<std::vector<uint8_t>> got;
  ASSERT_TRUE(ReadAll({a, b}, {1, 2}, &got).ok());
  EXPECT_EQ(got[0], Payload(9000, 1));
  EXPECT_EQ(got[1], Payload(100, 2));
  EXPECT_EQ(PostingFileWriter::OpenForAppend(dir_ + "/missing").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(PostingFileTest, FlippedByteOnDiskIsDataLossNamingFileAndOffset) {
  auto w = PostingFileWriter::Create(path_);
  ASSERT_TRUE(w.ok());
  Extent first = *(*w)->Append(7, Payload(100, 7));
  Extent e = *(*w)->Append(17, Payload(3 * kPagePayload, 17));
  ASSERT_TRUE((*w)->Sync().ok());
  std::mt19937_64 rng(99);
  for (int trial = 0; trial < 24; ++trial) {
    const uint32_t page = static_cast<uint32_t>(rng() % e.num_pages);
    const uint64_t page_offset = (e.first_page + page) * kPageSize;
    const uint64_t at = page_offset + rng() % kPageSize;
    int fd = ::open(path_.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    uint8_t byte;
    ASSERT_EQ(::pread(fd, &byte, 1, at), 1);
    const uint8_t flipped = byte ^ static_cast<uint8_t>(1 + rng() % 255);
    ASSERT_EQ(::pwrite(fd, &flipped, 1, at), 1);
    ASSERT_EQ(::fdatasync(fd), 0);
    std::vector<std::vector<uint8_t>> got;
    absl::Status s = ReadAll({first, e}, {7, 17}, &got);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << at;
    EXPECT_THAT(s.message(), HasSubstr(path_ + ": page at offset " + std::to_string(page_offset)));
    EXPECT_THAT(s.message(), HasSubstr("posting 17"));
    ASSERT_EQ(::pwrite(fd, &byte, 1, at), 1);
    ::close(fd);
  }
  std::vector<std::vector<uint8_t>> got;
  EXPECT_TRUE(ReadAll({first, e}, {7, 17}, &got).ok());
}

INSTANTIATE_TEST_SUITE_P(Backends, PostingFileTest,
                         ::testing::Values(IoBackend::kIoUring, IoBackend::kPread),
                         [](const auto& info) {
                           return info.param == IoBackend::kPread ? "Pread" : "IoUring";
                         });

// Every single byte of every page, flipped in the bytes as read.
TEST_P(PostingFileTest, AppendedPagesContinueThePostingAfterAPartlyFilledPage) {
  auto writer = PostingFileWriter::Create(path_);
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::vector<uint8_t> first = Payload(kPagePayload + 100, 1);  // 2 pages, the 2nd partly
  const std::vector<uint8_t> more = Payload(kPagePayload + 7, 2);
  auto e = (*writer)->WriteAt(10, 5, first);
  ASSERT_TRUE(e.ok()) << e.status();
  auto tail = (*writer)->WriteAt(e->first_page + e->num_pages, 5, more, e->num_pages);
  ASSERT_TRUE(tail.ok()) << tail.status();
  ASSERT_TRUE((*writer)->Sync().ok());
  const Extent whole{e->first_page, e->num_pages + tail->num_pages,
                     static_cast<uint32_t>(first.size() + more.size())};
  std::vector<std::vector<uint8_t>> out;
  ASSERT_TRUE(ReadAll({whole, *e}, {5, 5}, &out).ok());
  std::vector<uint8_t> want = first;
  want.insert(want.end(), more.begin(), more.end());
  EXPECT_EQ(out[0], want);
  EXPECT_EQ(out[1], first);  // a reader of the row before the append sees it unchanged
  // The row must add up: a byte count that ends inside the appended pages is DataLoss.
  Extent short_row = whole;
  short_row.bytes -= 1;
  EXPECT_EQ(ReadAll({short_row}, {5}, &out).code(), absl::StatusCode::kDataLoss);
}

TEST(DecodePostingTest, EveryFlippedByteIsDataLossNamingFileAndOffset) {
  const std::vector<uint8_t> payload = Payload(kPagePayload + 500, 3);
  const Extent e{5, 2, static_cast<uint32_t>(payload.size())};
  std::vector<uint8_t> pages(2 * kPageSize);
  for (uint32_t i = 0; i < 2; ++i) {
    const size_t n = std::min(kPagePayload, payload.size() - i * kPagePayload);
    std::memcpy(pages.data() + i * kPageSize + kPageHeader, payload.data() + i * kPagePayload, n);
    SealPage(pages.data() + i * kPageSize, PageKind::kPosting, 17, i, n);
  }
  std::vector<uint8_t> out;
  ASSERT_TRUE(DecodePosting(pages, e, 17, "/data/postings", &out).ok());
  ASSERT_EQ(out, payload);
  for (size_t at = 0; at < pages.size(); ++at) {
    pages[at] ^= 0x5A;
    out.clear();
    absl::Status s = DecodePosting(pages, e, 17, "/data/postings", &out);
    ASSERT_EQ(s.code(), absl::StatusCode::kDataLoss) << at;
    const uint64_t page_offset = (5 + at / kPageSize) * kPageSize;
    ASSERT_THAT(s.message(),
                HasSubstr("/data/postings: page at offset " + std::to_string(page_offset) +
                          ": checksum mismatch (posting 17)"));
    pages[at] ^= 0x5A;
  }
}

TEST(DecodePostingTest, OtherPostingsPagesAreDataLoss) {
  std::vector<uint8_t> page(kPageSize, 0);
  SealPage(page.data(), PageKind::kPosting, 17, 0, 10);
  std::vector<uint8_t> out;
  absl::Status s = DecodePosting(page, Extent{0, 1, 10}, 18, "p", &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("wrong owner 17"));
  s = DecodePosting(page, Extent{0, 1, 11}, 17, "p", &out);  // Directory says 11 bytes.
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("hold 10 payload bytes, its row says 11"));
  s = DecodePosting(page, Extent{0, 2, 10}, 17, "p", &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal::storage

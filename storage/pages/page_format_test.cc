#include "storage/pages/page_format.h"

#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/io/crc32c.h"

namespace shoal::storage {
namespace {

using ::testing::HasSubstr;

std::vector<uint8_t> SealedPage(size_t payload) {
  std::vector<uint8_t> page(kPageSize, 0xAB);  // Garbage after the payload must be zeroed.
  for (size_t i = 0; i < payload; ++i) page[kPageHeader + i] = static_cast<uint8_t>(i * 7);
  SealPage(page.data(), PageKind::kPosting, 17, 3, payload);
  return page;
}

TEST(PageFormatTest, SealThenCheckRoundTrips) {
  for (size_t payload : {size_t{0}, size_t{1}, size_t{100}, kPagePayload}) {
    std::vector<uint8_t> page = SealedPage(payload);
    EXPECT_TRUE(CheckPage(page.data(), PageKind::kPosting, 17, 3, "f", 0).ok());
    EXPECT_EQ(PagePayloadBytes(page.data()), payload);
    EXPECT_EQ(PageOwner(page.data()), 17u);
    for (size_t i = kPageHeader + payload; i < kPageSize; ++i) ASSERT_EQ(page[i], 0) << i;
  }
}

TEST(PageFormatTest, LayoutIsLittleEndianHeader) {
  std::vector<uint8_t> page = SealedPage(5);
  uint32_t magic;
  std::memcpy(&magic, page.data() + 4, 4);
  EXPECT_EQ(magic, 0x53504f31u);
  EXPECT_EQ(page[16], 3);  // sequence
  EXPECT_EQ(page[20], 5);  // payload bytes
}

TEST(PageFormatTest, MismatchesAreDataLossNamingPathAndOffset) {
  std::vector<uint8_t> page = SealedPage(10);
  absl::Status kind = CheckPage(page.data(), PageKind::kVector, 17, 3, "/d/vec", 8192);
  EXPECT_EQ(kind.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(kind.message(), HasSubstr("/d/vec: page at offset 8192: wrong kind posting"));
  absl::Status owner = CheckPage(page.data(), PageKind::kPosting, 18, 3, "/d/p", 4096);
  EXPECT_EQ(owner.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(owner.message(), HasSubstr("wrong owner 17 (posting 18)"));
  absl::Status seq = CheckPage(page.data(), PageKind::kPosting, 17, 4, "/d/p", 4096);
  EXPECT_THAT(seq.message(), HasSubstr("wrong sequence 3, expected 4"));
}

TEST(PageFormatTest, EveryFlippedBitIsCaught) {
  std::vector<uint8_t> page = SealedPage(1000);
  for (size_t byte = 0; byte < kPageSize; ++byte) {
    for (int bit = 0; bit < 8; bit += 3) {
      page[byte] ^= static_cast<uint8_t>(1 << bit);
      absl::Status s = CheckPage(page.data(), PageKind::kPosting, 17, 3, "p", 40960);
      ASSERT_EQ(s.code(), absl::StatusCode::kDataLoss) << byte;
      ASSERT_THAT(s.message(), HasSubstr("p: page at offset 40960: checksum mismatch"));
      page[byte] ^= static_cast<uint8_t>(1 << bit);
    }
  }
}

TEST(PageFormatTest, PayloadSizeOutOfRangeIsDataLoss) {
  std::vector<uint8_t> copy(kPageSize, 0);
  SealPage(copy.data(), PageKind::kPosting, 1, 0, 0);
  uint16_t bad = kPagePayload + 1;
  std::memcpy(copy.data() + 20, &bad, 2);
  // Re-checksum so that only the size is wrong.
  uint32_t crc = Crc32c(copy.data() + 4, kPageSize - 4, 0);
  std::memcpy(copy.data(), &crc, 4);
  absl::Status s = CheckPage(copy.data(), PageKind::kPosting, 1, 0, "p", 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("payload size 4073 out of range"));
}

TEST(PageFormatTest, ZeroPageIsRecognised) {
  std::vector<uint8_t> page(kPageSize, 0);
  EXPECT_TRUE(PageIsZero(page.data()));
  page[4095] = 1;
  EXPECT_FALSE(PageIsZero(page.data()));
}

}  // namespace
}  // namespace shoal::storage

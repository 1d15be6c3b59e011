#include "index/postings/posting_entries.h"

#include <gtest/gtest.h>

#include <vector>

namespace shoal::index {
namespace {

TEST(PostingEntriesTest, SegmentsConcatenateAndDamageIsDataLoss) {
  const std::vector<float> a = {1, 2, 3}, b = {4, 5, 6};
  const std::vector<const float*> rows = {a.data(), b.data()};
  std::vector<uint8_t> payload = EncodePostingEntries(std::vector<uint64_t>{7, 9}, rows, 3);
  const std::vector<uint8_t> appended =
      EncodePostingEntries(std::vector<uint64_t>{11}, std::vector<const float*>{b.data()}, 3);
  payload.insert(payload.end(), appended.begin(), appended.end());
  DecodedPosting decoded;
  ASSERT_TRUE(DecodePostingEntries(payload, 3, "p", &decoded).ok());
  EXPECT_EQ(decoded.ids, (std::vector<uint64_t>{7, 9, 11}));
  EXPECT_EQ(decoded.vectors, (std::vector<float>{1, 2, 3, 4, 5, 6, 4, 5, 6}));
  // A truncated last segment, or a wrong dimension, is DataLoss naming where.
  std::vector<uint8_t> cut(payload.begin(), payload.end() - 4);
  absl::Status s = DecodePostingEntries(cut, 3, "postings.dat posting 5", &decoded);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find("postings.dat posting 5"), absl::string_view::npos) << s;
  EXPECT_TRUE(absl::IsDataLoss(DecodePostingEntries(payload, 4, "p", &decoded)));
}

// Found by fuzz/index_format_fuzzer (UBSan): an empty segment memcpy'd to a null pointer.
TEST(PostingEntriesTest, AnEmptySegmentDecodesToNothing) {
  const std::vector<uint8_t> empty =
      EncodePostingEntries(std::vector<uint64_t>{}, std::vector<const float*>{}, 3);
  DecodedPosting decoded;
  ASSERT_TRUE(DecodePostingEntries(empty, 3, "p", &decoded).ok());
  EXPECT_TRUE(decoded.ids.empty());
  EXPECT_TRUE(decoded.vectors.empty());
  QuantizedPosting quantized;
  quantized.code_bytes = 4;
  const std::vector<uint8_t> qempty = EncodeQuantizedEntries(quantized);
  QuantizedPosting back;
  ASSERT_TRUE(DecodeQuantizedEntries(qempty, 4, "q", &back).ok());
  EXPECT_EQ(back.size(), 0u);
}

TEST(PostingEntriesTest, QuantizedSegmentsConcatenateAndDamageIsDataLoss) {
  QuantizedPosting p;
  p.code_bytes = 2;
  p.ids = {1, 2, 3};
  p.sq_norms = {0.5f, 1.5f, 2.5f};
  p.codes = {10, 11, 20, 21, 30, 31};
  std::vector<uint8_t> payload = EncodeQuantizedEntries(p, 0, 2);
  const std::vector<uint8_t> appended = EncodeQuantizedEntries(p, 2, 3);
  payload.insert(payload.end(), appended.begin(), appended.end());
  QuantizedPosting decoded;
  ASSERT_TRUE(DecodeQuantizedEntries(payload, 2, "q", &decoded).ok());
  EXPECT_EQ(decoded.ids, p.ids);
  EXPECT_EQ(decoded.sq_norms, p.sq_norms);
  EXPECT_EQ(decoded.codes, p.codes);
  std::vector<uint8_t> cut(payload.begin(), payload.end() - 1);
  EXPECT_TRUE(absl::IsDataLoss(DecodeQuantizedEntries(cut, 2, "q", &decoded)));
  EXPECT_TRUE(absl::IsDataLoss(DecodeQuantizedEntries(payload, 3, "q", &decoded)));
  EXPECT_TRUE(absl::IsDataLoss(DecodeQuantizedEntries({}, 2, "q", &decoded)));
}

}  // namespace
}  // namespace shoal::index

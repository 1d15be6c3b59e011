#include "index/postings/posting_entries.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
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
// A posting appended to online is cached as its new entries over the posting as cached before:
// the older entries are shared, walked first, and charged with the whole.
TEST(PostingEntriesTest, ChainedSegmentsAreWalkedOldestFirst) {
  auto first = std::make_shared<DecodedPosting>(DecodedPosting{2, {7, 9}, {1, 2, 3, 4}});
  auto second = std::make_shared<DecodedPosting>(DecodedPosting{2, {11}, {5, 6}, first});
  const DecodedPosting third{2, {13, 15}, {7, 8, 9, 10}, second};
  EXPECT_EQ(third.total(), 5u);
  EXPECT_EQ(third.size(), 2u);  // its own entries
  EXPECT_EQ(third.segments(), 3u);
  std::vector<uint64_t> ids;
  std::vector<float> vectors;
  third.ForEachSegment([&](const DecodedPosting& s) {
    for (size_t i = 0; i < s.size(); ++i) {
      ids.push_back(s.ids[i]);
      vectors.insert(vectors.end(), s.vector(i), s.vector(i) + s.dim);
    }
  });
  EXPECT_EQ(ids, (std::vector<uint64_t>{7, 9, 11, 13, 15}));
  EXPECT_EQ(vectors, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(third.MemoryBytes(), second->MemoryBytes() + sizeof(DecodedPosting) +
                                     third.ids.capacity() * sizeof(uint64_t) +
                                     third.vectors.capacity() * sizeof(float));
}

TEST(PostingEntriesTest, AnEmptySegmentDecodesToNothing) {
  const std::vector<uint8_t> empty =
      EncodePostingEntries(std::vector<uint64_t>{}, std::vector<const float*>{}, 3);
  DecodedPosting decoded;
  ASSERT_TRUE(DecodePostingEntries(empty, 3, "p", &decoded).ok());
  EXPECT_TRUE(decoded.ids.empty());
  EXPECT_TRUE(decoded.vectors.empty());
  QuantizedPosting quantized;
  quantized.code_bytes = 4;
  const std::vector<uint8_t> qempty = EncodeQuantizedEntries(quantized, /*norms=*/true);
  QuantizedPosting back;
  ASSERT_TRUE(DecodeQuantizedEntries(qempty, 4, /*norms=*/true, "q", &back).ok());
  EXPECT_EQ(back.size(), 0u);
}

TEST(PostingEntriesTest, QuantizedSegmentsConcatenateAndDamageIsDataLoss) {
  QuantizedPosting p;
  p.code_bytes = 2;
  p.ids = {1, 2, 3};
  p.sq_norms = {0.5f, 1.5f, 2.5f};
  p.codes = {10, 11, 20, 21, 30, 31};
  std::vector<uint8_t> payload = EncodeQuantizedEntries(p, /*norms=*/true, 0, 2);
  const std::vector<uint8_t> appended = EncodeQuantizedEntries(p, /*norms=*/true, 2, 3);
  payload.insert(payload.end(), appended.begin(), appended.end());
  QuantizedPosting decoded;
  ASSERT_TRUE(DecodeQuantizedEntries(payload, 2, /*norms=*/true, "q", &decoded).ok());
  EXPECT_EQ(decoded.ids, p.ids);
  EXPECT_EQ(decoded.sq_norms, p.sq_norms);
  EXPECT_EQ(decoded.codes, p.codes);
  std::vector<uint8_t> cut(payload.begin(), payload.end() - 1);
  EXPECT_TRUE(absl::IsDataLoss(DecodeQuantizedEntries(cut, 2, true, "q", &decoded)));
  EXPECT_TRUE(absl::IsDataLoss(DecodeQuantizedEntries(payload, 3, true, "q", &decoded)));
  EXPECT_TRUE(absl::IsDataLoss(DecodeQuantizedEntries({}, 2, true, "q", &decoded)));
}

// Ids within 2^32 of each other are stored as 4-byte offsets, and |x|^2 only when asked for: a
// segment of n entries with c-byte codes takes 16 + n (4 + c) bytes, not 8 + n (12 + c). Ids
// spread wider fall back to the wide kind; segments of both kinds decode together.
TEST(PostingEntriesTest, CompactSegmentsDropWhatTheReaderDoesNotNeed) {
  QuantizedPosting p;
  p.code_bytes = 3;
  const uint64_t base = (uint64_t{7} << 40) + 5;
  p.ids = {base + 9, base, base + UINT32_MAX, (uint64_t{1} << 62) + 1};
  p.sq_norms = {1, 2, 3, 4};
  p.codes = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<uint8_t> lean = EncodeQuantizedEntries(p, /*norms=*/false, 0, 3);
  EXPECT_EQ(lean.size(), 16u + 3 * (4 + 3));
  const std::vector<uint8_t> normed = EncodeQuantizedEntries(p, /*norms=*/true, 0, 3);
  EXPECT_EQ(normed.size(), 16u + 3 * (4 + 4 + 3));
  const std::vector<uint8_t> wide = EncodeQuantizedEntries(p, /*norms=*/false, 2, 4);
  EXPECT_EQ(wide.size(), 8u + 2 * (8 + 4 + 3));  // 2^62 is too far from base: u64 ids, norms

  QuantizedPosting decoded;
  ASSERT_TRUE(DecodeQuantizedEntries(lean, 3, /*norms=*/false, "q", &decoded).ok());
  EXPECT_EQ(decoded.ids, std::vector<uint64_t>(p.ids.begin(), p.ids.begin() + 3));
  EXPECT_EQ(decoded.sq_norms, (std::vector<float>{0, 0, 0}));
  EXPECT_TRUE(
      std::equal(decoded.codes.begin(), decoded.codes.end(), p.codes.begin(), p.codes.begin() + 9));
  // An inner-product reader needs |x|^2: a segment without it is damage, not zeros.
  absl::Status s = DecodeQuantizedEntries(lean, 3, /*norms=*/true, "posting 4", &decoded);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find("posting 4"), absl::string_view::npos) << s;

  std::vector<uint8_t> mixed = normed;
  mixed.insert(mixed.end(), wide.begin(), wide.end());
  ASSERT_TRUE(DecodeQuantizedEntries(mixed, 3, /*norms=*/true, "q", &decoded).ok());
  EXPECT_EQ(decoded.ids, (std::vector<uint64_t>{p.ids[0], p.ids[1], p.ids[2], p.ids[2], p.ids[3]}));
  EXPECT_EQ(decoded.sq_norms, (std::vector<float>{1, 2, 3, 3, 4}));
  EXPECT_TRUE(absl::IsDataLoss(DecodeQuantizedEntries(mixed, 4, true, "q", &decoded)));
  std::vector<uint8_t> cut(mixed.begin(), mixed.end() - 1);
  EXPECT_TRUE(absl::IsDataLoss(DecodeQuantizedEntries(cut, 3, true, "q", &decoded)));
}

}  // namespace
}  // namespace shoal::index

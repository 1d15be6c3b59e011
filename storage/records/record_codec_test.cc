#include "storage/records/record_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace shoal::storage {
namespace {

using ::testing::HasSubstr;

Record Sample() {
  Record r;
  r.key = std::string("doc-1");
  r.vector = {1.5f, -2.0f, 0.0f};
  r.attributes = {{"n", int64_t{-7}}, {"p", 0.25}, {"ok", true}, {"lang", std::string("en")}};
  r.tags = {"a", "bb"};
  return r;
}

TEST(RecordCodecTest, RoundTripsEveryField) {
  const Record in = Sample();
  auto out = DecodeRecord(EncodeRecord(in), "t");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->key, in.key);
  EXPECT_EQ(out->vector, in.vector);
  EXPECT_EQ(out->attributes, in.attributes);
  EXPECT_EQ(out->tags, in.tags);
}

TEST(RecordCodecTest, RoundTripsUint64Key) {
  Record in;
  in.key = uint64_t{1} << 63;
  in.vector = {3};
  auto out = DecodeRecord(EncodeRecord(in), "t");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(std::get<uint64_t>(out->key), uint64_t{1} << 63);
  EXPECT_EQ(*DecodeRecordKey(EncodeRecord(in), "t"), in.key);
}

// One buffer reused for records of different shapes: each encoding is exactly EncodeRecord's
// (nothing of a longer earlier record left behind), and within EncodedRecordSizeBound.
TEST(RecordCodecTest, EncodeRecordToReusesItsBufferAndStaysWithinTheBound) {
  Record small;
  small.key = uint64_t{7};
  small.vector = {1};
  Record long_strings = Sample();
  long_strings.key = std::string(300, 'k');
  long_strings.attributes["text"] = std::string(200, 'x');
  long_strings.tags.push_back(std::string(150, 't'));
  std::string buffer;
  for (const Record& r : {Sample(), long_strings, small, Sample()}) {
    EncodeRecordTo(r, &buffer);
    EXPECT_EQ(buffer, EncodeRecord(r));
    EXPECT_LE(buffer.size(), EncodedRecordSizeBound(r));
    EXPECT_LE(buffer.size() + RecordRowKey(1, 2).size() + KeyMapRowKey(1, r.key).size() + 8,
              RecordRowsBytesBound(r));
  }
}

// Found by fuzz/storage_codec_fuzzer: dim 0 passed a null pointer to memcpy (UBSan, asan preset).
TEST(RecordCodecTest, DecodesARecordWithAnEmptyVector) {
  Record in;
  in.key = std::string("abc");
  auto out = DecodeRecord(EncodeRecord(in), "t");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->vector.empty());
  EXPECT_EQ(out->key, in.key);
}

TEST(RecordCodecTest, EveryTruncationIsDataLossWithOffset) {
  const std::string bytes = EncodeRecord(Sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto out = DecodeRecord(std::string_view(bytes).substr(0, n), "row-x");
    ASSERT_FALSE(out.ok()) << "prefix " << n;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(out.status().message(), HasSubstr("row-x"));
    EXPECT_THAT(out.status().message(), HasSubstr("at byte"));
  }
}

TEST(RecordCodecTest, TrailingBytesAndBadVersionAreDataLoss) {
  std::string bytes = EncodeRecord(Sample());
  EXPECT_EQ(DecodeRecord(bytes + "x", "t").status().code(), absl::StatusCode::kDataLoss);
  bytes[0] = 9;
  EXPECT_THAT(DecodeRecord(bytes, "t").status().message(), HasSubstr("unknown version 9"));
}

TEST(RecordCodecTest, RowKeysSortByCollectionThenId) {
  EXPECT_LT(RecordRowKey(1, 500), RecordRowKey(2, 0));
  EXPECT_LT(RecordRowKey(1, 255), RecordRowKey(1, 256));
  EXPECT_EQ(InternalIdFromRecordRowKey(RecordRowKey(3, 123456789)), 123456789u);
  EXPECT_NE(KeyMapRowKey(1, Key(uint64_t{7})), KeyMapRowKey(1, Key(std::string("7"))));
}

}  // namespace
}  // namespace shoal::storage

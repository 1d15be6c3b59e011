#include "rpc/convert.h"

#include <gtest/gtest.h>

namespace shoal::rpc {
namespace {

TEST(ConvertTest, KeyRoundTripsBothKinds) {
  for (const Key& key : {Key(uint64_t{7}), Key(std::string("7"))}) {
    v1::Key proto;
    KeyToProto(key, &proto);
    absl::StatusOr<Key> back = KeyFromProto(proto, "key");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, key);
  }
}

TEST(ConvertTest, UnsetKeyIsInvalidArgumentNamingTheField) {
  google::protobuf::RepeatedPtrField<v1::Key> keys;
  keys.Add()->set_id(1);
  keys.Add();  // no kind set
  absl::StatusOr<std::vector<Key>> out = KeysFromProto(keys, "keys");
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("keys[1]"), std::string::npos) << out.status();
}

TEST(ConvertTest, RecordRoundTripsVectorAttributesAndTags) {
  Record record;
  record.key = std::string("doc-1");
  record.vector = {1.5f, -2.0f, 0.25f};
  record.attributes = {
      {"year", int64_t{2024}}, {"score", 0.5}, {"public", true}, {"lang", std::string("en")}};
  record.tags = {"a", "b"};
  v1::Record proto;
  RecordToProto(record, &proto);
  absl::StatusOr<Record> back = RecordFromProto(proto, "records[0]");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->key, record.key);
  EXPECT_EQ(back->vector, record.vector);
  EXPECT_EQ(back->attributes, record.attributes);
  EXPECT_EQ(back->tags, record.tags);
}

TEST(ConvertTest, RecordErrorsNameTheField) {
  v1::Record proto;
  absl::StatusOr<Record> out = RecordFromProto(proto, "records[3]");
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("records[3].key"), std::string::npos) << out.status();

  proto.mutable_key()->set_id(1);
  (*proto.mutable_attributes())["year"];  // value kind not set
  out = RecordFromProto(proto, "records[3]");
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("records[3].attributes[\"year\"]"), std::string::npos)
      << out.status();
}

TEST(ConvertTest, MetricMapping) {
  for (Metric m : {Metric::kL2, Metric::kInnerProduct, Metric::kCosine}) {
    absl::StatusOr<Metric> back = MetricFromProto(MetricToProto(m), "metric");
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, m);
  }
  EXPECT_EQ(MetricFromProto(v1::METRIC_UNSPECIFIED, "spec.metric").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MetricFromProto(static_cast<v1::Metric>(42), "spec.metric").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal::rpc

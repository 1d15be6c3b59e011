#include "rpc/convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "rpc/cache_convert.h"

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

TEST(ConvertTest, FilterRoundTripsEveryOp) {
  const Filter f =
      And({Eq("lang", "en"), Range("price", 1.5, 9), Or({HasTag("red"), Not(Eq("n", 3))})});
  v1::Filter proto;
  FilterToProto(f, &proto);
  ASSERT_EQ(proto.all_of().filters_size(), 3);
  EXPECT_EQ(proto.all_of().filters(1).range().lo(), 1.5);
  absl::StatusOr<Filter> back = FilterFromProto(proto, "filter");
  ASSERT_TRUE(back.ok()) << back.status();
  v1::Filter again;
  FilterToProto(*back, &again);
  EXPECT_EQ(again.SerializeAsString(), proto.SerializeAsString());
  EXPECT_EQ(back->operands[2].operands[1].operands[0].value, AttributeValue(int64_t{3}));
}

TEST(ConvertTest, FilterUnsetRangeBoundsAreOpen) {
  v1::Filter proto;
  proto.mutable_range()->set_name("price");
  proto.mutable_range()->set_hi(4);
  absl::StatusOr<Filter> f = FilterFromProto(proto, "filter");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->op, Filter::Op::kRange);
  EXPECT_EQ(f->lo, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(f->hi, 4);
}

TEST(ConvertTest, FilterShapeErrorsNameTheWirePath) {
  v1::Filter proto;
  proto.mutable_all_of()->add_filters()->set_has_tag("a");
  proto.mutable_all_of()->add_filters();  // no op
  absl::StatusOr<Filter> f = FilterFromProto(proto, "filter");
  ASSERT_TRUE(absl::IsInvalidArgument(f.status()));
  EXPECT_NE(f.status().message().find("filter.all_of.filters[1]: op not set"), std::string::npos)
      << f.status();
  v1::Filter eq;
  eq.mutable_equals()->set_name("n");
  EXPECT_NE(FilterFromProto(eq, "filter").status().message().find("filter.equals.value"),
            std::string::npos);
  v1::Filter deep;
  v1::Filter* node = &deep;
  for (size_t i = 0; i <= kMaxFilterDepth; ++i) node = node->mutable_negate();
  node->set_has_tag("a");
  EXPECT_TRUE(absl::IsInvalidArgument(FilterFromProto(deep, "filter").status()));
}

TEST(ConvertTest, TenantInfoRoundTripsEveryField) {
  TenantInfo info{.name = "acme",
                  .state = TenantState::kOffloaded,
                  .quotas = {.max_vectors = 10, .max_bytes = 20, .max_searches_per_second = 2.5},
                  .vectors_owned = 3,
                  .vectors_visible = 4,
                  .bytes_owned = 5,
                  .searches = 6,
                  .search_p50_us = 7.5,
                  .search_p99_us = 8.5,
                  .buckets_scanned = 9};
  v1::TenantInfo proto;
  TenantInfoToProto(info, &proto);
  EXPECT_EQ(proto.state(), v1::TENANT_STATE_OFFLOADED);
  TenantInfo back = TenantInfoFromProto(proto);
  EXPECT_EQ(back.name, info.name);
  EXPECT_EQ(back.state, info.state);
  EXPECT_EQ(back.quotas, info.quotas);
  EXPECT_EQ(back.vectors_owned, 3u);
  EXPECT_EQ(back.vectors_visible, 4u);
  EXPECT_EQ(back.bytes_owned, 5u);
  EXPECT_EQ(back.searches, 6u);
  EXPECT_EQ(back.search_p50_us, 7.5);
  EXPECT_EQ(back.search_p99_us, 8.5);
  EXPECT_EQ(back.buckets_scanned, 9u);
}

TEST(ConvertTest, TenantStateMustBeSetAndKnown) {
  for (TenantState state :
       {TenantState::kActive, TenantState::kInactive, TenantState::kOffloaded}) {
    EXPECT_EQ(TenantStateFromProto(TenantStateToProto(state), "state").value(), state);
  }
  absl::Status unset = TenantStateFromProto(v1::TENANT_STATE_UNSPECIFIED, "state").status();
  EXPECT_TRUE(absl::IsInvalidArgument(unset));
  EXPECT_EQ(unset.message().rfind("state: required", 0), 0u) << unset;
  absl::Status unknown = TenantStateFromProto(static_cast<v1::TenantState>(42), "state").status();
  EXPECT_TRUE(absl::IsInvalidArgument(unknown));
  EXPECT_NE(unknown.message().find("42"), std::string::npos);
}

// A quarantined cache (and its background index builds) and each category's overload budget
// cross the wire unchanged, for both SDKs and the shell to show.
TEST(ConvertTest, CacheQuarantineBuildsAndBandShareRoundTrip) {
  const CacheInfo info{.spec = {.name = "faq", .dimension = 4},
                       .entries = 3,
                       .categories = {"code"},
                       .index_builds = 2,
                       .index_build_failures = 1,
                       .index_build_error = "index build: k-means: k > n",
                       .quarantine = "entry 7: row does not decode"};
  v1::CacheInfo wire;
  CacheInfoToProto(info, &wire);
  EXPECT_EQ(wire.quarantine(), info.quarantine);
  const CacheInfo back = CacheInfoFromProto(wire);
  EXPECT_EQ(back.quarantine, info.quarantine);
  EXPECT_EQ(back.index_builds, 2u);
  EXPECT_EQ(back.index_build_failures, 1u);
  EXPECT_EQ(back.index_build_error, info.index_build_error);
  EXPECT_EQ(back.entries, 3u);
  EXPECT_EQ(CacheInfoFromProto(v1::CacheInfo{}).quarantine, "");  // serving: empty

  CacheStats stats{.name = "faq"};
  stats.categories.push_back({.category = "code",
                              .threshold_offset = 0.01,
                              .band_share = 0.25,
                              .learned_ttl_seconds = 42.5});
  v1::GetCacheStatsResponse stats_wire;
  CacheStatsToProto(stats, &stats_wire);
  const CacheStats stats_back = CacheStatsFromProto(stats_wire);
  ASSERT_EQ(stats_back.categories.size(), 1u);
  EXPECT_EQ(stats_back.categories[0].band_share, 0.25);
  EXPECT_EQ(stats_back.categories[0].threshold_offset, 0.01);
  EXPECT_EQ(stats_back.categories[0].learned_ttl_seconds, 42.5);
}

}  // namespace
}  // namespace shoal::rpc

#include "db/validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "shoal/record_checks.h"

namespace shoal::db {
namespace {

using ::testing::HasSubstr;

const CollectionSpec kSpec{"c", 3, Metric::kL2};

Record R(uint64_t key, std::vector<float> v) {
  Record r;
  r.key = key;
  r.vector = std::move(v);
  return r;
}

void ExpectInvalid(const absl::Status& s, std::string_view field) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr(field));
}

TEST(ValidationTest, NamesFollowThePattern) {
  EXPECT_TRUE(ValidateCollectionName("docs_v2-x", "name").ok());
  ExpectInvalid(ValidateCollectionName("", "name"), "name");
  ExpectInvalid(ValidateCollectionName("9lives", "name"), "name");
  ExpectInvalid(ValidateCollectionName("a b", "name"), "name");
  ExpectInvalid(ValidateCollectionName("../etc", "name"), "name");
  ExpectInvalid(ValidateCollectionName(std::string(65, 'a'), "name"), "name");
}

TEST(ValidationTest, SpecNeedsDimensionInRange) {
  ExpectInvalid(ValidateSpec({"c", 0, Metric::kL2}), "dimension");
  ExpectInvalid(ValidateSpec({"c", kMaxDimension + 1, Metric::kL2}), "dimension");
  ExpectInvalid(ValidateSpec({"c", 4, static_cast<Metric>(7)}), "metric");
  EXPECT_TRUE(ValidateSpec({"c", kMaxDimension, Metric::kCosine}).ok());
}

TEST(ValidationTest, ShardedSpecsNeedClusterMode) {
  ExpectInvalid(ValidateSpec({.name = "c", .dimension = 4, .shards = 3}), "shards");
  ExpectInvalid(ValidateSpec({.name = "c", .dimension = 4, .replication = 2}), "replication");
}

TEST(ValidationTest, ShardCopyNamesAreAcceptedWhereCollectionsAreFound) {
  EXPECT_TRUE(ValidateCollectionOrShardName("docs@2", "name").ok());
  EXPECT_TRUE(ValidateCollectionOrShardName("docs@1023", "name").ok());
  EXPECT_TRUE(ValidateCollectionOrShardName("docs", "name").ok());
  ExpectInvalid(ValidateCollectionOrShardName("docs@", "name"), "name");
  ExpectInvalid(ValidateCollectionOrShardName("docs@x", "name"), "name");
  ExpectInvalid(ValidateCollectionOrShardName("docs@12345", "name"), "name");
  ExpectInvalid(ValidateCollectionOrShardName("@1", "name"), "name");
  ExpectInvalid(ValidateCollectionOrShardName("a@1@2", "name"), "name");
  // Tenants, attributes and aliases keep the plain grammar.
  ExpectInvalid(ValidateCollectionName("docs@2", "tenant"), "tenant");
}

TEST(ValidationTest, RecordsNameTheBadField) {
  Options o;
  std::vector<Record> ok = {R(1, {1, 2, 3})};
  EXPECT_TRUE(ValidateRecords(kSpec, ok, o).ok());
  ExpectInvalid(ValidateRecords(kSpec, {}, o), "records: empty batch");
  std::vector<Record> wrong_dim = {R(1, {1, 2, 3}), R(2, {1, 2})};
  ExpectInvalid(ValidateRecords(kSpec, wrong_dim, o), "records[1].vector: dimension 2");
  std::vector<Record> nan = {R(1, {1, std::nanf(""), 3})};
  ExpectInvalid(ValidateRecords(kSpec, nan, o), "records[0].vector[1]: NaN");
  std::vector<Record> inf = {R(1, {1, 2, std::numeric_limits<float>::infinity()})};
  ExpectInvalid(ValidateRecords(kSpec, inf, o), "records[0].vector[2]: Inf");
  std::vector<Record> dup = {R(5, {1, 2, 3}), R(6, {1, 2, 3}), R(5, {1, 2, 3})};
  ExpectInvalid(ValidateRecords(kSpec, dup, o), "records[2].key: duplicates records[0].key");
  std::vector<Record> empty_key = {R(1, {1, 2, 3})};
  empty_key[0].key = std::string();
  ExpectInvalid(ValidateRecords(kSpec, empty_key, o), "records[0].key");
  std::vector<Record> bad_attr = {R(1, {1, 2, 3})};
  bad_attr[0].attributes["x"] = std::nan("");
  ExpectInvalid(ValidateRecords(kSpec, bad_attr, o), "records[0].attributes[\"x\"]");
}

// The names are built only for an error: every part of a record still names itself.
TEST(ValidationTest, RecordsNameTheBadAttributeOrTag) {
  std::vector<Record> bad_name = {R(1, {1, 2, 3}), R(2, {1, 2, 3})};
  bad_name[1].attributes["9lives"] = int64_t{1};
  ExpectInvalid(ValidateRecords(kSpec, bad_name, {}), "records[1].attributes[\"9lives\"]");
  std::vector<Record> long_value = {R(1, {1, 2, 3})};
  long_value[0].attributes["s"] = std::string(64 * 1024 + 1, 'x');
  ExpectInvalid(ValidateRecords(kSpec, long_value, {}), "records[0].attributes[\"s\"]");
  std::vector<Record> empty_tag = {R(1, {1, 2, 3})};
  empty_tag[0].tags = {"red", ""};
  ExpectInvalid(ValidateRecords(kSpec, empty_tag, {}), "records[0].tags[1]");
  std::vector<Record> long_key = {R(1, {1, 2, 3}), R(2, {1, 2, 3}), R(3, {1, 2, 3})};
  long_key[2].key = std::string(kMaxKeyBytes + 1, 'k');
  ExpectInvalid(ValidateRecords(kSpec, long_key, {}), "records[2].key");
}

TEST(ValidationTest, RecordCountIsTheBatchSizeRuleAlone) {
  Options o;
  o.max_batch_records = 2;
  EXPECT_TRUE(ValidateRecordCount(2, o).ok());
  ExpectInvalid(ValidateRecordCount(0, o), "records: empty batch");
  EXPECT_EQ(ValidateRecordCount(3, o).code(), absl::StatusCode::kResourceExhausted);
}

TEST(ValidationTest, QuotaBytesCountVectorKeyAttributesAndTags) {
  Record r = R(1, {1, 2, 3});
  EXPECT_EQ(RecordQuotaBytes(r), 3 * 4 + 8u);
  r.key = std::string("doc-7");
  r.attributes["lang"] = std::string("en");
  r.attributes["n"] = int64_t{3};
  r.tags = {"red"};
  EXPECT_EQ(RecordQuotaBytes(r), 12 + 5 + (4 + 2) + (1 + 8) + 3u);
}

TEST(ValidationTest, CosineRejectsZeroVector) {
  std::vector<Record> zero = {R(1, {0, 0, 0})};
  ExpectInvalid(ValidateRecords({"c", 3, Metric::kCosine}, zero, {}), "records[0].vector");
  EXPECT_TRUE(ValidateRecords(kSpec, zero, {}).ok());
}

TEST(ValidationTest, CosineRejectsNormsThatUnderflow) {
  // Denormal components: the norm underflows float and 1/norm overflows it.
  std::vector<Record> tiny = {R(1, {1e-40f, 1e-40f, 1e-40f})};
  ExpectInvalid(ValidateRecords({"c", 3, Metric::kCosine}, tiny, {}),
                "records[0].vector: norm 1.7");
  std::vector<Record> small_ok = {R(1, {1e-15f, 0, 0})};
  EXPECT_TRUE(ValidateRecords({"c", 3, Metric::kCosine}, small_ok, {}).ok());
  // Under L2 a tiny vector is only a point near the origin.
  EXPECT_TRUE(ValidateRecords(kSpec, tiny, {}).ok());
}

TEST(ValidationTest, EveryMetricRejectsNormsWhoseDistancesOverflow) {
  for (Metric metric : {Metric::kL2, Metric::kInnerProduct, Metric::kCosine}) {
    const CollectionSpec spec{"c", 3, metric};
    std::vector<Record> huge = {R(1, {1, 2, 3}), R(2, {3e38f, 0, 0})};
    ExpectInvalid(ValidateRecords(spec, huge, {}), "records[1].vector: squared norm 9e+76");
    std::vector<Record> big = {R(1, {1e20f, 1, 1})};
    ExpectInvalid(ValidateRecords(spec, big, {}), "records[0].vector: squared norm");
    std::vector<Record> large_ok = {R(1, {1e13f, 1, 1})};
    EXPECT_TRUE(ValidateRecords(spec, large_ok, {}).ok());
    const std::vector<float> query = {0, 1e20f, 0};
    ExpectInvalid(ValidateSearch(spec, query, {}, {}), "queries[0]: squared norm");
  }
}

TEST(ValidationTest, SearchResultsPerRequestAreBoundedBeforeAnyWork) {
  // Issue 20: 1,000 queries x k=10000 in a 16 KB request took a server to 1.5 GB.
  Options o;
  const std::vector<float> queries(3 * 1000, 0.5f);
  absl::Status s = ValidateSearch(kSpec, queries, {.k = 10000}, o);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(s.message(), HasSubstr("queries x k"));
  EXPECT_TRUE(ValidateSearch(kSpec, queries, {.k = 1000}, o).ok());
  o.max_search_results = 999;
  EXPECT_EQ(ValidateSearch(kSpec, queries, {.k = 1}, o).code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(ValidationTest, OversizeBatchIsResourceExhausted) {
  Options o;
  o.max_batch_records = 2;
  std::vector<Record> three = {R(1, {1, 2, 3}), R(2, {1, 2, 3}), R(3, {1, 2, 3})};
  absl::Status s = ValidateRecords(kSpec, three, o);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("records"));
}

TEST(ValidationTest, SearchChecksKAndQueries) {
  Options o;
  std::vector<float> q = {1, 2, 3};
  EXPECT_TRUE(ValidateSearch(kSpec, q, {.k = 10}, o).ok());
  ExpectInvalid(ValidateSearch(kSpec, q, {.k = 0}, o), "k: 0");
  ExpectInvalid(ValidateSearch(kSpec, q, {.k = o.max_k + 1}, o), "k:");
  ExpectInvalid(ValidateSearch(kSpec, {}, {.k = 1}, o), "queries: empty");
  std::vector<float> ragged = {1, 2, 3, 4};
  ExpectInvalid(ValidateSearch(kSpec, ragged, {.k = 1}, o), "queries");
  std::vector<float> nan = {1, 2, 3, 1, std::nanf(""), 3};
  ExpectInvalid(ValidateSearch(kSpec, nan, {.k = 1}, o), "queries[1][1]");
}

}  // namespace
}  // namespace shoal::db

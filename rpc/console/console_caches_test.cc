// The console's semantic-cache routes: the list, one cache's stats per partition and category
// with its policies, and policy edits (admin keys only, validated by the DB, naming the field).
#include <string>

#include "rpc/console/console_api_fixture.h"

namespace shoal::rpc::console {
namespace {

class ConsoleCachesTest : public ConsoleApiTest {
 protected:
  // Cache "answers" (dimension 4): category "code" has a policy of its own (threshold 0.95);
  // partition (t1, m) gets a store, an exact hit, a near hit and a miss; (t2, m) a store.
  void SetUp() override {
    ConsoleApiTest::SetUp();
    DbHost::Lease db = host_->Acquire();
    ASSERT_TRUE(db->CreateCache({.name = "answers", .dimension = 4}).ok());
    ASSERT_TRUE(db->SetCachePolicy("answers", "code", {.threshold = 0.95}).ok());
    CacheLookupRequest q{.partition = {.tenant = "t1", .model = "m"},
                         .category = "code",
                         .embedding = {1, 0, 0, 0},
                         .prompt = "sort a list"};
    ASSERT_TRUE(db->CacheStore("answers", {.lookup = q, .response = "sorted(x)"}, {}).ok());
    ASSERT_TRUE(db->CacheLookup("answers", q)->exact);
    q.prompt = "sort the list";
    q.embedding = {1, 0.01f, 0, 0};
    ASSERT_TRUE(db->CacheLookup("answers", q)->hit);
    q.embedding = {0, 1, 0, 0};
    ASSERT_FALSE(db->CacheLookup("answers", q)->hit);
    q.partition.tenant = "t2";
    ASSERT_TRUE(db->CacheStore("answers", {.lookup = q, .response = "other"}, {}).ok());
  }
};

TEST_F(ConsoleCachesTest, ListShowsShapeAndSize) {
  Json caches = CallJson("GET", "/api/caches", nullptr, 200, kReadOnlyKey)["caches"];
  ASSERT_EQ(caches.size(), 1u);
  EXPECT_EQ(caches[0]["name"], "answers");
  EXPECT_EQ(caches[0]["dimension"], 4);
  EXPECT_EQ(caches[0]["metric"], "cosine");
  EXPECT_EQ(caches[0]["entries"], 2);
  EXPECT_GT(caches[0]["bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(caches[0]["categories"], Json::array({"code"}));
}

TEST_F(ConsoleCachesTest, StatsPerPartitionAndCategoryWithPolicies) {
  Json cache = CallJson("GET", "/api/caches/answers", nullptr, 200, kReadOnlyKey);
  EXPECT_EQ(cache["total"]["lookups"], 3);
  EXPECT_EQ(cache["total"]["hits"], 2);
  EXPECT_EQ(cache["total"]["exact_hits"], 1);
  EXPECT_EQ(cache["total"]["misses"], 1);
  EXPECT_NEAR(cache["total"]["hit_rate"].get<double>(), 2.0 / 3, 1e-9);
  ASSERT_EQ(cache["categories_stats"].size(), 1u);
  EXPECT_EQ(cache["categories_stats"][0]["category"], "code");
  EXPECT_EQ(cache["categories_stats"][0]["stores"], 2);
  for (const char* field :
       {"evicted_by_entries", "evicted_by_bytes", "expirations", "false_hit_reports", "invalidated",
        "bytes", "threshold_offset", "learned_ttl_seconds"}) {
    EXPECT_TRUE(cache["categories_stats"][0].contains(field)) << field;
  }
  ASSERT_EQ(cache["partitions"].size(), 2u);
  EXPECT_EQ(cache["partitions"][0]["tenant"], "t1");  // the busiest first
  EXPECT_EQ(cache["partitions"][0]["model"], "m");
  EXPECT_EQ(cache["partitions"][0]["counters"]["lookups"], 3);
  EXPECT_TRUE(cache["partitions"][1]["counters"]["hit_rate"].is_null()) << "no lookups";
  ASSERT_EQ(cache["policies"].size(), 2u);
  EXPECT_EQ(cache["policies"][0]["category"], "");
  EXPECT_EQ(cache["policies"][1]["category"], "code");
  EXPECT_DOUBLE_EQ(cache["policies"][1]["threshold"].get<double>(), 0.95);
  EXPECT_EQ(cache["policies"][1]["eviction"], "lru");
  EXPECT_TRUE(cache["policies"][1]["min_threshold"].is_null()) << "NaN: same as threshold";
  EXPECT_TRUE(cache.contains("lookup_p99_us"));
  CallJson("GET", "/api/caches/nope", nullptr, 404);
}

TEST_F(ConsoleCachesTest, PolicyEditChangesTheNamedFieldsAndKeepsTheRest) {
  Json policy =
      CallJson("POST", "/api/caches/answers/policy",
               {{"category", "code"},
                {"policy", {{"threshold", 0.8}, {"ttl_seconds", 60}, {"eviction", "lfu"}}}});
  EXPECT_DOUBLE_EQ(policy["threshold"].get<double>(), 0.8);
  EXPECT_EQ(policy["ttl_seconds"], 60);
  EXPECT_EQ(policy["eviction"], "lfu");
  EXPECT_EQ(policy["enabled"], true);
  absl::StatusOr<CachePolicy> stored = host_->Acquire()->GetCachePolicy("answers", "code");
  ASSERT_TRUE(stored.ok());
  EXPECT_DOUBLE_EQ(stored->threshold, 0.8);
  EXPECT_EQ(stored->eviction, CacheEviction::kLfu);
  // A category without a policy of its own starts from the default one.
  CallJson("POST", "/api/caches/answers/policy",
           {{"category", "chat"}, {"policy", {{"enabled", false}}}});
  EXPECT_FALSE(host_->Acquire()->GetCachePolicy("answers", "chat")->enabled);
  EXPECT_TRUE(host_->Acquire()->GetCachePolicy("answers", "")->enabled);
}

TEST_F(ConsoleCachesTest, BadPolicyEditsNameTheField) {
  auto message_of = [&](const Json& edit) {
    Json answer = CallJson("POST", "/api/caches/answers/policy", {{"policy", edit}}, 400);
    return answer["error"]["message"].get<std::string>();
  };
  EXPECT_NE(message_of({{"threshold", 1.5}}).find("policy.threshold"), std::string::npos);
  EXPECT_NE(message_of({{"threshold", "high"}}).find("policy.threshold"), std::string::npos);
  EXPECT_NE(message_of({{"ttl_seconds", -1}}).find("policy.ttl_seconds"), std::string::npos);
  EXPECT_NE(message_of({{"max_entries", -5}}).find("policy.max_entries"), std::string::npos);
  EXPECT_NE(message_of({{"eviction", "random"}}).find("policy.eviction"), std::string::npos);
  EXPECT_NE(message_of({{"nope", 1}}).find("policy.nope"), std::string::npos);
  Json missing = CallJson("POST", "/api/caches/answers/policy", {{"category", "code"}}, 400);
  EXPECT_NE(missing.dump().find("policy: required"), std::string::npos);
  CallJson("POST", "/api/caches/nope/policy", {{"policy", {{"enabled", false}}}}, 404);
  EXPECT_DOUBLE_EQ(host_->Acquire()->GetCachePolicy("answers", "")->threshold, 0.9);
}

TEST_F(ConsoleCachesTest, OnlyAdminKeysEditPolicies) {
  for (const char* key : {kReadOnlyKey, kWriterKey}) {
    Json answer = CallJson("POST", "/api/caches/answers/policy",
                           {{"category", "code"}, {"policy", {{"enabled", false}}}}, 403, key);
    EXPECT_EQ(answer["error"]["code"], "PERMISSION_DENIED");
  }
  EXPECT_TRUE(host_->Acquire()->GetCachePolicy("answers", "code")->enabled);
}

}  // namespace
}  // namespace shoal::rpc::console

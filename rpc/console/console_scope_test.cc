// What a tenant-bound key ("ROLE KEY NAME tenant=acme") gets from the console API: its own
// tenant's records, search, tenant stats and cache partitions, never another tenant's vectors or
// names, and none of the actions on whole collections. Every route is tried against the other
// tenant's ("globex") data.
#include <string>
#include <vector>

#include "rpc/console/console_api_fixture.h"

namespace shoal::rpc::console {
namespace {

// globex's vectors carry this value, so a leak of one shows in any answer's text.
constexpr float kGlobexMark = 777.25f;

class ConsoleScopeTest : public ConsoleApiTest {
 protected:
  // Collection "c" (dimension 8): acme owns keys 0..9, globex 100..109 (whose vectors equal
  // acme's but for the mark in the last dimension), keys 200..209 have no owner. Collection
  // "other" has no tenant acme.
  void SetUp() override {
    ConsoleApiTest::SetUp();
    DbHost::Lease db = host_->Acquire();
    ASSERT_TRUE(db->CreateCollection({.name = "c", .dimension = 8}).ok());
    ASSERT_TRUE(db->CreateCollection({.name = "other", .dimension = 8}).ok());
    for (const char* tenant : {"acme", "globex"}) {
      ASSERT_TRUE(db->CreateTenant("c", {.name = tenant}).ok());
    }
    ASSERT_TRUE(db->CreateTenant("other", {.name = "globex"}).ok());
    for (const auto& [tenant, base] :
         {std::pair<std::string, uint64_t>{"acme", 0}, {"globex", 100}, {"", 200}}) {
      std::vector<Record> records;
      for (uint64_t i = 0; i < 10; ++i) {
        Record record{.key = base + i};
        for (int d = 0; d < 8; ++d) record.vector.push_back(float(i * (d + 1) % 7));
        if (tenant == "globex") record.vector.back() = kGlobexMark;
        record.attributes["owner"] = tenant.empty() ? std::string("nobody") : tenant;
        records.push_back(record);
      }
      ASSERT_TRUE(db->Upsert("c", records, {.tenant = tenant}).ok());
    }
    ASSERT_TRUE(db->CreateCache({.name = "answers", .dimension = 4}).ok());
    for (const char* tenant : {"acme", "globex"}) {
      CacheStoreRequest store{
          .lookup = {.partition = {.tenant = tenant, .model = std::string(tenant) + "-model"},
                     .embedding = {1, 0, 0, 0},
                     .prompt = "hello"},
          .response = std::string(tenant) + " says hi"};
      ASSERT_TRUE(db->CacheStore("answers", store, {}).ok());
      ASSERT_TRUE(db->CacheLookup("answers", store.lookup).ok());
    }
  }

  // The keys in an answer's "records" ([{key, ...}], nulls skipped).
  static std::vector<uint64_t> KeysOf(const Json& records) {
    std::vector<uint64_t> keys;
    for (const Json& r : records) {
      if (r.is_null()) continue;
      keys.push_back(r["key"].get<uint64_t>());
    }
    return keys;
  }

  // An answer must not name globex nor show one of its vectors.
  static void ExpectNoGlobex(const HttpResponse& response, const std::string& what) {
    EXPECT_EQ(response.body.find("globex"), std::string::npos) << what << ": " << response.body;
    EXPECT_EQ(response.body.find("777.25"), std::string::npos) << what << ": " << response.body;
  }
};

TEST_F(ConsoleScopeTest, SessionNamesTheTenantAndOffersNoWrites) {
  for (const char* key : {kAcmeKey, kAcmeWriterKey}) {
    Json session = CallJson("GET", "/api/session", nullptr, 200, key);
    EXPECT_EQ(session["tenant"], "acme");
    EXPECT_EQ(session["can_write"], false) << "the console's writes act on whole collections";
    EXPECT_EQ(session["can_admin"], false);
  }
  EXPECT_EQ(CallJson("GET", "/api/session", nullptr, 200, kWriterKey)["can_write"], true);
  EXPECT_EQ(CallJson("GET", "/api/session", nullptr, 200, kAdminKey)["tenant"], "");
}

TEST_F(ConsoleScopeTest, RecordsBrowseAndSearchShowOnlyItsTenant) {
  Json page = CallJson("POST", "/api/collections/c/browse", {{"limit", 100}}, 200, kAcmeKey);
  std::vector<uint64_t> want = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(KeysOf(page["records"]), want);
  // An admin sees all 30; naming a tenant shows what that tenant sees.
  EXPECT_EQ(CallJson("POST", "/api/collections/c/browse", {{"limit", 100}})["records"].size(), 30u);
  EXPECT_EQ(KeysOf(CallJson("POST", "/api/collections/c/browse",
                            {{"limit", 100}, {"tenant", "acme"}})["records"]),
            want);
  // The record of another tenant reads as absent.
  Json got = CallJson("POST", "/api/collections/c/get", {{"keys", {100, 3, 205}}}, 200, kAcmeKey);
  EXPECT_TRUE(got["records"][0].is_null());
  EXPECT_EQ(got["records"][1]["key"], 3);
  EXPECT_TRUE(got["records"][2].is_null());
  // Searching by globex's vector finds acme's records only.
  std::vector<float> query = {0, 1, 2, 3, 4, 5, 6, kGlobexMark};
  Json hits =
      CallJson("POST", "/api/collections/c/search", {{"vector", query}, {"k", 30}}, 200, kAcmeKey);
  ASSERT_EQ(hits["hits"].size(), 10u);
  for (const Json& hit : hits["hits"]) EXPECT_LT(hit["key"].get<uint64_t>(), 10u) << hit;
  Json near =
      CallJson("POST", "/api/collections/c/browse", {{"near", 2}, {"limit", 30}}, 200, kAcmeKey);
  EXPECT_EQ(near["records"].size(), 10u);
}

TEST_F(ConsoleScopeTest, AnotherTenantsRecordCannotBeAQueryOrAnAnchor) {
  Json by_key = CallJson("POST", "/api/collections/c/search", {{"key", 101}}, 404, kAcmeKey);
  EXPECT_NE(by_key["error"]["message"].get<std::string>().find("key:"), std::string::npos);
  CallJson("POST", "/api/collections/c/browse", {{"near", 101}}, 404, kAcmeKey);
  CallJson("POST", "/api/collections/c/search", {{"key", 201}}, 404, kAcmeKey);
}

TEST_F(ConsoleScopeTest, NamingAnotherTenantIsPermissionDeniedNamingTheField) {
  for (const char* route : {"get", "browse", "search"}) {
    Json body = {{"tenant", "globex"}, {"keys", {100}}, {"key", 100}};
    Json answer = CallJson("POST", absl::StrCat("/api/collections/c/", route), body, 403, kAcmeKey);
    EXPECT_EQ(answer["error"]["code"], "PERMISSION_DENIED");
    EXPECT_NE(answer["error"]["message"].get<std::string>().find("tenant"), std::string::npos);
  }
  // An unbound read-only key may not act as a tenant either (as over gRPC).
  CallJson("POST", "/api/collections/c/browse", {{"tenant", "acme"}}, 403, kReadOnlyKey);
}

TEST_F(ConsoleScopeTest, TenantsAndCollectionsShowOnlyItsOwnTenant) {
  Json tenants = CallJson("GET", "/api/collections/c/tenants", nullptr, 200, kAcmeKey);
  ASSERT_EQ(tenants["tenants"].size(), 1u);
  EXPECT_EQ(tenants["tenants"][0]["name"], "acme");
  EXPECT_EQ(tenants["tenants"][0]["vectors_owned"], 10);
  EXPECT_EQ(CallJson("GET", "/api/collections/other/tenants", nullptr, 200, kAcmeKey)["tenants"],
            Json::array());
  CallJson("GET", "/api/collections/nope/tenants", nullptr, 404, kAcmeKey);
  Json collections = CallJson("GET", "/api/collections", nullptr, 200, kAcmeKey);
  ASSERT_EQ(collections["collections"].size(), 2u);
  EXPECT_EQ(collections["collections"][0]["tenant"]["vectors_visible"], 10);
  EXPECT_TRUE(collections["collections"][1]["tenant"].is_null());
  EXPECT_EQ(CallJson("GET", "/api/collections/c", nullptr, 200, kAcmeKey)["tenant"]["name"],
            "acme");
}

TEST_F(ConsoleScopeTest, CachesShowOnlyItsTenantsPartitions) {
  Json caches = CallJson("GET", "/api/caches", nullptr, 200, kAcmeKey);
  ASSERT_EQ(caches["caches"].size(), 1u);
  EXPECT_EQ(caches["caches"][0]["entries"], 1);  // its own; the cache holds 2
  EXPECT_EQ(CallJson("GET", "/api/caches", nullptr)["caches"][0]["entries"], 2);
  Json cache = CallJson("GET", "/api/caches/answers", nullptr, 200, kAcmeKey);
  ASSERT_EQ(cache["partitions"].size(), 1u);
  EXPECT_EQ(cache["partitions"][0]["tenant"], "acme");
  EXPECT_EQ(cache["total"]["hits"], 1);
  EXPECT_EQ(cache["categories_stats"], Json::array()) << "per-category counters mix tenants";
  EXPECT_FALSE(cache.contains("lookup_p99_us"));
  Json all = CallJson("GET", "/api/caches/answers", nullptr);
  EXPECT_EQ(all["partitions"].size(), 2u);
  EXPECT_EQ(all["total"]["hits"], 2);
}

TEST_F(ConsoleScopeTest, EveryRouteAgainstAnotherTenantsDataShowsNothingOfIt) {
  struct Try {
    const char* method;
    const char* path;
    Json body;
    int status;           // for both bound keys
    bool echoes = false;  // the error repeats the tenant the request named itself
  };
  const std::vector<Try> tries = {
      {"GET", "/api/session", nullptr, 200},
      {"GET", "/api/collections", nullptr, 200},
      {"GET", "/api/collections/c", nullptr, 200},
      {"GET", "/api/collections/other", nullptr, 200},
      {"POST", "/api/collections", {{"name", "globex2"}, {"dimension", 8}}, 403},
      {"DELETE", "/api/collections/c", nullptr, 403},
      {"POST", "/api/collections/c/get", {{"keys", {100, 101, 200}}}, 200},
      {"POST", "/api/collections/c/browse", {{"limit", 1000}}, 200},
      {"POST",
       "/api/collections/c/browse",
       {{"filter", {{"equals", {{"name", "owner"}, {"value", {{"string_value", "globex"}}}}}}}},
       200},
      {"POST", "/api/collections/c/browse", {{"near", 100}}, 404},
      {"POST", "/api/collections/c/search", {{"key", 100}}, 404},
      // Nearest to globex's records (they would show their mark).
      {"POST",
       "/api/collections/c/search",
       {{"vector", {0, 1, 2, 3, 4, 5, 6, 700}}, {"k", 30}},
       200},
      {"POST", "/api/collections/c/search", {{"key", 1}, {"tenant", "globex"}}, 403, true},
      {"POST", "/api/collections/c/build", {{"spec", "flat"}}, 403},
      {"GET", "/api/builds", nullptr, 403},
      {"GET", "/api/snapshots", nullptr, 403},
      {"POST", "/api/snapshots", {{"name", "s"}}, 403},
      {"POST", "/api/snapshots/s/restore", nullptr, 403},
      {"GET", "/api/metrics", nullptr, 200},
      {"GET", "/api/collections/c/tenants", nullptr, 200},
      {"GET", "/api/collections/other/tenants", nullptr, 200},
      {"GET", "/api/caches", nullptr, 200},
      {"GET", "/api/caches/answers", nullptr, 200},
      {"POST", "/api/caches/answers/policy", {{"policy", {{"enabled", false}}}}, 403},
  };
  for (const char* key : {kAcmeKey, kAcmeWriterKey}) {
    for (const Try& t : tries) {
      const std::string what = absl::StrCat(key, " ", t.method, " ", t.path, " ", t.body.dump());
      HttpResponse response = Call(t.method, t.path, t.body, key);
      EXPECT_EQ(response.status, t.status) << what << ": " << response.body;
      if (!t.echoes) ExpectNoGlobex(response, what);
    }
  }
  // Nothing changed.
  DbHost::Lease db = host_->Acquire();
  EXPECT_EQ(db->DescribeCollection("c")->num_vectors, 30u);
  EXPECT_TRUE(db->GetCachePolicy("answers", "")->enabled);
}

}  // namespace
}  // namespace shoal::rpc::console

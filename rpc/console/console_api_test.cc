// ConsoleApi's handlers over a real DB in a temporary directory, called directly (no HTTP):
// keys and roles, validation with named fields, search against the DB's own, builds,
// snapshots, metrics. The page itself is tested in a browser (tests/console/).
#include "rpc/console/console_api.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "rpc/api_keys.h"
#include "rpc/console/console_api_fixture.h"
#include "rpc/console/console_server.h"
#include "rpc/metrics.h"
#include "rpc/rate_limiter.h"

namespace shoal::rpc::console {
namespace {

TEST_F(ConsoleApiTest, UnknownOrMissingKeyIsUnauthenticatedAndShowsNothing) {
  Fill(10);
  for (const std::string key : {"", "not-a-key-at-all-0000"}) {
    for (const char* path : {"/api/session", "/api/collections", "/api/collections/c",
                             "/api/metrics", "/api/builds"}) {
      HttpResponse response = Call("GET", path, nullptr, key);
      EXPECT_EQ(response.status, 401) << path;
      EXPECT_EQ(Json::parse(response.body)["error"]["code"], "UNAUTHENTICATED");
      EXPECT_EQ(response.body.find("\"c\""), std::string::npos) << response.body;
    }
  }
}

TEST_F(ConsoleApiTest, SessionNamesTheKeyAndItsRoleButNeverTheKey) {
  Json session = CallJson("GET", "/api/session", nullptr, 200, kReadOnlyKey);
  EXPECT_EQ(session["name"], "dashboards");
  EXPECT_EQ(session["role"], "read-only");
  EXPECT_EQ(session["can_write"], false);
  EXPECT_EQ(session["can_admin"], false);
  EXPECT_EQ(session.dump().find(kReadOnlyKey), std::string::npos);
  EXPECT_EQ(CallJson("GET", "/api/session", nullptr, 200, kAdminKey)["can_admin"], true);
}

TEST_F(ConsoleApiTest, ReadOnlyKeyReadsButCannotWrite) {
  Fill(10);
  EXPECT_EQ(CallJson("GET", "/api/collections", nullptr, 200,
                     kReadOnlyKey)["collections"][0]["num_vectors"],
            10);
  const struct {
    const char* method;
    const char* path;
    Json body;
  } writes[] = {
      {"DELETE", "/api/collections/c", nullptr},
      {"POST", "/api/collections", {{"name", "d"}, {"dimension", 4}}},
      {"POST", "/api/collections/c/build", {{"spec", "flat"}}},
      {"POST", "/api/snapshots", Json::object()},
      {"POST", "/api/snapshots/x/restore", nullptr},
  };
  for (const auto& write : writes) {
    Json error = CallJson(write.method, write.path, write.body, 403, kReadOnlyKey);
    EXPECT_EQ(error["error"]["code"], "PERMISSION_DENIED") << write.path;
  }
  EXPECT_TRUE(host_->Acquire()->DescribeCollection("c").ok());
  EXPECT_FALSE(host_->Acquire()->DescribeCollection("d").ok());
  // A read-write key may drop (as over gRPC) but not build (admin).
  CallJson("POST", "/api/collections/c/build", {{"spec", "flat"}}, 403, kWriterKey);
  CallJson("DELETE", "/api/collections/c", nullptr, 200, kWriterKey);
  EXPECT_TRUE(absl::IsNotFound(host_->Acquire()->DescribeCollection("c").status()));
}

TEST_F(ConsoleApiTest, CreateDescribeAndDropGoThroughTheDbsValidation) {
  Json info = CallJson("POST", "/api/collections",
                       {{"name", "docs"}, {"dimension", 4}, {"metric", "cosine"}});
  EXPECT_EQ(info["metric"], "cosine");
  EXPECT_EQ(CallJson("GET", "/api/collections/docs", nullptr)["dimension"], 4);
  Json bad = CallJson("POST", "/api/collections", {{"name", "9bad name"}, {"dimension", 4}}, 400);
  EXPECT_EQ(bad["error"]["code"], "INVALID_ARGUMENT");
  CallJson("POST", "/api/collections", {{"name", "docs"}, {"dimension", 4}}, 409);
  Json metric = CallJson("POST", "/api/collections",
                         {{"name", "e"}, {"dimension", 4}, {"metric", "manhattan"}}, 400);
  EXPECT_NE(metric["error"]["message"].get<std::string>().find("metric"), std::string::npos);
  CallJson("GET", "/api/collections/nope", nullptr, 404);
  CallJson("DELETE", "/api/collections/docs", nullptr, 200);
}

TEST_F(ConsoleApiTest, SearchByKeyAndByVectorMatchTheDbsSearch) {
  Fill(50);
  std::vector<std::optional<Record>> seven = *host_->Acquire()->Get("c", {{Key(uint64_t{7})}});
  std::vector<std::vector<Hit>> want = *host_->Acquire()->Search("c", seven[0]->vector, {.k = 5});
  for (const Json& body :
       {Json{{"key", 7}, {"k", 5}}, Json{{"vector", seven[0]->vector}, {"k", 5}}}) {
    Json answer = CallJson("POST", "/api/collections/c/search", body);
    ASSERT_EQ(answer["hits"].size(), 5u);
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(answer["hits"][i]["key"], std::get<uint64_t>(want[0][i].key)) << i;
      EXPECT_FLOAT_EQ(answer["hits"][i]["distance"].get<float>(), want[0][i].distance);
      EXPECT_EQ(answer["hits"][i]["record"]["vector"].size(), 8u);
    }
  }
}

TEST_F(ConsoleApiTest, BadRequestsNameTheField) {
  Fill(5);
  const struct {
    Json body;
    const char* field;
  } cases[] = {
      {{{"vector", {1, 2, 3}}}, "vector"},
      {{{"vector", {1, 2, 3, 4, 5, 6, 7, "x"}}}, "vector[7]"},
      {{{"key", -3}}, "key"},
      {{{"key", 999}}, "key"},
      {{{"key", 1}, {"k", 0}}, "k"},
      {{{"key", 1}, {"filter", {{"equals", {{"name", "label"}}}}}}, "filter"},
      {{{"key", 1}, {"filter", {{"bogus", 1}}}}, "filter"},
      {Json::object(), "vector"},
  };
  for (const auto& c : cases) {
    HttpResponse response = Call("POST", "/api/collections/c/search", c.body);
    EXPECT_TRUE(response.status == 400 || response.status == 404) << c.body << response.body;
    const std::string message = Json::parse(response.body)["error"]["message"];
    EXPECT_EQ(message.rfind(c.field, 0), 0u) << c.body << " -> " << message;
  }
  EXPECT_EQ(Call("POST", "/api/collections/c/search", nullptr).status, 400);
  HttpResponse not_json = api_->Handle({.method = "POST",
                                        .path = "/api/collections/c/search",
                                        .body = "{nope",
                                        .authorization = std::string("Bearer ") + kAdminKey,
                                        .content_type = "application/json"});
  EXPECT_EQ(not_json.status, 400);
  EXPECT_NE(not_json.body.find("body: not valid JSON"), std::string::npos);
  Json keys = CallJson("POST", "/api/collections/c/get", {{"keys", {1, "two", -1}}}, 400);
  EXPECT_EQ(keys["error"]["message"].get<std::string>().rfind("keys[2]", 0), 0u);
}

TEST_F(ConsoleApiTest, BrowseReturnsOnlyRecordsThatPassTheFilter) {
  Fill(30);
  Json filter = {{"equals", {{"name", "label"}, {"value", {{"int_value", 2}}}}}};
  Json answer = CallJson("POST", "/api/collections/c/browse", {{"filter", filter}, {"limit", 100}});
  ASSERT_EQ(answer["records"].size(), 10u);
  for (const Json& r : answer["records"]) EXPECT_EQ(r["record"]["attributes"]["label"], 2);
  EXPECT_EQ(answer["anchor"], "scroll");
  // Without "near" it pages through the records in key order.
  Json first = CallJson("POST", "/api/collections/c/browse", {{"filter", filter}, {"limit", 4}});
  ASSERT_EQ(first["records"].size(), 4u);
  EXPECT_EQ(first["records"][0]["key"], 2);
  EXPECT_EQ(first["records"][3]["key"], 11);  // labels are key % 3
  Json second =
      CallJson("POST", "/api/collections/c/browse",
               {{"filter", filter}, {"limit", 100}, {"page_token", first["next_page_token"]}});
  ASSERT_EQ(second["records"].size(), 6u);
  EXPECT_EQ(second["records"][0]["key"], 14);
  EXPECT_EQ(second["next_page_token"], "");
  Json near = CallJson("POST", "/api/collections/c/browse", {{"near", 4}, {"limit", 3}});
  EXPECT_EQ(near["anchor"], "near");
  EXPECT_EQ(near["records"][0]["key"], 4);
  Json got = CallJson("POST", "/api/collections/c/get", {{"keys", {3, 77}}});
  EXPECT_EQ(got["records"][0]["key"], 3);
  EXPECT_TRUE(got["records"][1].is_null());
}

TEST_F(ConsoleApiTest, IndexBuildRunsInTheBackgroundWithProgress) {
  Fill(400);
  Json started = CallJson("POST", "/api/collections/c/build", {{"spec", "spann:seed=1"}});
  EXPECT_EQ(started["collection"], "c");
  Json build;
  for (int i = 0; i < 600; ++i) {
    build = CallJson("GET", "/api/builds", nullptr, 200, kReadOnlyKey)["builds"][0];
    if (build["done"] == true) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_EQ(build["done"], true) << build;
  EXPECT_FALSE(build.contains("error")) << build;
  EXPECT_EQ(build["fraction"], 1.0);
  EXPECT_EQ(build["started_by"], "ops");
  EXPECT_NE(
      CallJson("GET", "/api/collections/c", nullptr)["index"].get<std::string>().find("spann"),
      std::string::npos);
  // A bad spec fails in the build, with the DB's error naming the key.
  CallJson("POST", "/api/collections/c/build", {{"spec", "spann:bogus=1"}});
  for (int i = 0; i < 600; ++i) {
    build = CallJson("GET", "/api/builds", nullptr)["builds"][0];
    if (build["done"] == true) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(build["error"]["code"], "INVALID_ARGUMENT") << build;
  CallJson("POST", "/api/collections/nope/build", {{"spec", "flat"}}, 404);
  CallJson("POST", "/api/collections/c/build", Json::object(), 400);
}

TEST_F(ConsoleApiTest, SnapshotCreateListRestore) {
  Fill(10);
  Json made = CallJson("POST", "/api/snapshots", {{"name", "before"}});
  EXPECT_EQ(made["name"], "before");
  CallJson("POST", "/api/snapshots", {{"name", "../evil"}}, 400);
  CallJson("POST", "/api/snapshots", {{"name", "before"}}, 409);
  EXPECT_EQ(CallJson("GET", "/api/snapshots", nullptr)["snapshots"][0]["name"], "before");
  CallJson("DELETE", "/api/collections/c", nullptr);
  CallJson("POST", "/api/snapshots/before/restore", nullptr);
  EXPECT_EQ(CallJson("GET", "/api/collections/c", nullptr)["num_vectors"], 10);
  CallJson("POST", "/api/snapshots/missing/restore", nullptr, 404);
}

TEST_F(ConsoleApiTest, CallsAreCountedInTheServersMetricsExceptThePollItself) {
  Fill(5);
  const double before = metrics_.Sample().rpcs;
  CallJson("GET", "/api/collections", nullptr);
  CallJson("GET", "/api/collections/nope", nullptr, 404);
  Json sample = CallJson("GET", "/api/metrics", nullptr);
  EXPECT_EQ(sample["rpcs"].get<double>(), before + 2);
  EXPECT_EQ(sample["rpc_errors"].get<double>(), 1);
  EXPECT_EQ(sample["latency_counts"].back().get<double>(), before + 2);
  EXPECT_TRUE(sample["latency_bounds"].back().is_null());  // +inf
  Call("GET", "/api/collections", nullptr, "wrong-key-0000000000");
  EXPECT_EQ(CallJson("GET", "/api/metrics", nullptr)["rejections"]["unauthenticated"], 1);
}

TEST_F(ConsoleApiTest, LimitsRoutesAndHooks) {
  HttpResponse big =
      Call("POST", "/api/collections/c/search", {{"vector", std::vector<float>(400000, 1.0f)}});
  EXPECT_EQ(big.status, 429);
  EXPECT_NE(big.body.find("max-message-bytes"), std::string::npos);
  EXPECT_EQ(Call("GET", "/api/nothing", nullptr).status, 404);
  EXPECT_EQ(Call("PUT", "/api/collections", nullptr).status, 405);
  // Tenants: as TenantService/ListTenants, read-only keys list them; an unknown collection is
  // NOT_FOUND (console_scope_test.cc: what a tenant-bound key sees).
  Fill(3);
  ASSERT_TRUE(host_->Acquire()->CreateTenant("c", {.name = "acme"}).ok());
  for (const char* key : {kAdminKey, kReadOnlyKey}) {
    Json tenants = CallJson("GET", "/api/collections/c/tenants", nullptr, 200, key);
    ASSERT_EQ(tenants["tenants"].size(), 1u) << tenants;
    EXPECT_EQ(tenants["tenants"][0]["name"], "acme");
  }
  EXPECT_EQ(Call("GET", "/api/collections/nope/tenants", nullptr).status, 404);
}

TEST_F(ConsoleApiTest, OtherSitesCannotDriveTheConsole) {
  Fill(3);
  HttpRequest request{.method = "POST",
                      .path = "/api/collections",
                      .body = R"({"name": "evil", "dimension": 2})",
                      .authorization = std::string("Bearer ") + kAdminKey,
                      .host = "127.0.0.1:8080",
                      .origin = "http://127.0.0.1:8080",
                      .content_type = "text/plain"};
  // A cross-site form or "simple" fetch: not JSON, refused before anything runs.
  HttpResponse response = api_->Handle(request);
  EXPECT_EQ(response.status, 400) << response.body;
  EXPECT_NE(response.body.find("content_type"), std::string::npos);
  // JSON from another origin.
  request.content_type = "application/json";
  request.origin = "http://evil.example";
  response = api_->Handle(request);
  EXPECT_EQ(response.status, 403) << response.body;
  EXPECT_NE(response.body.find("origin: "), std::string::npos);
  EXPECT_FALSE(host_->Acquire()->DescribeCollection("evil").ok());
  // The console's own page.
  request.origin = "http://127.0.0.1:8080";
  EXPECT_EQ(api_->Handle(request).status, 200);
  EXPECT_GE(metrics_.Sample().rejections["cross_origin"], 2);
}

TEST(ConsoleOpenApiTest, WithoutKeysOnlyAddressesAsHostsAreAnswered) {
  std::string tmpl = ::testing::TempDir() + "console_open_test_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  {
    absl::StatusOr<std::unique_ptr<DbHost>> host = DbHost::Open(tmpl, Options{});
    ASSERT_TRUE(host.ok()) << host.status();
    RateLimiter limiter(0, 0);
    ServerMetrics metrics;
    CallGate gate(nullptr, &limiter, &metrics, host->get(), 1 << 20);
    SnapshotShelf shelf("");
    IndexBuilds builds(&gate);
    ConsoleApi api(&gate, &shelf, &builds);
    for (const char* good : {"127.0.0.1:8080", "localhost:8080", "[::1]:8080", ""}) {
      EXPECT_EQ(api.Handle({.method = "GET", .path = "/api/session", .host = good}).status, 200)
          << good;
    }
    // A DNS-rebinding page: its own name resolving to 127.0.0.1.
    HttpResponse rebound =
        api.Handle({.method = "GET", .path = "/api/collections", .host = "evil.example:8080"});
    EXPECT_EQ(rebound.status, 403) << rebound.body;
    EXPECT_NE(rebound.body.find("host: "), std::string::npos);
  }
  std::filesystem::remove_all(tmpl);
}

TEST(ConsoleAssetsTest, TheFrontEndIsEmbedded) {
  const ConsoleAsset* index = FindAsset("/");
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(std::string(index->content_type), "text/html; charset=utf-8");
  EXPECT_NE(std::string(reinterpret_cast<const char*>(index->data), index->size).find("/js/app.js"),
            std::string::npos);
  ASSERT_NE(FindAsset("/js/app.js"), nullptr);
  EXPECT_EQ(std::string(FindAsset("/js/app.js")->content_type), "text/javascript; charset=utf-8");
  EXPECT_EQ(FindAsset("/nope.js"), nullptr);
  EXPECT_EQ(FindAsset("js/app.js"), nullptr);
}

}  // namespace
}  // namespace shoal::rpc::console

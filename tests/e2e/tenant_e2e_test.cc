// End-to-end: tenants through a real `shoald` with API keys bound to tenants, driven through
// the C++ SDK. A tenant-bound key must not reach another tenant's vectors by any RPC (search,
// get, delete, grant, list, count), whatever the request body says; admin keys can.
//
// The wire checks (TenantE2eTest.Wire*) need no engine. The tests that store tenants need the
// tenant engine behind DB::CreateTenant & co. (db/, tenants/): until it lands they skip,
// saying so, and they run unchanged once it does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rpc/client/shoal_client.h"
#include "tests/e2e/prometheus_text.h"
#include "tests/e2e/shoald_process.h"

namespace shoal::e2e {
namespace {

using client::Client;

constexpr char kAdminKey[] = "admin-key-0123456789abcdef";
constexpr char kWriterKey[] = "writer-key-0123456789abcdef";
constexpr char kAcmeKey[] = "acme-key-0123456789abcdef";
constexpr char kAcmeReaderKey[] = "acme-ro-key-0123456789abcdef";
constexpr char kBetaKey[] = "beta-key-0123456789abcdef";

// Skips the rest of a test when the server has no tenant engine yet.
#define REQUIRE_TENANT_ENGINE()                                       \
  do {                                                                \
    if (!HasTenants())                                                \
      GTEST_SKIP() << "needs the tenant engine (DB::CreateTenant is " \
                      "Unimplemented in this build)";                 \
  } while (0)

std::vector<Key> Ids(std::initializer_list<uint64_t> ids) {
  return std::vector<Key>(ids.begin(), ids.end());
}

class TenantE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    ASSERT_FALSE(dir_.empty());
    std::ofstream(dir_ + "/keys") << "admin " << kAdminKey << " ops\n"
                                  << "read-write " << kWriterKey << " loader\n"
                                  << "read-write " << kAcmeKey << " acme-app tenant=acme\n"
                                  << "read-only " << kAcmeReaderKey << " acme-ro tenant=acme\n"
                                  << "read-write " << kBetaKey << " beta-app tenant=beta\n";
    shoald_ = std::make_unique<ShoaldProcess>();
    absl::Status started =
        shoald_->Start(dir_ + "/data", {"--key-file", dir_ + "/keys", "--metrics-listen",
                                        "127.0.0.1:0", "--snapshot-dir", dir_ + "/snaps"});
    ASSERT_TRUE(started.ok()) << started;
    admin_ = Connect(kAdminKey);
    acme_ = Connect(kAcmeKey);
    beta_ = Connect(kBetaKey);
    ASSERT_TRUE(admin_->CreateCollection({.name = "docs", .dimension = 2}).ok());
    absl::StatusOr<TenantInfo> acme = admin_->CreateTenant("docs", {.name = "acme"});
    has_tenants_ = !absl::IsUnimplemented(acme.status());
    if (!has_tenants_) return;
    ASSERT_TRUE(acme.ok()) << acme.status();
    ASSERT_TRUE(admin_->CreateTenant("docs", {.name = "beta"}).ok());
    // acme owns 1 and 2, beta owns 3 and 4, 5 has no owner.
    std::vector<Record> a = {{.key = uint64_t{1}, .vector = {1, 0}},
                             {.key = uint64_t{2}, .vector = {2, 0}}};
    std::vector<Record> b = {{.key = uint64_t{3}, .vector = {3, 0}},
                             {.key = uint64_t{4}, .vector = {4, 0}}};
    std::vector<Record> none = {{.key = uint64_t{5}, .vector = {5, 0}}};
    ASSERT_TRUE(admin_->Upsert("docs", a, WriteOptions{.tenant = "acme"}).ok());
    ASSERT_TRUE(beta_->Upsert("docs", b).ok());  // beta's key: beta owns them
    ASSERT_TRUE(admin_->Upsert("docs", none).ok());
  }
  void TearDown() override {
    admin_.reset();
    acme_.reset();
    beta_.reset();
    shoald_.reset();
    std::filesystem::remove_all(dir_);
  }
  bool HasTenants() const { return has_tenants_; }
  std::unique_ptr<Client> Connect(const std::string& key) {
    absl::StatusOr<std::unique_ptr<Client>> c =
        Client::Connect(shoald_->address(), {.api_key = key});
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  // The ids among 1..5 that Get returns to `client`.
  std::vector<uint64_t> Visible(Client& client, const ReadOptions& options = {}) {
    absl::StatusOr<std::vector<std::optional<Record>>> got =
        client.Get("docs", Ids({1, 2, 3, 4, 5}), options);
    EXPECT_TRUE(got.ok()) << got.status();
    std::vector<uint64_t> out;
    for (const auto& r : got.value_or(std::vector<std::optional<Record>>{})) {
      if (r.has_value()) out.push_back(std::get<uint64_t>(r->key));
    }
    return out;
  }
  // The ids of one search's hits (k = 10), or {999} when it failed.
  std::vector<uint64_t> Searched(Client& client, const std::string& tenant = "") {
    const std::vector<float> query = {0, 0};
    absl::StatusOr<std::vector<std::vector<Hit>>> hits =
        client.Search("docs", query, {.k = 10, .tenant = tenant});
    EXPECT_TRUE(hits.ok()) << hits.status();
    if (!hits.ok()) return {999};
    std::vector<uint64_t> out;
    for (const Hit& hit : hits->front()) out.push_back(std::get<uint64_t>(hit.key));
    return out;
  }
  std::vector<Sample> Scrape() {
    absl::StatusOr<HttpResponse> response = HttpGet(shoald_->metrics_port(), "/metrics");
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) return {};
    absl::StatusOr<std::vector<Sample>> samples = ParsePrometheusText(response->body);
    EXPECT_TRUE(samples.ok()) << samples.status();
    return samples.value_or(std::vector<Sample>{});
  }

  std::string dir_;
  std::unique_ptr<ShoaldProcess> shoald_;
  std::unique_ptr<Client> admin_, acme_, beta_;
  bool has_tenants_ = false;
};

void ExpectDenied(const absl::Status& status) {
  EXPECT_TRUE(absl::IsPermissionDenied(status)) << status;
  EXPECT_EQ(status.message().find("key-0123456789"), std::string::npos) << status;
}

TEST_F(TenantE2eTest, WireRefusesABoundKeyNamingAnotherTenantWhateverTheRpc) {
  std::vector<Record> records = {{.key = uint64_t{9}, .vector = {9, 0}}};
  const std::vector<float> query = {0, 0};
  ExpectDenied(acme_->Get("docs", Ids({3}), {.tenant = "beta"}).status());
  ExpectDenied(acme_->Search("docs", query, {.k = 10, .tenant = "beta"}).status());
  ExpectDenied(acme_->Delete("docs", Ids({3}), WriteOptions{.tenant = "beta"}).status());
  ExpectDenied(acme_->Upsert("docs", records, WriteOptions{.tenant = "beta"}).status());
  ExpectDenied(acme_->Ingest("docs", records, {.tenant = "beta"}).status());
  client::WriteOp op{.kind = client::WriteOp::Kind::kDelete,
                     .collection = "docs",
                     .keys = Ids({3}),
                     .tenant = "beta"};
  ExpectDenied(acme_->Batch(std::vector<client::WriteOp>{op}).status());
  std::vector<client::SearchCall> calls = {
      {.collection = "docs", .queries = query, .params = {.k = 10, .tenant = "beta"}}};
  ExpectDenied(acme_->BatchSearch(calls).status());
  ExpectDenied(acme_->DescribeTenant("docs", "beta").status());
  ExpectDenied(acme_->CountByTenant("docs", "beta").status());
  ExpectDenied(acme_->DeleteByTenant("docs", "beta").status());
  // Sharing and tenant administration act beyond one tenant.
  ExpectDenied(acme_->Grant("docs", "acme", Ids({3})));
  ExpectDenied(acme_->Grant("docs", "beta", Ids({1})));
  ExpectDenied(acme_->Revoke("docs", "beta", Ids({3})));
  ExpectDenied(acme_->ListKeyTenants("docs", uint64_t{3}).status());
  ExpectDenied(acme_->CreateTenant("docs", {.name = "gamma"}).status());
  ExpectDenied(acme_->DropTenant("docs", "beta").status());
  ExpectDenied(acme_->SetTenantQuotas("docs", "beta", {.max_vectors = 1}));
  ExpectDenied(acme_->SetTenantState("docs", "beta", TenantState::kInactive));
  // So do collection-level operations.
  ExpectDenied(acme_->DropCollection("docs"));
  ExpectDenied(acme_->CreateCollection({.name = "mine", .dimension = 2}).status());
  ExpectDenied(acme_->CreateAlias("d", "docs"));
  ExpectDenied(acme_->BuildIndex("docs", "flat").status());
  ExpectDenied(acme_->Compact("docs").status());
  ExpectDenied(acme_->Snapshot("s").status());
  ExpectDenied(acme_->Restore("s").status());
  // Keys that are not bound: only admin keys may name a tenant.
  std::unique_ptr<Client> writer = Connect(kWriterKey);
  ExpectDenied(writer->Get("docs", Ids({1}), {.tenant = "acme"}).status());
  ExpectDenied(writer->Search("docs", query, {.k = 1, .tenant = "acme"}).status());
  // The collection is still there, and a bound key sees its shape but no collection-wide count.
  absl::StatusOr<CollectionInfo> info = acme_->DescribeCollection("docs");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->spec.dimension, 2u);
  EXPECT_EQ(info->num_vectors, 0u);
  // 17 by the bound key (its admin-only RPCs count as permission_denied), 2 by the writer.
  EXPECT_EQ(
      SampleValue(Scrape(), "shoal_rejections_total", {{"reason", "tenant_denied"}}).value_or(0),
      19);
}

TEST_F(TenantE2eTest, BoundKeyCannotReachAnotherTenantsVectors) {
  REQUIRE_TENANT_ENGINE();
  EXPECT_EQ(Visible(*acme_), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(Visible(*beta_), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(Searched(*acme_), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(Searched(*beta_), (std::vector<uint64_t>{3, 4}));
  // Deleting what it cannot see deletes nothing.
  EXPECT_EQ(acme_->Delete("docs", Ids({3, 4, 5})).value_or(99), 0u);
  EXPECT_EQ(Visible(*beta_), (std::vector<uint64_t>{3, 4}));
  // Listing and counting show its own tenant only.
  absl::StatusOr<TenantPage> page = acme_->ListTenants("docs");
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->tenants.size(), 1u);
  EXPECT_EQ(page->tenants[0].name, "acme");
  EXPECT_EQ(acme_->CountByTenant("docs").value_or(99), 2u);
  EXPECT_EQ(acme_->DescribeTenant("docs").value_or(TenantInfo{}).vectors_owned, 2u);
  // Its upserts are its own, whatever it names (or does not).
  std::vector<Record> records = {{.key = uint64_t{6}, .vector = {6, 0}}};
  ASSERT_TRUE(acme_->Upsert("docs", records).ok());
  EXPECT_EQ(admin_->ListKeyTenants("docs", uint64_t{6}).value_or(std::vector<std::string>{}),
            (std::vector<std::string>{"acme"}));
  EXPECT_EQ(Visible(*beta_), (std::vector<uint64_t>{3, 4}));
  // Delete-by-tenant removes its own records only.
  EXPECT_EQ(acme_->DeleteByTenant("docs").value_or(99), 3u);
  EXPECT_EQ(Visible(*acme_), (std::vector<uint64_t>{}));
  EXPECT_EQ(Visible(*beta_), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(Visible(*admin_), (std::vector<uint64_t>{3, 4, 5}));
}

TEST_F(TenantE2eTest, SearchStreamKeepsABoundKeyInItsTenant) {
  const std::vector<float> query = {0, 0};
  std::unique_ptr<client::SearchSession> acme = acme_->NewSearchSession();
  ExpectDenied(acme->Search("docs", query, {.k = 10, .tenant = "beta"}).status());
  std::unique_ptr<client::SearchSession> writer = Connect(kWriterKey)->NewSearchSession();
  ExpectDenied(writer->Search("docs", query, {.k = 1, .tenant = "acme"}).status());
  REQUIRE_TENANT_ENGINE();
  // The refusal failed that search only: the same stream goes on in the key's tenant.
  auto ids = [&](client::SearchSession& session, const std::string& tenant) {
    absl::StatusOr<std::vector<std::vector<Hit>>> hits =
        session.Search("docs", query, {.k = 10, .tenant = tenant});
    EXPECT_TRUE(hits.ok()) << hits.status();
    std::vector<uint64_t> out;
    if (hits.ok()) {
      for (const Hit& hit : hits->front()) out.push_back(std::get<uint64_t>(hit.key));
    }
    return out;
  };
  EXPECT_EQ(ids(*acme, ""), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(ids(*acme, "acme"), (std::vector<uint64_t>{1, 2}));
  std::unique_ptr<client::SearchSession> beta = beta_->NewSearchSession();
  EXPECT_EQ(ids(*beta, ""), (std::vector<uint64_t>{3, 4}));
  std::unique_ptr<client::SearchSession> admin = admin_->NewSearchSession();
  EXPECT_EQ(ids(*admin, "beta"), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(ids(*admin, ""), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
}

TEST_F(TenantE2eTest, BoundKeyUsesTheSemanticCacheInItsOwnTenantOnly) {
  ASSERT_TRUE(admin_->CreateCache({.name = "answers", .dimension = 2}).ok());
  CacheStoreRequest store;
  store.lookup.embedding = {1, 0};
  store.lookup.prompt = "what is my balance";
  store.response = "acme's answer";
  // A bound key stores in its own tenant's partition whether or not it names it.
  ASSERT_TRUE(acme_->CacheStore("answers", store, /*sync=*/true).ok());
  CacheLookupRequest lookup = store.lookup;
  absl::StatusOr<CacheLookupResult> own = acme_->CacheLookup("answers", lookup);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_TRUE(own->hit);
  lookup.partition.tenant = "acme";
  EXPECT_TRUE(admin_->CacheLookup("answers", lookup).value_or(CacheLookupResult{}).hit);
  // Another tenant never sees it, and a bound key cannot name another tenant's partition.
  lookup.partition.tenant = "";
  EXPECT_FALSE(beta_->CacheLookup("answers", lookup).value_or(CacheLookupResult{.hit = true}).hit);
  lookup.partition.tenant = "acme";
  absl::StatusOr<CacheLookupResult> foreign = beta_->CacheLookup("answers", lookup);
  EXPECT_TRUE(absl::IsPermissionDenied(foreign.status())) << foreign.status();
  EXPECT_THAT(foreign.status().message(), testing::HasSubstr("partition.tenant"));
  store.lookup.partition.tenant = "acme";
  EXPECT_TRUE(absl::IsPermissionDenied(beta_->CacheStore("answers", store).status()));
  // Calls on whole caches or on entries by id stay refused to bound keys.
  EXPECT_TRUE(absl::IsPermissionDenied(acme_->GetCacheStats("answers").status()));
  EXPECT_TRUE(absl::IsPermissionDenied(acme_->CacheFeedback(
      "answers", {.entry_id = own->entry_id, .verdict = CacheVerdict::kCorrect})));
}

TEST_F(TenantE2eTest, ReadOnlyBoundKeyReadsItsTenantOnly) {
  REQUIRE_TENANT_ENGINE();
  std::unique_ptr<Client> reader = Connect(kAcmeReaderKey);
  EXPECT_EQ(Visible(*reader), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(Searched(*reader), (std::vector<uint64_t>{1, 2}));
  std::vector<Record> records = {{.key = uint64_t{7}, .vector = {7, 0}}};
  ExpectDenied(reader->Upsert("docs", records).status());
  ExpectDenied(reader->Delete("docs", Ids({1})).status());
  EXPECT_EQ(Visible(*acme_), (std::vector<uint64_t>{1, 2}));
}

TEST_F(TenantE2eTest, AdminNamesAnyTenantAndGrantsShareWithoutCopying) {
  REQUIRE_TENANT_ENGINE();
  EXPECT_EQ(Visible(*admin_), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(Visible(*admin_, {.tenant = "beta"}), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(Searched(*admin_, "beta"), (std::vector<uint64_t>{3, 4}));
  ASSERT_TRUE(admin_->Grant("docs", "acme", Ids({3})).ok());
  EXPECT_EQ(Visible(*acme_), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(Searched(*acme_), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(admin_->ListKeyTenants("docs", uint64_t{3}).value_or(std::vector<std::string>{}),
            (std::vector<std::string>{"beta", "acme"}));
  // Seen, not owned: acme may not delete it.
  ExpectDenied(acme_->Delete("docs", Ids({3})).status());
  ASSERT_TRUE(admin_->Revoke("docs", "acme", Ids({3})).ok());
  EXPECT_EQ(Visible(*acme_), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(Searched(*acme_), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(Visible(*beta_), (std::vector<uint64_t>{3, 4}));
}

TEST_F(TenantE2eTest, PerTenantSeriesCountSearchesVectorsAndQuotaRejections) {
  REQUIRE_TENANT_ENGINE();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Searched(*acme_), (std::vector<uint64_t>{1, 2}));
  ASSERT_TRUE(admin_->SetTenantQuotas("docs", "acme", {.max_vectors = 2}).ok());
  std::vector<Record> records = {{.key = uint64_t{8}, .vector = {8, 0}}};
  absl::Status over = acme_->Upsert("docs", records).status();
  EXPECT_TRUE(absl::IsResourceExhausted(over)) << over;
  EXPECT_NE(over.message().find("max_vectors"), std::string::npos) << over;
  std::vector<Sample> samples = Scrape();
  const std::map<std::string, std::string> acme = {{"collection", "docs"}, {"tenant", "acme"}};
  EXPECT_EQ(SampleValue(samples, "shoal_tenant_searches_total", acme), 3.0);
  EXPECT_EQ(SampleValue(samples, "shoal_tenant_search_duration_seconds_count", acme), 3.0);
  EXPECT_EQ(SampleValue(samples, "shoal_tenant_vectors", acme), 2.0);
  // The tenants' share of the collection's index RAM (access table, sub-trees, entries).
  EXPECT_GT(SampleValue(samples, "shoal_collection_tenant_ram_bytes", {{"collection", "docs"}})
                .value_or(0),
            0.0);
  EXPECT_EQ(SampleValue(samples, "shoal_tenant_quota_rejections_total",
                        {{"collection", "docs"}, {"tenant", "acme"}, {"op", "write"}}),
            1.0);
}

}  // namespace
}  // namespace shoal::e2e

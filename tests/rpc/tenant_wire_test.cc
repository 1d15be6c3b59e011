// Tenants on the wire, in-process: a Server with API keys (some bound to tenants) over a real
// DB whose tenancy is answered by TenantModelDB (tests/support), driven through the C++ SDK.
// Checks what rpc/ owns: which tenant reaches the DB, what a tenant-bound key may call and
// name, the error codes and the fields they name. The engine's own isolation is tested in
// tests/e2e/tenant_e2e_test.cc against a real shoald.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "rpc/client/shoal_client.h"
#include "rpc/server.h"
#include "shoal/db.h"
#include "tests/support/tenant_model_db.h"

namespace shoal {
namespace {

using client::Client;

constexpr char kAdminKey[] = "admin-key-0123456789abcdef";
constexpr char kWriterKey[] = "writer-key-0123456789abcdef";
constexpr char kAcmeKey[] = "acme-key-0123456789abcdef";
constexpr char kAcmeReaderKey[] = "acme-ro-key-0123456789abcdef";
constexpr char kBetaKey[] = "beta-key-0123456789abcdef";

Record MakeRecord(uint64_t id, float x) { return Record{.key = id, .vector = {x, 0}}; }

class TenantWireTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "tenant_wire_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/keys") << "admin " << kAdminKey << " ops\n"
                                  << "read-write " << kWriterKey << " loader\n"
                                  << "read-write " << kAcmeKey << " acme-app tenant=acme\n"
                                  << "read-only " << kAcmeReaderKey << " acme-ro tenant=acme\n"
                                  << "read-write " << kBetaKey << " beta-app tenant=beta\n";
    absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(dir_ + "/data", Options{});
    ASSERT_TRUE(db.ok()) << db.status();
    real_ = *std::move(db);
    model_ = std::make_unique<testing::TenantModelDB>(real_.get());
    rpc::ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.key_file = dir_ + "/keys";
    absl::StatusOr<std::unique_ptr<rpc::Server>> server = rpc::Server::Start(model_.get(), options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    admin_ = Connect(kAdminKey);
    acme_ = Connect(kAcmeKey);
    beta_ = Connect(kBetaKey);

    // docs: acme owns 1 and 2, beta owns 3 and 4, 5 has no owner.
    ASSERT_TRUE(admin_->CreateCollection({.name = "docs", .dimension = 2}).ok());
    ASSERT_TRUE(admin_->CreateTenant("docs", {.name = "acme"}).ok());
    ASSERT_TRUE(admin_->CreateTenant("docs", {.name = "beta"}).ok());
    std::vector<Record> acme = {MakeRecord(1, 1), MakeRecord(2, 2)};
    std::vector<Record> beta = {MakeRecord(3, 3), MakeRecord(4, 4)};
    std::vector<Record> none = {MakeRecord(5, 5)};
    ASSERT_TRUE(admin_->Upsert("docs", acme, WriteOptions{.tenant = "acme"}).ok());
    ASSERT_TRUE(admin_->Upsert("docs", beta, WriteOptions{.tenant = "beta"}).ok());
    ASSERT_TRUE(admin_->Upsert("docs", none).ok());
  }
  void TearDown() override {
    admin_.reset();
    acme_.reset();
    beta_.reset();
    if (server_ != nullptr) server_->Shutdown(absl::ZeroDuration());
    server_.reset();
    model_.reset();
    real_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::unique_ptr<Client> Connect(const std::string& key) {
    absl::StatusOr<std::unique_ptr<Client>> c =
        Client::Connect(server_->address(), {.api_key = key});
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  // The keys `client` sees among 1..12 through Get.
  std::vector<uint64_t> Visible(Client& client, const ReadOptions& options = {}) {
    std::vector<Key> keys;
    for (uint64_t id = 1; id <= 12; ++id) keys.push_back(id);
    absl::StatusOr<std::vector<std::optional<Record>>> got = client.Get("docs", keys, options);
    EXPECT_TRUE(got.ok()) << got.status();
    std::vector<uint64_t> out;
    if (!got.ok()) return out;
    for (const std::optional<Record>& r : *got) {
      if (r.has_value()) out.push_back(std::get<uint64_t>(r->key));
    }
    return out;
  }
  // The keys of the hits of one search for (0, 0), k = 10.
  absl::StatusOr<std::vector<uint64_t>> SearchKeys(Client& client, const std::string& tenant) {
    std::vector<float> query = {0, 0};
    absl::StatusOr<std::vector<std::vector<Hit>>> hits =
        client.Search("docs", query, {.k = 10, .tenant = tenant});
    if (!hits.ok()) return hits.status();
    std::vector<uint64_t> out;
    for (const Hit& hit : hits->front()) out.push_back(std::get<uint64_t>(hit.key));
    return out;
  }

  std::string dir_;
  std::unique_ptr<DB> real_;
  std::unique_ptr<testing::TenantModelDB> model_;
  std::unique_ptr<rpc::Server> server_;
  std::unique_ptr<Client> admin_, acme_, beta_;
};

void ExpectDenied(const absl::Status& status, const std::string& field) {
  EXPECT_TRUE(absl::IsPermissionDenied(status)) << status;
  EXPECT_NE(status.message().find(field), std::string::npos) << status;
  // The message names keys by NAME, never by the secret.
  EXPECT_EQ(status.message().find("-key-0123456789"), std::string::npos) << status;
}

TEST_F(TenantWireTest, BoundKeyReadsAndSearchesItsOwnTenantOnly) {
  EXPECT_EQ(Visible(*beta_), (std::vector<uint64_t>{3, 4}));
  const size_t before = model_->tenants_seen().size();
  EXPECT_EQ(Visible(*acme_), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(SearchKeys(*acme_, "").value_or(std::vector<uint64_t>{}),
            (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(SearchKeys(*acme_, "acme").value_or(std::vector<uint64_t>{}),
            (std::vector<uint64_t>{1, 2}));
  // The request body cannot widen it: another tenant is refused, naming the field.
  ExpectDenied(acme_->Get("docs", std::vector<Key>{uint64_t{3}}, {.tenant = "beta"}).status(),
               "tenant: key \"acme-app\" is bound to tenant \"acme\"");
  ExpectDenied(SearchKeys(*acme_, "beta").status(), "tenant:");
  // The DB saw acme on every call of acme's key, and the refused ones never reached it.
  const std::vector<std::string> seen = model_->tenants_seen();
  EXPECT_EQ(std::vector<std::string>(seen.begin() + before, seen.end()),
            std::vector<std::string>(3, "acme"));
}

TEST_F(TenantWireTest, BoundKeyWritesOwnedRecordsAndCannotDeleteOthers) {
  std::vector<Record> records = {MakeRecord(10, 10)};
  ASSERT_TRUE(acme_->Upsert("docs", records).ok());
  EXPECT_EQ(admin_->ListKeyTenants("docs", uint64_t{10}).value_or(std::vector<std::string>{}),
            (std::vector<std::string>{"acme"}));
  ExpectDenied(acme_->Upsert("docs", records, WriteOptions{.tenant = "beta"}).status(), "tenant:");
  // beta's records are invisible to acme: deleting them deletes nothing.
  EXPECT_EQ(acme_->Delete("docs", std::vector<Key>{uint64_t{3}, uint64_t{4}}).value_or(99), 0u);
  EXPECT_EQ(Visible(*beta_), (std::vector<uint64_t>{3, 4}));
  ExpectDenied(
      acme_->Delete("docs", std::vector<Key>{uint64_t{3}}, WriteOptions{.tenant = "beta"}).status(),
      "tenant:");
  EXPECT_EQ(acme_->Delete("docs", std::vector<Key>{uint64_t{1}}).value_or(99), 1u);
  EXPECT_EQ(Visible(*acme_), (std::vector<uint64_t>{2, 10}));
}

TEST_F(TenantWireTest, BatchBatchSearchAndIngestNameTheOffendingTenantField) {
  client::WriteOp op{.collection = "docs", .records = {MakeRecord(11, 1)}, .tenant = "beta"};
  ExpectDenied(acme_->Batch(std::vector<client::WriteOp>{op}).status(),
               "operations[0].upsert.tenant:");
  std::vector<client::SearchCall> calls = {
      {.collection = "docs", .queries = {0, 0}, .params = {.k = 3}},
      {.collection = "docs", .queries = {0, 0}, .params = {.k = 3, .tenant = "beta"}}};
  ExpectDenied(acme_->BatchSearch(calls).status(), "searches[1].tenant:");
  std::vector<Record> records = {MakeRecord(12, 1)};
  ExpectDenied(acme_->Ingest("docs", records, {.tenant = "beta"}).status(), "batch 0: tenant:");
  ASSERT_TRUE(acme_->Ingest("docs", records).ok());
  EXPECT_EQ(admin_->ListKeyTenants("docs", uint64_t{12}).value_or(std::vector<std::string>{}),
            (std::vector<std::string>{"acme"}));
}

TEST_F(TenantWireTest, BoundKeyCannotAdministerTenantsOrGrant) {
  ExpectDenied(acme_->CreateTenant("docs", {.name = "gamma"}).status(), "");
  ExpectDenied(acme_->DropTenant("docs", "beta").status(), "");
  ExpectDenied(acme_->DropTenant("docs", "acme").status(), "");
  ExpectDenied(acme_->SetTenantQuotas("docs", "acme", {.max_vectors = 1}), "");
  ExpectDenied(acme_->SetTenantState("docs", "acme", TenantState::kInactive), "");
  // Granting itself another tenant's record would be an escalation; granting its own to
  // another tenant acts beyond it. Both are refused, as is looking at a record's tenants.
  ExpectDenied(acme_->Grant("docs", "acme", std::vector<Key>{uint64_t{3}}),
               "is bound to tenant \"acme\"; TenantService/Grant");
  ExpectDenied(acme_->Grant("docs", "beta", std::vector<Key>{uint64_t{1}}), "TenantService/Grant");
  ExpectDenied(acme_->Revoke("docs", "beta", std::vector<Key>{uint64_t{1}}), "Revoke");
  ExpectDenied(acme_->ListKeyTenants("docs", uint64_t{3}).status(), "ListKeyTenants");
  EXPECT_EQ(Visible(*acme_), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(Visible(*beta_), (std::vector<uint64_t>{3, 4}));
}

TEST_F(TenantWireTest, BoundKeyListsDescribesCountsAndDeletesItsOwnTenantOnly) {
  absl::StatusOr<TenantPage> page = acme_->ListTenants("docs");
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->tenants.size(), 1u);
  EXPECT_EQ(page->tenants[0].name, "acme");
  EXPECT_EQ(page->next_page_token, "");
  EXPECT_EQ(acme_->DescribeTenant("docs").value_or(TenantInfo{}).name, "acme");
  ExpectDenied(acme_->DescribeTenant("docs", "beta").status(), "tenant:");
  EXPECT_EQ(acme_->CountByTenant("docs").value_or(99), 2u);
  ExpectDenied(acme_->CountByTenant("docs", "beta").status(), "tenant:");
  ExpectDenied(acme_->DeleteByTenant("docs", "beta").status(), "tenant:");
  EXPECT_EQ(Visible(*beta_), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(acme_->DeleteByTenant("docs").value_or(99), 2u);
  EXPECT_EQ(Visible(*acme_), (std::vector<uint64_t>{}));
  EXPECT_EQ(Visible(*beta_), (std::vector<uint64_t>{3, 4}));
}

TEST_F(TenantWireTest, BoundKeyCannotActOnWholeCollections) {
  ExpectDenied(acme_->DropCollection("docs"), "CollectionService/DropCollection");
  ExpectDenied(acme_->CreateCollection({.name = "mine", .dimension = 2}).status(),
               "CreateCollection");
  ExpectDenied(acme_->CreateAlias("d", "docs"), "CreateAlias");
  // Admin RPCs need an admin key, which is never bound.
  EXPECT_TRUE(absl::IsPermissionDenied(acme_->BuildIndex("docs", "flat").status()));
  EXPECT_TRUE(absl::IsPermissionDenied(acme_->Compact("docs").status()));
  EXPECT_TRUE(absl::IsPermissionDenied(acme_->Snapshot("s").status()));
  EXPECT_TRUE(absl::IsPermissionDenied(acme_->Restore("s").status()));
  // It sees a collection's shape, not the collection-wide counts.
  absl::StatusOr<CollectionInfo> info = acme_->DescribeCollection("docs");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->spec.dimension, 2u);
  EXPECT_EQ(info->num_vectors, 0u);
  EXPECT_EQ(admin_->DescribeCollection("docs").value_or(CollectionInfo{}).num_vectors, 5u);
  EXPECT_TRUE(admin_->ListCollections().ok());
  EXPECT_EQ(acme_->ListCollections().value_or(std::vector<CollectionInfo>{}).at(0).num_vectors, 0u);
}

TEST_F(TenantWireTest, ReadOnlyBoundKeyReadsItsTenantAndWritesNothing) {
  std::unique_ptr<Client> reader = Connect(kAcmeReaderKey);
  EXPECT_EQ(Visible(*reader), (std::vector<uint64_t>{1, 2}));
  std::vector<Record> records = {MakeRecord(20, 1)};
  EXPECT_TRUE(absl::IsPermissionDenied(reader->Upsert("docs", records).status()));
  EXPECT_TRUE(
      absl::IsPermissionDenied(reader->Delete("docs", std::vector<Key>{uint64_t{1}}).status()));
  EXPECT_TRUE(absl::IsPermissionDenied(reader->DeleteByTenant("docs").status()));
  ExpectDenied(reader->Get("docs", std::vector<Key>{uint64_t{3}}, {.tenant = "beta"}).status(),
               "tenant:");
}

TEST_F(TenantWireTest, AdminNamesAnyTenantAndGrantsShareWithoutCopying) {
  EXPECT_EQ(Visible(*admin_), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(Visible(*admin_, {.tenant = "beta"}), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(SearchKeys(*admin_, "beta").value_or(std::vector<uint64_t>{}),
            (std::vector<uint64_t>{3, 4}));
  ASSERT_TRUE(admin_->Grant("docs", "acme", std::vector<Key>{uint64_t{3}}).ok());
  EXPECT_EQ(Visible(*acme_), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(admin_->ListKeyTenants("docs", uint64_t{3}).value_or(std::vector<std::string>{}),
            (std::vector<std::string>{"beta", "acme"}));
  EXPECT_EQ(admin_->CountByTenant("docs", "acme").value_or(0), 3u);
  EXPECT_EQ(admin_->CountByTenant("docs", "acme", /*owned_only=*/true).value_or(0), 2u);
  // Seen but not owned: acme may not delete it.
  EXPECT_TRUE(
      absl::IsPermissionDenied(acme_->Delete("docs", std::vector<Key>{uint64_t{3}}).status()));
  ASSERT_TRUE(admin_->Revoke("docs", "acme", std::vector<Key>{uint64_t{3}}).ok());
  EXPECT_EQ(Visible(*acme_), (std::vector<uint64_t>{1, 2}));
  EXPECT_TRUE(absl::IsInvalidArgument(admin_->DescribeTenant("docs").status()));
  EXPECT_TRUE(absl::IsNotFound(admin_->DescribeTenant("docs", "nobody").status()));
}

TEST_F(TenantWireTest, OnlyAdminKeysNameATenantWhenNotBound) {
  std::unique_ptr<Client> writer = Connect(kWriterKey);
  EXPECT_EQ(Visible(*writer), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  ExpectDenied(writer->Get("docs", std::vector<Key>{uint64_t{1}}, {.tenant = "acme"}).status(),
               "tenant: key \"loader\" is read-write and not bound to a tenant");
  std::vector<Record> records = {MakeRecord(30, 1)};
  ExpectDenied(writer->Upsert("docs", records, WriteOptions{.tenant = "acme"}).status(), "tenant:");
}

TEST_F(TenantWireTest, ListTenantsPagesAndChecksThePageSize) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(admin_->CreateTenant("docs", {.name = "t" + std::to_string(i)}).ok());
  }
  std::vector<std::string> names;
  std::string token;
  int pages = 0;
  do {
    absl::StatusOr<TenantPage> page = admin_->ListTenants("docs", 3, token);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const TenantInfo& info : page->tenants) names.push_back(info.name);
    token = page->next_page_token;
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(names, (std::vector<std::string>{"acme", "beta", "t0", "t1", "t2", "t3", "t4"}));
  EXPECT_EQ(pages, 3);
  absl::Status big = admin_->ListTenants("docs", 10001).status();
  EXPECT_TRUE(absl::IsInvalidArgument(big)) << big;
  EXPECT_NE(big.message().find("page_size"), std::string::npos);
  absl::Status state = admin_->SetTenantState("docs", "acme", static_cast<TenantState>(7));
  EXPECT_TRUE(absl::IsInvalidArgument(state)) << state;
}

}  // namespace
}  // namespace shoal

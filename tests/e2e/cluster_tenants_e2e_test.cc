// Cluster mode end to end: tenants and aliases of a sharded collection, with real etcd, NATS
// and three shoald nodes serving API keys (nodes call each other with an admin key,
// SHOAL_CLUSTER_API_KEY). A tenant-bound key on any node sees only its tenant's vectors of
// every shard; tenant metadata is summed over the shards; aliases resolve on every node.
#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cluster/shard_map.h"
#include "gtest/gtest.h"
#include "tests/e2e/cluster_fixture.h"

namespace shoal::e2e {
namespace {

constexpr char kAdminKey[] = "cluster-admin-key-0123456789";
constexpr char kAcmeKey[] = "cluster-acme-key-0123456789";
constexpr char kBetaKey[] = "cluster-beta-key-0123456789";

class ClusterTenantsE2ETest : public ClusterE2ETest {
 protected:
  void SetUp() override {
    keys_dir_ = MakeTempDir();
    std::ofstream(keys_dir_ + "/keys") << "admin " << kAdminKey << " ops\n"
                                       << "read-write " << kAcmeKey << " acme-app tenant=acme\n"
                                       << "read-write " << kBetaKey << " beta-app tenant=beta\n";
    setenv("SHOAL_CLUSTER_API_KEY", kAdminKey, 1);  // the nodes' calls to each other
    ClusterE2ETest::SetUp();
  }
  void TearDown() override {
    ClusterE2ETest::TearDown();
    unsetenv("SHOAL_CLUSTER_API_KEY");
    if (!keys_dir_.empty()) std::filesystem::remove_all(keys_dir_);
  }
  std::vector<std::string> ExtraArgs() const override {
    return {"--key-file", keys_dir_ + "/keys"};
  }
  std::string ClientKey() const override { return kAdminKey; }

  std::unique_ptr<client::Client> Connect(uint32_t node, const char* key) {
    auto c = client::Client::Connect(nodes_[node]->address(),
                                     {.api_key = key, .timeout = absl::Seconds(20)});
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }

  static std::vector<Record> Records(uint64_t from, uint64_t to) {
    std::vector<Record> records;
    for (uint64_t k = from; k < to; ++k) records.push_back(RecordOf(k));
    return records;
  }

  // The keys a search through `c` finds near key `near` (k = 200, read-your-writes).
  static std::set<uint64_t> Seen(client::Client& c, const std::string& collection, uint64_t near) {
    SearchParams params{.k = 200};
    params.consistency.read_your_writes = true;
    auto hits = c.Search(collection, VectorOf(near), params);
    EXPECT_TRUE(hits.ok()) << hits.status();
    std::set<uint64_t> keys;
    if (hits.ok()) {
      for (const Hit& hit : (*hits)[0]) keys.insert(std::get<uint64_t>(hit.key));
    }
    return keys;
  }

  std::string keys_dir_;
};

std::set<uint64_t> Range(uint64_t from, uint64_t to) {
  std::set<uint64_t> keys;
  for (uint64_t k = from; k < to; ++k) keys.insert(k);
  return keys;
}

TEST_F(ClusterTenantsE2ETest, ATenantBoundKeySeesOnlyItsTenantsVectorsOnEveryShard) {
  CreateSharded("docs", 3, 2);
  client::Client& admin = *clients_[0];
  ASSERT_TRUE(admin.CreateTenant("docs", {.name = "acme"}).ok());
  ASSERT_TRUE(clients_[1]->CreateTenant("docs", {.name = "beta"}).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(clients_[2]->CreateTenant("docs", {.name = "acme"}).status()));
  auto acme = Connect(0, kAcmeKey);
  auto beta = Connect(1, kBetaKey);
  ASSERT_TRUE(acme != nullptr && beta != nullptr);
  ASSERT_TRUE(acme->Upsert("docs", Records(0, 60)).ok());
  ASSERT_TRUE(beta->Upsert("docs", Records(100, 160)).ok());
  ASSERT_TRUE(admin.Upsert("docs", Records(200, 210)).ok());  // no owner
  // Through every node, acme's key finds acme's 60 vectors and nothing else, even near beta's.
  for (uint32_t node = 0; node < kNodes; ++node) {
    auto scoped = Connect(node, kAcmeKey);
    EXPECT_EQ(Seen(*scoped, "docs", 105), Range(0, 60)) << "node " << node;
    ReadOptions fresh;
    fresh.consistency.read_your_writes = true;
    std::vector<Key> theirs = {uint64_t{105}, uint64_t{205}, uint64_t{7}};
    auto got = scoped->Get("docs", theirs, fresh);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_FALSE((*got)[0].has_value());
    EXPECT_FALSE((*got)[1].has_value());
    EXPECT_TRUE((*got)[2].has_value());
  }
  EXPECT_EQ(Seen(*beta, "docs", 5), Range(100, 160));
  // Tenant metadata is summed over the shards.
  auto info = clients_[2]->DescribeTenant("docs", "acme");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->vectors_owned, 60u);
  auto page = admin.ListTenants("docs");
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->tenants.size(), 2u);
  EXPECT_EQ(page->tenants[1].name, "beta");
  EXPECT_EQ(page->tenants[1].vectors_owned, 60u);
  auto counted = clients_[1]->CountByTenant("docs", "acme", /*owned_only=*/true);
  ASSERT_TRUE(counted.ok()) << counted.status();
  EXPECT_EQ(*counted, 60u);
  // A grant (routed to its key's shard) shows beta's vector to acme; a revoke hides it again.
  std::vector<Key> one = {uint64_t{105}};
  ASSERT_TRUE(clients_[1]->Grant("docs", "acme", one).ok());
  std::set<uint64_t> with = Range(0, 60);
  with.insert(105);
  EXPECT_EQ(Seen(*acme, "docs", 105), with);
  auto tenants = clients_[2]->ListKeyTenants("docs", Key{uint64_t{105}});
  ASSERT_TRUE(tenants.ok()) << tenants.status();
  EXPECT_EQ(*tenants, (std::vector<std::string>{"beta", "acme"}));
  ASSERT_TRUE(admin.Revoke("docs", "acme", one).ok());
  EXPECT_EQ(Seen(*acme, "docs", 105), Range(0, 60));
  std::vector<Key> missing = {uint64_t{999}};
  EXPECT_TRUE(absl::IsNotFound(admin.Grant("docs", "acme", missing)));
  // Writes for a tenant are checked before the log: not another tenant's key, not an unknown
  // tenant.
  std::vector<Record> steal = {RecordOf(105)};
  EXPECT_TRUE(absl::IsPermissionDenied(acme->Upsert("docs", steal).status()));
  EXPECT_TRUE(absl::IsNotFound(
      admin.Upsert("docs", Records(300, 301), WriteOptions{.tenant = "ghost"}).status()));
  // Dropping beta deletes its records on every shard.
  auto dropped = clients_[2]->DropTenant("docs", "beta");
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ(*dropped, 60u);
  EXPECT_TRUE(absl::IsNotFound(admin.DescribeTenant("docs", "beta").status()));
  ReadOptions fresh;
  fresh.consistency.read_your_writes = true;
  std::vector<Key> gone = {uint64_t{100}, uint64_t{159}};
  auto after = admin.Get("docs", gone, fresh);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_FALSE((*after)[0].has_value());
  EXPECT_FALSE((*after)[1].has_value());
}

// Vector and byte quotas count a tenant's records over every shard, through whichever node
// takes the write; no replica refuses an acknowledged write (every copy applies them all).
TEST_F(ClusterTenantsE2ETest, ATenantsQuotasHoldOverEveryShard) {
  CreateSharded("docs", 3, 2);
  client::Client& admin = *clients_[0];
  ASSERT_TRUE(admin.CreateTenant("docs", {.name = "acme", .quotas = {.max_vectors = 50}}).ok());
  auto info = clients_[2]->DescribeTenant("docs", "acme");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->quotas.max_vectors, 50u);
  std::vector<std::unique_ptr<client::Client>> acme;
  for (uint32_t node = 0; node < kNodes; ++node) acme.push_back(Connect(node, kAcmeKey));
  ASSERT_TRUE(acme[0]->Upsert("docs", Records(0, 40)).ok());
  // 40 + 20 > 50, through another node: refused, and nothing of it is written.
  absl::Status over = acme[1]->Upsert("docs", Records(40, 60)).status();
  EXPECT_TRUE(absl::IsResourceExhausted(over)) << over;
  EXPECT_NE(over.message().find("quota max_vectors of tenant 'acme' (50)"), std::string::npos)
      << over;
  ASSERT_TRUE(acme[2]->Upsert("docs", Records(40, 50)).ok());  // exactly 50
  ASSERT_TRUE(acme[1]->Upsert("docs", Records(0, 10)).ok());   // rewrites add nothing
  EXPECT_TRUE(absl::IsResourceExhausted(acme[0]->Upsert("docs", Records(50, 51)).status()));
  std::vector<Key> freed = {uint64_t{0}, uint64_t{1}};
  ASSERT_TRUE(acme[2]->Delete("docs", freed).ok());
  ASSERT_TRUE(acme[0]->Upsert("docs", Records(50, 52)).ok());  // 48 + 2
  // A byte quota: each record here is 8 floats and an id, 40 bytes; acme owns 50 (2000 bytes).
  ASSERT_TRUE(clients_[1]->SetTenantQuotas("docs", "acme", {.max_bytes = 2100}).ok());
  absl::Status bytes = acme[2]->Upsert("docs", Records(60, 63)).status();
  EXPECT_TRUE(absl::IsResourceExhausted(bytes)) << bytes;
  EXPECT_NE(bytes.message().find("quota max_bytes"), std::string::npos) << bytes;
  ASSERT_TRUE(acme[2]->Upsert("docs", Records(60, 62)).ok());  // 2080
  // Read at once: a tenant read waits until its replicas have applied every acknowledged write.
  auto page = clients_[2]->ListTenants("docs");
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->tenants.size(), 1u);
  EXPECT_EQ(page->tenants[0].quotas.max_vectors, 0u);
  EXPECT_EQ(page->tenants[0].quotas.max_bytes, 2100u);
  EXPECT_EQ(page->tenants[0].vectors_owned, 52u);
  EXPECT_EQ(page->tenants[0].bytes_owned, 2080u);
  // Every copy of every shard applied every acknowledged write (none refused at apply): each
  // node's own copies ("docs@<shard>") hold their shard's keys.
  std::vector<uint64_t> owned = {60, 61};
  for (uint64_t k = 2; k < 52; ++k) owned.push_back(k);
  ReadOptions fresh;
  fresh.consistency.read_your_writes = true;
  auto map = StoredMap(services_.etcd_url());
  ASSERT_TRUE(map.ok()) << map.status();
  int copies = 0;
  for (uint32_t shard = 0; shard < 3; ++shard) {
    std::vector<Key> keys;
    for (uint64_t k : owned) {
      if (cluster::ShardOfKey(Key{k}, 3) == shard) keys.push_back(k);
    }
    for (const std::string& node_id : map->replicas[shard]) {
      const uint32_t node = node_id.back() - '1';  // "n1".."n3"
      auto got = clients_[node]->Get(absl::StrCat("docs@", shard), keys, fresh);
      ASSERT_TRUE(got.ok()) << got.status();
      ++copies;
      for (size_t i = 0; i < keys.size(); ++i) {
        EXPECT_TRUE((*got)[i].has_value())
            << node_id << " shard " << shard << " key " << std::get<uint64_t>(keys[i]);
      }
    }
  }
  EXPECT_EQ(copies, 6);  // 3 shards x 2 replicas
  // Dropped and created again without quotas: none are left over.
  ASSERT_TRUE(admin.DropTenant("docs", "acme").ok());
  ASSERT_TRUE(admin.CreateTenant("docs", {.name = "acme"}).ok());
  // Node 1 sees the create node 0 acknowledged (its replica applies it before answering).
  auto again = clients_[1]->DescribeTenant("docs", "acme");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->quotas.max_bytes, 0u);
  EXPECT_TRUE(acme[1]->Upsert("docs", Records(100, 200)).ok());
}

// Read your writes for tenant metadata: a change acknowledged by one node is seen at once
// through every other, by reads and by the checks of the next change (no retry, no sleep).
TEST_F(ClusterTenantsE2ETest, TenantChangesAreSeenAtOnceThroughEveryNode) {
  CreateSharded("docs", 3, 2);
  ASSERT_TRUE(clients_[0]->Upsert("docs", Records(0, 30)).ok());
  for (uint32_t round = 0; round < 12; ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round);
    const std::string name = absl::StrCat("t", round);
    client::Client& first = *clients_[round % kNodes];
    client::Client& second = *clients_[(round + 1) % kNodes];
    client::Client& third = *clients_[(round + 2) % kNodes];
    ASSERT_TRUE(first.CreateTenant("docs", {.name = name}).ok());
    auto created = second.DescribeTenant("docs", name);
    ASSERT_TRUE(created.ok()) << created.status();
    const std::vector<Key> keys = {uint64_t{round}, uint64_t{round + 10}};
    ASSERT_TRUE(third.Grant("docs", name, keys).ok());
    auto granted = first.DescribeTenant("docs", name);
    ASSERT_TRUE(granted.ok()) << granted.status();
    EXPECT_EQ(granted->vectors_visible, 2u);
    auto page = second.ListTenants("docs");
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_EQ(page->tenants.size(), round + 1);
    ASSERT_TRUE(third.DropTenant("docs", name).ok());
    EXPECT_TRUE(absl::IsNotFound(first.DescribeTenant("docs", name).status()));
    ASSERT_TRUE(second.CreateTenant("docs", {.name = name}).ok());
  }
}

TEST_F(ClusterTenantsE2ETest, AliasesOfAShardedCollectionResolveOnEveryNode) {
  CreateSharded("docs", 3, 1);
  ASSERT_TRUE(clients_[0]->Upsert("docs", Records(0, 30)).ok());
  ASSERT_TRUE(clients_[1]->CreateAlias("latest", "docs").ok());
  EXPECT_TRUE(absl::IsAlreadyExists(clients_[2]->CreateAlias("latest", "docs")));
  for (uint32_t node = 0; node < kNodes; ++node) {
    // Another node's view follows through etcd's watch.
    absl::StatusOr<std::vector<std::vector<Hit>>> hits = absl::UnavailableError("");
    for (int i = 0; i < 100 && !hits.ok(); ++i) {
      SearchParams params{.k = 3};
      params.consistency.read_your_writes = true;
      hits = clients_[node]->Search("latest", VectorOf(7), params);
      if (!hits.ok()) absl::SleepFor(absl::Milliseconds(50));
    }
    ASSERT_TRUE(hits.ok()) << "node " << node << ": " << hits.status();
    EXPECT_EQ(std::get<uint64_t>((*hits)[0][0].key), 7u);
  }
  auto info = clients_[2]->DescribeCollection("docs");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->aliases, std::vector<std::string>{"latest"});
  auto aliases = clients_[0]->ListAliases();
  ASSERT_TRUE(aliases.ok()) << aliases.status();
  ASSERT_EQ(aliases->size(), 1u);
  EXPECT_EQ((*aliases)[0].collection, "docs");
  // Writes through the alias land in the collection.
  ASSERT_TRUE(clients_[2]->Upsert("latest", Records(30, 40)).ok());
  auto described = clients_[0]->DescribeCollection("latest");
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ(described->spec.name, "docs");
  EXPECT_TRUE(absl::IsFailedPrecondition(clients_[0]->DropCollection("docs")));
  ASSERT_TRUE(clients_[0]->DropAlias("latest").ok());
  ASSERT_TRUE(clients_[0]->DropCollection("docs").ok());
}

}  // namespace
}  // namespace shoal::e2e

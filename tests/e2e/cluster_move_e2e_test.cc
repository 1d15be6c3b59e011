// Cluster mode end to end, shard moves (ctest label `cluster`): a node that joins a running
// cluster gets its share of the shards, moved one replica at a time while a client keeps
// writing and searching; the client sees no error it cannot retry, and nothing acknowledged
// is lost. An operator's move (shoal cluster move: AdminService.MoveShard through the SDK)
// completes the same way.
#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cluster/etcd_client.h"
#include "cluster/membership.h"
#include "cluster/shard_log.h"
#include "cluster/shard_map.h"
#include "gtest/gtest.h"
#include "tests/e2e/cluster_fixture.h"

namespace shoal::e2e {
namespace {

// Starts with n1 and n2 only; n3 joins in the test.
class ClusterMoveE2ETest : public ClusterE2ETest {
 protected:
  uint32_t InitialNodes() const override { return 2; }
};

// Waits until the moves that give n3 its share are done; the final map.
cluster::ShardMap WaitForBalance(const std::string& etcd_url) {
  absl::StatusOr<cluster::ShardMap> map;
  std::map<std::string, int> load;
  for (int attempt = 0; attempt < 300; ++attempt) {
    absl::SleepFor(absl::Milliseconds(200));
    map = StoredMap(etcd_url);
    if (!map.ok()) continue;
    load.clear();
    for (const auto& owners : map->replicas) {
      for (const std::string& node : owners) ++load[node];
    }
    if (map.ok() && !map->move && load["n3"] == 2) break;
  }
  if (!map.ok()) {
    ADD_FAILURE() << map.status();
    return {};
  }
  EXPECT_FALSE(map->move.has_value()) << "a move never completed, map version " << map->version;
  EXPECT_EQ(load, (std::map<std::string, int>{{"n1", 2}, {"n2", 2}, {"n3", 2}}));
  return *map;
}

// n3's own copies hold every key of its shards in `present` and none in `absent`.
void ExpectN3Copies(client::Client& n3, const cluster::ShardMap& map,
                    const std::vector<uint64_t>& present, const std::vector<uint64_t>& absent) {
  for (uint32_t shard = 0; shard < map.spec.shards; ++shard) {
    const auto& owners = map.replicas[shard];
    if (std::find(owners.begin(), owners.end(), "n3") == owners.end()) continue;
    for (bool want : {true, false}) {
      std::vector<Key> keys;
      for (uint64_t key : want ? present : absent) {
        if (cluster::ShardOfKey(key, map.spec.shards) == shard) keys.push_back(key);
      }
      if (keys.empty()) continue;
      ReadOptions fresh;
      fresh.consistency.read_your_writes = true;
      absl::StatusOr<std::vector<std::optional<Record>>> records;
      for (int attempt = 0; attempt < 100; ++attempt) {  // until n3's copy is ready
        records = n3.Get(cluster::ShardCollectionName("docs", shard), keys, fresh);
        if (!absl::IsUnavailable(records.status())) break;
        absl::SleepFor(absl::Milliseconds(200));
      }
      ASSERT_TRUE(records.ok()) << records.status();
      for (size_t j = 0; j < keys.size(); ++j) {
        EXPECT_EQ((*records)[j].has_value(), want)
            << "n3, shard " << shard << ", key " << std::get<uint64_t>(keys[j]);
      }
    }
  }
}

// Waits until every shard's stream of "docs" was purged (its first entry is past 1).
void WaitForPurge(const std::string& nats_url, uint32_t shards) {
  auto log = cluster::ShardLog::Connect(nats_url, absl::Seconds(5));
  ASSERT_TRUE(log.ok()) << log.status();
  bool purged = false;
  for (int attempt = 0; attempt < 150 && !purged; ++attempt) {
    absl::SleepFor(absl::Milliseconds(200));
    purged = true;
    for (uint32_t shard = 0; shard < shards; ++shard) {
      auto first = (*log)->FirstSequence("docs", shard);
      ASSERT_TRUE(first.ok()) << first.status();
      purged = purged && *first > 1;
    }
  }
  ASSERT_TRUE(purged) << "the streams were not purged after both replicas applied them";
}

TEST_F(ClusterMoveE2ETest, AJoiningNodeGetsItsShareWhileAClientKeepsWriting) {
  CreateSharded("docs", 3, 2);  // on n1 and n2: each keeps all 3 shards
  BackgroundWriter client({clients_[0].get(), clients_[1].get()},
                          {.batch = 10, .retry_unavailable = true, .search = true});
  absl::SleepFor(absl::Seconds(1));
  ASSERT_TRUE(StartNode(2).ok()) << nodes_[2]->Stderr();
  // Two moves bring n3 to 2 shards of 6 replicas (and n1, n2 down to 2 each).
  const cluster::ShardMap map = WaitForBalance(services_.etcd_url());
  EXPECT_EQ(map.version, 5);         // two moves, each planned and completed
  absl::SleepFor(absl::Seconds(1));  // writes go on after the moves
  client.Stop();
  EXPECT_TRUE(client.errors().empty()) << client.errors().front();
  ASSERT_GT(client.acked().size(), 50u);
  for (uint32_t node = 0; node < kNodes; ++node) ExpectAllPresent(node, client.acked());
  ExpectN3Copies(*clients_[2], map, client.acked(), {});
}

// Streams are purged once both replicas applied them; n3 then copies its shards from a replica
// (the stream no longer starts at 1) and consumes the tail, deletes included.
TEST_F(ClusterMoveE2ETest, StreamsArePurgedAndAJoiningNodeCopiesItsShards) {
  CreateSharded("docs", 3, 2);
  std::vector<uint64_t> early, deleted;
  for (uint64_t batch = 0; batch < 20; ++batch) {
    std::vector<Record> records;
    for (uint64_t i = 0; i < 10; ++i) records.push_back(RecordOf(100000 + batch * 10 + i));
    ASSERT_TRUE(clients_[batch % 2]->Upsert("docs", records).ok());
    for (const Record& r : records) early.push_back(std::get<uint64_t>(r.key));
  }
  for (uint64_t key = 100000; key < 100050; ++key) deleted.push_back(key);
  std::vector<Key> keys(deleted.begin(), deleted.end());
  ASSERT_TRUE(clients_[0]->Delete("docs", keys).ok());
  early.erase(early.begin(), early.begin() + 50);
  WaitForPurge(services_.nats_url(), 3);
  BackgroundWriter client({clients_[0].get(), clients_[1].get()},
                          {.batch = 10, .retry_unavailable = true, .search = true});
  ASSERT_TRUE(StartNode(2).ok()) << nodes_[2]->Stderr();
  const cluster::ShardMap map = WaitForBalance(services_.etcd_url());
  client.Stop();
  EXPECT_TRUE(client.errors().empty()) << client.errors().front();
  EXPECT_NE(nodes_[2]->Stderr().find("records from node"), std::string::npos)
      << "n3 did not copy a shard:\n"
      << nodes_[2]->Stderr();
  std::vector<uint64_t> present = early;
  present.insert(present.end(), client.acked().begin(), client.acked().end());
  for (uint32_t node = 0; node < kNodes; ++node) ExpectAllPresent(node, present);
  ExpectN3Copies(*clients_[2], map, present, deleted);
}

// An operator moves shard 3 from n1 (it keeps shards 0 and 3 of 4) to n2 through n3 (which
// forwards to the coordinator); writes go on meanwhile and the move completes.
TEST_F(ClusterE2ETest, AnOperatorsMoveCompletesWithWritesGoingOn) {
  CreateSharded("docs", 4, 1);
  auto before = StoredMap(services_.etcd_url());
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_EQ(before->replicas[3], std::vector<std::string>{"n1"});
  EXPECT_TRUE(absl::IsInvalidArgument(clients_[2]->MoveShard("docs", 9, "n1", "n2").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(clients_[2]->MoveShard("docs", 3, "n3", "n2").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(clients_[2]->MoveShard("docs", 3, "n1", "n9").status()));
  EXPECT_TRUE(absl::IsNotFound(clients_[2]->MoveShard("nope", 0, "n1", "n2").status()));
  BackgroundWriter client({clients_[0].get(), clients_[1].get()},
                          {.batch = 10, .retry_unavailable = true});
  absl::SleepFor(absl::Milliseconds(300));
  auto version = clients_[2]->MoveShard("docs", 3, "n1", "n2");
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(*version, before->version + 1);
  absl::StatusOr<cluster::ShardMap> after;
  for (int attempt = 0; attempt < 150; ++attempt) {
    absl::SleepFor(absl::Milliseconds(200));
    after = StoredMap(services_.etcd_url());
    if (after.ok() && !after->move) break;
  }
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_FALSE(after->move.has_value()) << "the move never completed";
  EXPECT_EQ(after->replicas[3], std::vector<std::string>{"n2"});
  client.Stop();
  EXPECT_TRUE(client.errors().empty()) << client.errors().front();
  for (uint32_t node = 0; node < kNodes; ++node) ExpectAllPresent(node, client.acked());
}

// A copy made from another replica's pages keeps the tenants: each record's owner and
// grants, so a tenant sees through n3's copies exactly what it sees through the others'.
TEST_F(ClusterMoveE2ETest, ACopyFromPagesKeepsTheTenants) {
  CreateSharded("docs", 3, 2);
  client::Client& admin = *clients_[0];
  ASSERT_TRUE(admin.CreateTenant("docs", {.name = "acme"}).ok());
  ASSERT_TRUE(admin.CreateTenant("docs", {.name = "beta"}).ok());
  std::vector<Record> acme, beta, none;
  for (uint64_t k = 0; k < 60; ++k) acme.push_back(RecordOf(k));
  for (uint64_t k = 100; k < 160; ++k) beta.push_back(RecordOf(k));
  for (uint64_t k = 200; k < 210; ++k) none.push_back(RecordOf(k));
  ASSERT_TRUE(admin.Upsert("docs", acme, {.tenant = "acme"}).ok());
  ASSERT_TRUE(clients_[1]->Upsert("docs", beta, {.tenant = "beta"}).ok());
  ASSERT_TRUE(admin.Upsert("docs", none).ok());
  // Beta's 105 is granted to acme; 205, owned by no tenant, to beta.
  ASSERT_TRUE(admin.Grant("docs", "acme", std::vector<Key>{uint64_t{105}}).ok());
  ASSERT_TRUE(admin.Grant("docs", "beta", std::vector<Key>{uint64_t{205}}).ok());
  WaitForPurge(services_.nats_url(), 3);
  ASSERT_TRUE(StartNode(2).ok()) << nodes_[2]->Stderr();
  const cluster::ShardMap map = WaitForBalance(services_.etcd_url());
  ASSERT_NE(nodes_[2]->Stderr().find("records from node"), std::string::npos)
      << "n3 did not copy a shard:\n"
      << nodes_[2]->Stderr();
  std::vector<Key> all;
  for (const auto* records : {&acme, &beta, &none}) {
    for (const Record& r : *records) all.push_back(r.key);
  }
  int checked = 0;
  for (uint32_t shard = 0; shard < 3; ++shard) {
    const auto& owners = map.replicas[shard];
    if (std::find(owners.begin(), owners.end(), "n3") == owners.end()) continue;
    const std::string other = owners[0] == "n3" ? owners[1] : owners[0];
    client::Client& n3 = *clients_[2];
    client::Client& peer = *clients_[other.back() - '1'];
    const std::string name = cluster::ShardCollectionName("docs", shard);
    std::vector<Key> keys;
    for (const Key& key : all) {
      if (cluster::ShardOfKey(key, 3) == shard) keys.push_back(key);
    }
    for (const std::string tenant : {"acme", "beta", ""}) {
      ReadOptions options{.tenant = tenant};
      options.consistency.read_your_writes = true;
      absl::StatusOr<std::vector<std::optional<Record>>> mine, theirs;
      for (int attempt = 0; attempt < 100; ++attempt) {  // until n3's copy is ready
        mine = n3.Get(name, keys, options);
        if (!absl::IsUnavailable(mine.status())) break;
        absl::SleepFor(absl::Milliseconds(200));
      }
      theirs = peer.Get(name, keys, options);
      ASSERT_TRUE(mine.ok()) << mine.status();
      ASSERT_TRUE(theirs.ok()) << theirs.status();
      for (size_t i = 0; i < keys.size(); ++i) {
        EXPECT_EQ((*mine)[i].has_value(), (*theirs)[i].has_value())
            << "tenant '" << tenant << "', key " << std::get<uint64_t>(keys[i]);
      }
    }
    for (const Key& key : keys) {
      auto mine = n3.DescribeKeyTenants(name, key);
      auto theirs = peer.DescribeKeyTenants(name, key);
      ASSERT_TRUE(mine.ok()) << mine.status();
      ASSERT_TRUE(theirs.ok()) << theirs.status();
      EXPECT_EQ(*mine, *theirs) << "key " << std::get<uint64_t>(key);
    }
    for (const char* tenant : {"acme", "beta"}) {
      auto mine = n3.DescribeTenant(name, tenant);
      auto theirs = peer.DescribeTenant(name, tenant);
      ASSERT_TRUE(mine.ok()) << mine.status();
      ASSERT_TRUE(theirs.ok()) << theirs.status();
      EXPECT_EQ(mine->vectors_owned, theirs->vectors_owned) << tenant;
      EXPECT_EQ(mine->vectors_visible, theirs->vectors_visible) << tenant;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 2);
  // The two special keys, wherever they are: owner and grantees as written.
  auto granted = clients_[2]->DescribeKeyTenants("docs", Key{uint64_t{105}});
  ASSERT_TRUE(granted.ok()) << granted.status();
  EXPECT_EQ(*granted, (KeyTenants{.owner = "beta", .grantees = {"acme"}}));
  auto unowned = clients_[2]->DescribeKeyTenants("docs", Key{uint64_t{205}});
  ASSERT_TRUE(unowned.ok()) << unowned.status();
  EXPECT_EQ(*unowned, (KeyTenants{.owner = "", .grantees = {"beta"}}));
}

}  // namespace
}  // namespace shoal::e2e

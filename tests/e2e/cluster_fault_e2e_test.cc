// Cluster mode end to end under faults (ctest label `cluster`): a node SIGKILLed during writes
// loses no acknowledged write and catches up when restarted; NATS or etcd away gives
// UNAVAILABLE, and the cluster recovers when they return.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cluster/etcd_client.h"
#include "cluster/membership.h"
#include "cluster/shard_map.h"
#include "gtest/gtest.h"
#include "rpc/client/shoal_client.h"
#include "tests/e2e/cluster_fixture.h"
#include "tests/e2e/cluster_services.h"
#include "tests/e2e/shoald_process.h"

namespace shoal::e2e {
namespace {

using ClusterFaultE2ETest = ClusterE2ETest;

// The shard map as etcd holds it now.
// Every acked key of every shard `node_id` keeps must read back from that node's own copy
// (S=3, R=2 over 2 or 3 live nodes: each keeps at least 2 shards).
void ExpectShardCopiesComplete(client::Client& node, const std::string& node_id,
                               const cluster::ShardMap& map, const std::vector<uint64_t>& acked) {
  int kept = 0;
  for (uint32_t shard = 0; shard < map.spec.shards; ++shard) {
    const auto& owners = map.replicas[shard];
    if (std::find(owners.begin(), owners.end(), node_id) == owners.end()) continue;
    ++kept;
    std::vector<Key> keys;
    for (uint64_t key : acked) {
      if (cluster::ShardOfKey(key, map.spec.shards) == shard) keys.push_back(key);
    }
    ReadOptions fresh;
    fresh.consistency.read_your_writes = true;
    absl::StatusOr<std::vector<std::optional<Record>>> records;
    for (int attempt = 0; attempt < 100; ++attempt) {  // until the node has opened the shard
      records = node.Get(cluster::ShardCollectionName("docs", shard), keys, fresh);
      if (records.ok()) break;
      absl::SleepFor(absl::Milliseconds(200));
    }
    ASSERT_TRUE(records.ok()) << records.status();
    for (size_t j = 0; j < keys.size(); ++j) {
      EXPECT_TRUE((*records)[j].has_value())
          << node_id << " lacks key " << std::get<uint64_t>(keys[j]) << " of shard " << shard;
    }
  }
  EXPECT_GE(kept, 2) << node_id << " keeps too few shards in map version " << map.version;
}

// A node that is down while its collection is dropped and created anew under the same name
// must not serve the old collection's records: once back, every copy it keeps of the new one
// holds the new keys only (its files name the old incarnation, so it starts afresh).
TEST_F(ClusterFaultE2ETest, ANodeAwayDuringADropAndRecreateStartsItsCopiesAfresh) {
  CreateSharded("docs", 3, 2);
  std::vector<Record> old_records;
  std::vector<uint64_t> old_keys;
  for (uint64_t k = 0; k < 90; ++k) {
    old_records.push_back(RecordOf(k));
    old_keys.push_back(k);
  }
  ASSERT_TRUE(clients_[0]->Upsert("docs", old_records).ok());
  ExpectAllPresent(2, old_keys);
  nodes_[2]->Signal(SIGKILL);
  ASSERT_TRUE(nodes_[2]->Wait().ok());
  absl::Status dropped;
  for (int attempt = 0; attempt < 150; ++attempt) {  // n3 may have been the coordinator
    dropped = clients_[0]->DropCollection("docs");
    if (!absl::IsUnavailable(dropped)) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_TRUE(dropped.ok()) << dropped;
  CreateSharded("docs", 3, 2);
  std::vector<Record> new_records = {RecordOf(1000), RecordOf(1001), RecordOf(1002)};
  ASSERT_TRUE(clients_[0]->Upsert("docs", new_records).ok());
  ASSERT_TRUE(StartNode(2).ok()) << nodes_[2]->Stderr();
  // Until n3 keeps shards of the new map (at once, or once moves give it its share).
  absl::StatusOr<cluster::ShardMap> map;
  std::vector<uint32_t> kept;
  for (int attempt = 0; attempt < 150 && kept.empty(); ++attempt) {
    absl::SleepFor(absl::Milliseconds(200));
    map = StoredMap(services_.etcd_url());
    if (!map.ok() || map->move) continue;
    for (uint32_t shard = 0; shard < map->spec.shards; ++shard) {
      const auto& owners = map->replicas[shard];
      if (std::find(owners.begin(), owners.end(), "n3") != owners.end()) kept.push_back(shard);
    }
  }
  ASSERT_FALSE(kept.empty()) << "n3 never got a shard of the new collection";
  for (uint32_t shard : kept) {
    std::vector<Key> keys;
    for (uint64_t key : old_keys) {
      if (cluster::ShardOfKey(key, map->spec.shards) == shard) keys.push_back(key);
    }
    ReadOptions fresh;
    fresh.consistency.read_your_writes = true;
    absl::StatusOr<std::vector<std::optional<Record>>> records;
    for (int attempt = 0; attempt < 100; ++attempt) {  // until n3 has opened its copy
      records = clients_[2]->Get(cluster::ShardCollectionName("docs", shard), keys, fresh);
      if (records.ok()) break;
      absl::SleepFor(absl::Milliseconds(200));
    }
    ASSERT_TRUE(records.ok()) << records.status();
    for (size_t j = 0; j < keys.size(); ++j) {
      EXPECT_FALSE((*records)[j].has_value())
          << "n3's copy of shard " << shard << " still has old key " << std::get<uint64_t>(keys[j]);
    }
  }
}

TEST_F(ClusterFaultE2ETest, NoAcknowledgedWriteIsLostWhenANodeIsKilledAndRestarted) {
  CreateSharded("docs", 3, 2);
  const uint32_t victim = 1;                                        // n2
  BackgroundWriter writer({clients_[0].get(), clients_[2].get()});  // through the survivors
  absl::SleepFor(absl::Seconds(2));
  nodes_[victim]->Signal(SIGKILL);
  ASSERT_TRUE(nodes_[victim]->Wait().ok());
  // Searches keep answering from the survivors while the victim is down.
  for (int i = 0; i < 10; ++i) {
    auto hits = clients_[i % 2 == 0 ? 0 : 2]->Search("docs", VectorOf(1), {.k = 5});
    EXPECT_TRUE(hits.ok()) << "search " << i << ": " << hits.status();
    absl::SleepFor(absl::Milliseconds(100));
  }
  // It comes back on its old directory (before its lease expires, so it keeps its shards) and
  // catches up from its applied sequences while the writes go on.
  ASSERT_TRUE(StartNode(victim).ok()) << nodes_[victim]->Stderr();
  absl::SleepFor(absl::Seconds(1));
  const std::vector<uint64_t> acked = writer.Stop();
  ASSERT_GT(acked.size(), 100u);
  for (uint32_t node = 0; node < kNodes; ++node) ExpectAllPresent(node, acked);
  auto map = StoredMap(services_.etcd_url());
  ASSERT_TRUE(map.ok()) << map.status();
  ExpectShardCopiesComplete(*clients_[victim], "n2", *map, acked);
}

TEST_F(ClusterFaultE2ETest, ShardsOfANodeThatStaysDownGetBackToRReplicas) {
  CreateSharded("docs", 3, 2);
  BackgroundWriter writer({clients_[0].get(), clients_[1].get()});
  absl::SleepFor(absl::Seconds(1));
  nodes_[2]->Signal(SIGKILL);  // n3, for good
  ASSERT_TRUE(nodes_[2]->Wait().ok());
  // Its lease (5 s) expires; the coordinator gives its shards to n1 and n2.
  absl::StatusOr<cluster::ShardMap> map;
  bool moved = false;
  for (int attempt = 0; attempt < 150 && !moved; ++attempt) {
    absl::SleepFor(absl::Milliseconds(200));
    map = StoredMap(services_.etcd_url());
    ASSERT_TRUE(map.ok()) << map.status();
    moved = true;
    for (const auto& owners : map->replicas) {
      if (owners.size() != 2 || std::find(owners.begin(), owners.end(), "n3") != owners.end()) {
        moved = false;
      }
    }
  }
  ASSERT_TRUE(moved) << "shard map version " << map->version << " still names n3";
  EXPECT_GT(map->version, 1);
  const std::vector<uint64_t> acked = writer.Stop();
  ASSERT_GT(acked.size(), 50u);
  ExpectAllPresent(0, acked);
  ExpectAllPresent(1, acked);
  ExpectShardCopiesComplete(*clients_[0], "n1", *map, acked);
  ExpectShardCopiesComplete(*clients_[1], "n2", *map, acked);
}

TEST_F(ClusterFaultE2ETest, NatsAwayIsUnavailableThenWritesRecover) {
  CreateSharded("docs", 3, 2);
  std::vector<Record> records = {RecordOf(1), RecordOf(2), RecordOf(3)};
  ASSERT_TRUE(clients_[0]->Upsert("docs", records).ok());
  services_.nats().Kill();
  absl::Status status = clients_[0]->Upsert("docs", records).status();
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_NE(status.message().find("nats"), std::string::npos) << status;
  ASSERT_TRUE(services_.nats().Restart().ok());
  ASSERT_TRUE(services_.WaitForNats().ok());
  for (int attempt = 0; attempt < 100; ++attempt) {  // the clients reconnect by themselves
    status = clients_[0]->Upsert("docs", records).status();
    if (status.ok()) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  ASSERT_TRUE(status.ok()) << status;
  ExpectAllPresent(2, {1, 2, 3});
}

TEST_F(ClusterFaultE2ETest, EtcdAwayIsUnavailableThenRecovers) {
  CreateSharded("docs", 3, 2);
  services_.etcd().Signal(SIGSTOP);
  CollectionSpec spec{.name = "more", .dimension = kDimension, .shards = 2, .replication = 2};
  absl::Status status = clients_[0]->CreateCollection(spec).status();
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  // Writes and reads of existing collections do not need etcd.
  std::vector<Record> records = {RecordOf(5)};
  EXPECT_TRUE(clients_[1]->Upsert("docs", records).ok());
  services_.etcd().Signal(SIGCONT);
  ASSERT_TRUE(services_.WaitForEtcd().ok());
  for (int attempt = 0; attempt < 100; ++attempt) {
    status = clients_[0]->CreateCollection(spec).status();
    if (!absl::IsUnavailable(status)) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  // The create asked while etcd was stopped may reach it once it continues (its caller saw
  // UNAVAILABLE, the outcome unknown): a retry then finds the collection there.
  ASSERT_TRUE(status.ok() || absl::IsAlreadyExists(status)) << status;
  absl::StatusOr<CollectionInfo> more = clients_[0]->DescribeCollection("more");
  ASSERT_TRUE(more.ok()) << more.status();
  ExpectAllPresent(2, {5});
}

}  // namespace
}  // namespace shoal::e2e

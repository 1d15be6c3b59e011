// Cluster mode end to end, shard moves (ctest label `cluster`): a node that joins a running
// cluster gets its share of the shards, moved one replica at a time while a client keeps
// writing and searching; the client sees no error it cannot retry, and nothing acknowledged
// is lost.
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cluster/etcd_client.h"
#include "cluster/membership.h"
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

absl::StatusOr<cluster::ShardMap> StoredMap(const std::string& etcd_url) {
  cluster::EtcdClient etcd(etcd_url);
  auto stored = etcd.Get(std::string(cluster::kCollectionsPrefix) + "docs");
  if (!stored.ok()) return stored.status();
  if (stored->kvs.size() != 1) return absl::NotFoundError("no shard map of docs");
  return cluster::DecodeShardMap(stored->kvs[0].value);
}

// Writes batches of 10 new keys and searches, through `clients` in turn, until stopped;
// retries a write that fails with UNAVAILABLE (the same batch: idempotent) and keeps every
// other error.
class Client {
 public:
  explicit Client(std::vector<client::Client*> clients) : clients_(std::move(clients)) {
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() {
    running_ = false;
    thread_.join();
  }
  const std::vector<uint64_t>& acked() const { return acked_; }
  const std::vector<std::string>& errors() const { return errors_; }
  int retries() const { return retries_; }

 private:
  void Run() {
    uint64_t next = 0;
    for (uint32_t turn = 0; running_; ++turn) {
      std::vector<Record> records;
      for (uint64_t i = 0; i < 10; ++i) records.push_back(RecordOf(next + i));
      client::Client& via = *clients_[turn % clients_.size()];
      absl::Status status = via.Upsert("docs", records).status();
      if (absl::IsUnavailable(status)) {
        ++retries_;
        absl::SleepFor(absl::Milliseconds(50));
        continue;  // the same batch again
      }
      if (!status.ok()) errors_.push_back(absl::StrCat("upsert: ", status.ToString()));
      if (status.ok()) {
        for (uint64_t i = 0; i < 10; ++i) acked_.push_back(next + i);
      }
      next += 10;
      auto hits = via.Search("docs", VectorOf(next), {.k = 5});
      if (!hits.ok() && !absl::IsUnavailable(hits.status())) {
        errors_.push_back(absl::StrCat("search: ", hits.status().ToString()));
      }
    }
  }

  std::vector<client::Client*> clients_;
  std::atomic<bool> running_{true};
  std::vector<uint64_t> acked_;
  std::vector<std::string> errors_;
  int retries_ = 0;
  std::thread thread_;
};

TEST_F(ClusterMoveE2ETest, AJoiningNodeGetsItsShareWhileAClientKeepsWriting) {
  CreateSharded("docs", 3, 2);  // on n1 and n2: each keeps all 3 shards
  Client client({clients_[0].get(), clients_[1].get()});
  absl::SleepFor(absl::Seconds(1));
  ASSERT_TRUE(StartNode(2).ok()) << nodes_[2]->Stderr();
  // Two moves bring n3 to 2 shards of 6 replicas (and n1, n2 down to 2 each).
  absl::StatusOr<cluster::ShardMap> map;
  std::map<std::string, int> load;
  for (int attempt = 0; attempt < 300; ++attempt) {
    absl::SleepFor(absl::Milliseconds(200));
    map = StoredMap(services_.etcd_url());
    ASSERT_TRUE(map.ok()) << map.status();
    load.clear();
    for (const auto& owners : map->replicas) {
      for (const std::string& node : owners) ++load[node];
    }
    if (!map->move && load["n3"] == 2) break;
  }
  ASSERT_FALSE(map->move.has_value()) << "a move never completed, map version " << map->version;
  EXPECT_EQ(load, (std::map<std::string, int>{{"n1", 2}, {"n2", 2}, {"n3", 2}}));
  EXPECT_EQ(map->version, 5);        // two moves, each planned and completed
  absl::SleepFor(absl::Seconds(1));  // writes go on after the moves
  client.Stop();
  EXPECT_TRUE(client.errors().empty()) << client.errors().front();
  ASSERT_GT(client.acked().size(), 50u);
  for (uint32_t node = 0; node < kNodes; ++node) ExpectAllPresent(node, client.acked());
  // n3's own copies hold every acknowledged key of its shards.
  for (uint32_t shard = 0; shard < map->spec.shards; ++shard) {
    const auto& owners = map->replicas[shard];
    if (std::find(owners.begin(), owners.end(), "n3") == owners.end()) continue;
    std::vector<Key> keys;
    for (uint64_t key : client.acked()) {
      if (cluster::ShardOfKey(key, map->spec.shards) == shard) keys.push_back(key);
    }
    ReadOptions fresh;
    fresh.consistency.read_your_writes = true;
    auto records = clients_[2]->Get(cluster::ShardCollectionName("docs", shard), keys, fresh);
    ASSERT_TRUE(records.ok()) << records.status();
    for (size_t j = 0; j < keys.size(); ++j) {
      EXPECT_TRUE((*records)[j].has_value()) << "n3 lacks key " << std::get<uint64_t>(keys[j]);
    }
  }
}

}  // namespace
}  // namespace shoal::e2e

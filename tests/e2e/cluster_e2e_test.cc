// Cluster mode end to end, the fast cases (default run): writes through any node are read and
// searched on every node; bad sharded specs; index builds of every shard copy; a single node
// refuses a sharded spec; compaction and drop of a sharded collection; per-shard metrics.
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "shoal/v1/admin_service.grpc.pb.h"
#include "tests/e2e/cluster_fixture.h"
#include "tests/e2e/prometheus_text.h"

namespace shoal::e2e {
namespace {

TEST_F(ClusterE2ETest, WritesOnAnyNodeAreReadAndSearchedOnEveryNode) {
  CreateSharded("docs", 3, 2);
  std::vector<uint64_t> keys;
  for (uint64_t batch = 0; batch < 12; ++batch) {
    std::vector<Record> records;
    for (uint64_t k = batch * 25; k < batch * 25 + 25; ++k) {
      records.push_back(RecordOf(k));
      keys.push_back(k);
    }
    auto written = clients_[batch % kNodes]->Upsert("docs", records);
    ASSERT_TRUE(written.ok()) << written.status();
  }
  for (uint32_t node = 0; node < kNodes; ++node) ExpectAllPresent(node, keys);
  for (uint32_t node = 0; node < kNodes; ++node) {
    for (uint64_t key : {uint64_t{3}, uint64_t{150}, uint64_t{299}}) {
      SearchParams params{.k = 3};
      params.consistency.read_your_writes = true;
      auto hits = clients_[node]->Search("docs", VectorOf(key), params);
      ASSERT_TRUE(hits.ok()) << hits.status();
      ASSERT_EQ(hits->size(), 1u);
      ASSERT_EQ((*hits)[0].size(), 3u);
      EXPECT_EQ((*hits)[0][0].distance, 0.0f) << "node " << node << " key " << key;
    }
  }
  auto info = clients_[2]->DescribeCollection("docs");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->spec.shards, 3u);
  EXPECT_EQ(info->spec.replication, 2u);
  EXPECT_EQ(info->num_vectors, 300u);
  // A delete through one node is gone on every node.
  std::vector<Key> gone = {uint64_t{7}, uint64_t{8}};
  ASSERT_TRUE(clients_[1]->Delete("docs", gone).ok());
  ReadOptions fresh;
  fresh.consistency.read_your_writes = true;
  auto records = clients_[0]->Get("docs", gone, fresh);
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_FALSE((*records)[0].has_value());
  EXPECT_FALSE((*records)[1].has_value());
}

// A collection created through one node is there at once on every other: written, read and
// described without a retry, and gone everywhere once dropped.
TEST_F(ClusterE2ETest, ACollectionCreatedThroughOneNodeIsUsableAtOnceThroughEvery) {
  CreateSharded("warmup", 2, 1);  // every node registered
  for (uint32_t round = 0; round < 8; ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round);
    const std::string name = absl::StrCat("c", round);
    CollectionSpec spec{.name = name,
                        .dimension = kDimension,
                        .metric = Metric::kL2,
                        .shards = 2,
                        .replication = 1};
    ASSERT_TRUE(clients_[round % kNodes]->CreateCollection(spec).ok());
    client::Client& other = *clients_[(round + 1) % kNodes];
    const std::vector<Record> records = {RecordOf(1), RecordOf(2)};
    auto written = other.Upsert(name, records);
    ASSERT_TRUE(written.ok()) << written.status();
    auto info = clients_[(round + 2) % kNodes]->DescribeCollection(name);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->spec.shards, 2u);
    ASSERT_TRUE(other.DropCollection(name).ok());
    EXPECT_TRUE(absl::IsNotFound(clients_[round % kNodes]->DescribeCollection(name).status()));
  }
}

TEST_F(ClusterE2ETest, BadShardedSpecsNameTheField) {
  CollectionSpec spec{.name = "bad", .dimension = kDimension, .shards = 3, .replication = 5};
  absl::Status status = clients_[1]->CreateCollection(spec).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(status) || absl::IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("replication"), std::string::npos) << status;
  spec.replication = 0;
  status = clients_[1]->CreateCollection(spec).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  // A collection without shards stays on the node that made it, as on a single node.
  ASSERT_TRUE(clients_[1]->CreateCollection({.name = "plain", .dimension = kDimension}).ok());
  std::vector<Record> one = {RecordOf(1)};
  EXPECT_TRUE(clients_[1]->Upsert("plain", one).ok());
  EXPECT_TRUE(absl::IsNotFound(clients_[0]->DescribeCollection("plain").status()));
}

// A batch a replica's DB would refuse is refused before it reaches the log (an acknowledged
// write is never dropped by a replica).
TEST_F(ClusterE2ETest, BadWritesAreRefusedBeforeTheLog) {
  CreateSharded("docs", 3, 2);
  Record bad = RecordOf(1);
  bad.attributes["not a name"] = int64_t{1};
  std::vector<Record> records = {RecordOf(2), bad};
  absl::Status status = clients_[0]->Upsert("docs", records).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("records[1].attributes"), std::string::npos) << status;
  records = {RecordOf(3), RecordOf(3)};
  status = clients_[1]->Upsert("docs", records).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  records = {Record{.key = uint64_t{4}, .vector = {1, 2}}};
  status = clients_[2]->Upsert("docs", records).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("vector"), std::string::npos) << status;
  ReadOptions fresh;
  fresh.consistency.read_your_writes = true;
  std::vector<Key> keys = {uint64_t{1}, uint64_t{2}, uint64_t{3}};
  auto found = clients_[0]->Get("docs", keys, fresh);
  ASSERT_TRUE(found.ok()) << found.status();
  for (const auto& record : *found) EXPECT_FALSE(record.has_value());
}

// BuildIndex of a sharded collection builds every replica's copy; searches keep answering.
TEST_F(ClusterE2ETest, BuildIndexBuildsEveryShardCopy) {
  CreateSharded("docs", 3, 2);
  std::vector<uint64_t> keys;
  for (uint64_t batch = 0; batch < 9; ++batch) {
    std::vector<Record> records;
    for (uint64_t k = batch * 100; k < batch * 100 + 100; ++k) {
      records.push_back(RecordOf(k));
      keys.push_back(k);
    }
    ASSERT_TRUE(clients_[batch % kNodes]->Upsert("docs", records).ok());
  }
  for (uint32_t node = 0; node < kNodes; ++node) ExpectAllPresent(node, keys);
  auto built = clients_[1]->BuildIndex("docs", "spann:centroid_ratio=0.05,replicas=2,seed=1");
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(built->index.rfind("spann", 0), 0u) << built->index;
  EXPECT_EQ(built->num_vectors, keys.size());
  int copies = 0;
  for (uint32_t node = 0; node < kNodes; ++node) {
    for (uint32_t shard = 0; shard < 3; ++shard) {
      auto info = clients_[node]->DescribeCollection(cluster::ShardCollectionName("docs", shard));
      if (!info.ok()) continue;  // not a copy this node keeps
      ++copies;
      EXPECT_EQ(info->index.rfind("spann", 0), 0u) << "node " << node << " shard " << shard;
    }
  }
  EXPECT_EQ(copies, 6);  // 3 shards x 2 replicas
  for (uint32_t node = 0; node < kNodes; ++node) {
    auto hits = clients_[node]->Search("docs", VectorOf(7), {.k = 3});
    ASSERT_TRUE(hits.ok()) << hits.status();
    EXPECT_EQ((*hits)[0].size(), 3u);
  }
  absl::Status bad = clients_[0]->BuildIndex("docs", "spann:bogus=1").status();
  EXPECT_TRUE(absl::IsInvalidArgument(bad)) << bad;
  EXPECT_NE(bad.message().find("shard"), std::string::npos) << bad;
}

// Waits (10 s at most) until `done` holds; false if it never did.
bool Eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 200; ++i) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return done();
}

// Compact and DropCollection of a sharded collection reach every copy; a collection created
// anew under the dropped one's name starts empty on every node.
TEST_F(ClusterE2ETest, ShardedCollectionsCompactDropAndComeBackEmpty) {
  CreateSharded("docs", 3, 2);
  std::vector<uint64_t> keys;
  for (uint64_t batch = 0; batch < 6; ++batch) {
    std::vector<Record> records;
    for (uint64_t k = batch * 50; k < batch * 50 + 50; ++k) {
      records.push_back(RecordOf(k));
      keys.push_back(k);
    }
    ASSERT_TRUE(clients_[batch % kNodes]->Upsert("docs", records).ok());
  }
  for (uint32_t node = 0; node < kNodes; ++node) ExpectAllPresent(node, keys);
  absl::Status compacted = clients_[2]->Compact("docs").status();
  ASSERT_TRUE(compacted.ok()) << compacted;
  ExpectAllPresent(0, keys);

  absl::Status dropped = clients_[1]->DropCollection("docs");
  ASSERT_TRUE(dropped.ok()) << dropped;
  for (uint32_t node = 0; node < kNodes; ++node) {
    EXPECT_TRUE(Eventually([&] {
      return absl::IsNotFound(clients_[node]->DescribeCollection("docs").status());
    })) << "node "
        << node << " still has the collection";
    for (uint32_t shard = 0; shard < 3; ++shard) {
      const std::string copy = cluster::ShardCollectionName("docs", shard);
      EXPECT_TRUE(Eventually([&] {
        return absl::IsNotFound(clients_[node]->DescribeCollection(copy).status());
      })) << "node "
          << node << " still keeps " << copy;
    }
  }
  absl::Status again = clients_[0]->DropCollection("docs");
  EXPECT_TRUE(absl::IsNotFound(again)) << again;

  CreateSharded("docs", 3, 2);
  std::vector<Key> old_keys = {uint64_t{0}, uint64_t{1}, uint64_t{149}, uint64_t{299}};
  const std::vector<Record> fresh_record = {RecordOf(1000)};
  ASSERT_TRUE(clients_[0]->Upsert("docs", fresh_record).ok());
  ReadOptions fresh;
  fresh.consistency.read_your_writes = true;
  for (uint32_t node = 0; node < kNodes; ++node) {
    auto records = clients_[node]->Get("docs", old_keys, fresh);
    ASSERT_TRUE(records.ok()) << records.status();
    for (size_t i = 0; i < old_keys.size(); ++i) {
      EXPECT_FALSE((*records)[i].has_value()) << "node " << node << " key #" << i;
    }
    auto info = clients_[node]->DescribeCollection("docs");
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->num_vectors, 1u) << "node " << node;
  }
  ExpectAllPresent(2, {1000});
}

// Every node's /metrics has its view of the cluster and one series per shard copy it keeps;
// once writes stop, every copy's durable sequence reaches its applied one and the lag is 0.
TEST_F(ClusterE2ETest, MetricsShowEachShardCopysAppliedSequenceAndLag) {
  CreateSharded("docs", 3, 2);
  std::vector<uint64_t> keys;
  for (uint64_t batch = 0; batch < 6; ++batch) {
    std::vector<Record> records;
    for (uint64_t k = batch * 40; k < batch * 40 + 40; ++k) {
      records.push_back(RecordOf(k));
      keys.push_back(k);
    }
    ASSERT_TRUE(clients_[batch % kNodes]->Upsert("docs", records).ok());
  }
  for (uint32_t node = 0; node < kNodes; ++node) ExpectAllPresent(node, keys);
  double coordinators = 0;
  int copies = 0;
  for (uint32_t node = 0; node < kNodes; ++node) {
    std::vector<Sample> samples;
    auto settled = [&] {
      absl::StatusOr<HttpResponse> got = HttpGet(nodes_[node]->metrics_port(), "/metrics");
      if (!got.ok() || got->status != 200) return false;
      absl::StatusOr<std::vector<Sample>> parsed = ParsePrometheusText(got->body);
      if (!parsed.ok()) return false;
      samples = *std::move(parsed);
      for (const Sample& s : samples) {
        if (s.name != "shoal_shard_applied_sequence") continue;
        auto durable = SampleValue(samples, "shoal_shard_durable_sequence", s.labels);
        if (s.value == 0 || !durable || *durable != s.value) return false;
      }
      return true;
    };
    ASSERT_TRUE(Eventually(settled)) << "node " << node << ": durable never reached applied";
    EXPECT_EQ(SampleValue(samples, "shoal_cluster_live_nodes"), 3.0) << "node " << node;
    EXPECT_EQ(SampleValue(samples, "shoal_cluster_etcd_reachable"), 1.0) << "node " << node;
    coordinators += SampleValue(samples, "shoal_cluster_coordinator").value_or(0);
    for (uint32_t shard = 0; shard < 3; ++shard) {
      const std::map<std::string, std::string> labels = {{"collection", "docs"},
                                                         {"shard", absl::StrCat(shard)}};
      if (!SampleValue(samples, "shoal_shard_applied_sequence", labels)) continue;
      ++copies;
      EXPECT_EQ(SampleValue(samples, "shoal_shard_lag_entries", labels), 0.0);
      EXPECT_EQ(SampleValue(samples, "shoal_shard_ready", labels), 1.0);
    }
  }
  EXPECT_EQ(coordinators, 1.0);
  EXPECT_EQ(copies, 6);  // 3 shards x 2 replicas
}

v1::GetClusterResponse GetCluster(const std::string& address) {
  auto stub =
      v1::AdminService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::GetClusterResponse response;
  grpc::Status status = stub->GetCluster(&context, {}, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response;
}

TEST_F(ClusterE2ETest, EveryNodeReportsTheSameNodesCoordinatorAndShardMap) {
  CreateSharded("docs", 3, 2);
  std::string coordinator;
  for (uint32_t node = 0; node < kNodes; ++node) {
    v1::GetClusterResponse cluster;
    for (int attempt = 0; attempt < 50; ++attempt) {  // until its watch has seen the map
      cluster = GetCluster(nodes_[node]->address());
      if (cluster.collections_size() == 1) break;
      absl::SleepFor(absl::Milliseconds(100));
    }
    EXPECT_TRUE(cluster.cluster_mode());
    EXPECT_EQ(cluster.node_id(), absl::StrCat("n", node + 1));
    EXPECT_TRUE(cluster.etcd_reachable());
    ASSERT_EQ(cluster.nodes_size(), 3);
    EXPECT_FALSE(cluster.coordinator().empty());
    if (coordinator.empty()) coordinator = cluster.coordinator();
    EXPECT_EQ(cluster.coordinator(), coordinator) << "one coordinator for all";
    ASSERT_EQ(cluster.collections_size(), 1);
    const v1::ClusterCollectionInfo& docs = cluster.collections(0);
    EXPECT_EQ(docs.name(), "docs");
    EXPECT_EQ(docs.version(), 1);
    ASSERT_EQ(docs.replicas_size(), 3);
    for (const v1::ShardReplicas& shard : docs.replicas()) EXPECT_EQ(shard.nodes_size(), 2);
  }
}

TEST(ClusterSingleNodeTest, ShardedSpecWithoutClusterIsInvalidArgument) {
  const std::string dir = MakeTempDir();
  ShoaldProcess shoald;
  ASSERT_TRUE(shoald.Start(dir).ok()) << shoald.Stderr();
  auto c = client::Client::Connect(shoald.address());
  ASSERT_TRUE(c.ok());
  absl::Status status =
      (*c)->CreateCollection(
              {.name = "docs", .dimension = kDimension, .shards = 3, .replication = 2})
          .status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("shards"), std::string::npos) << status;
  EXPECT_FALSE(GetCluster(shoald.address()).cluster_mode());
  EXPECT_EQ(shoald.Terminate(), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shoal::e2e

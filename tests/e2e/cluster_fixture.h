// ClusterE2ETest: the fixture of the cluster-mode end-to-end tests — a real etcd, a real
// nats-server (JetStream) and three real shoald nodes (--cluster-etcd/--cluster-nats/--node-id,
// ids n1..n3), each with a C++ SDK client. Skips with a clear message when etcd or nats-server
// is not installed (scripts/common.sh installs both).
#ifndef SHOAL_TESTS_E2E_CLUSTER_FIXTURE_H_
#define SHOAL_TESTS_E2E_CLUSTER_FIXTURE_H_

#include <signal.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cluster/etcd_client.h"
#include "cluster/shard_map.h"
#include "gtest/gtest.h"
#include "rpc/client/shoal_client.h"
#include "tests/e2e/cluster_services.h"
#include "tests/e2e/shoald_process.h"

namespace shoal::e2e {

inline constexpr uint32_t kDimension = 8;
inline constexpr uint32_t kNodes = 3;

inline std::vector<float> VectorOf(uint64_t key) {
  std::vector<float> v(kDimension);
  for (uint32_t i = 0; i < kDimension; ++i) v[i] = static_cast<float>((key * 31 + i * 7) % 101);
  return v;
}

inline Record RecordOf(uint64_t key) { return Record{.key = key, .vector = VectorOf(key)}; }

class ClusterE2ETest : public testing::Test {
 protected:
  void SetUp() override {
    if (std::string missing = services_.Missing(); !missing.empty()) GTEST_SKIP() << missing;
    dir_ = MakeTempDir();
    ASSERT_TRUE(services_.Start(dir_).ok());
    for (uint32_t i = 0; i < kNodes; ++i) nodes_.push_back(std::make_unique<ShoaldProcess>());
    for (uint32_t i = 0; i < InitialNodes(); ++i) {
      ASSERT_TRUE(StartNode(i).ok()) << nodes_[i]->Stderr();
    }
  }

  // How many of the kNodes nodes SetUp starts (the others: StartNode(i) later).
  virtual uint32_t InitialNodes() const { return kNodes; }

  void TearDown() override {
    nodes_.clear();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::vector<std::string> ClusterArgs(uint32_t i) const {
    return {"--cluster-etcd",     services_.etcd_url(), "--cluster-nats",
            services_.nats_url(), "--node-id",          absl::StrCat("n", i + 1)};
  }

  absl::Status StartNode(uint32_t i) {
    const std::string data = absl::StrCat(dir_, "/node", i + 1);
    absl::Status s = nodes_[i]->Start(data, ClusterArgs(i));
    if (!s.ok()) return s;
    absl::StatusOr<std::unique_ptr<client::Client>> c =
        client::Client::Connect(nodes_[i]->address(), {.timeout = absl::Seconds(20)});
    if (!c.ok()) return c.status();
    if (clients_.size() <= i) clients_.resize(i + 1);
    clients_[i] = *std::move(c);
    return absl::OkStatus();
  }

  // Creates the sharded collection through node 1 (retrying while the coordinator is elected).
  void CreateSharded(const std::string& name, uint32_t shards, uint32_t replication) {
    CollectionSpec spec{.name = name,
                        .dimension = kDimension,
                        .metric = Metric::kL2,
                        .shards = shards,
                        .replication = replication};
    absl::Status status;
    for (int attempt = 0; attempt < 100; ++attempt) {
      status = clients_[0]->CreateCollection(spec).status();
      if (!absl::IsUnavailable(status) && !absl::IsFailedPrecondition(status)) break;
      absl::SleepFor(absl::Milliseconds(100));  // nodes still registering
    }
    ASSERT_TRUE(status.ok()) << status;
  }

  // Every key in `keys` must read back with its vector through `node` (read-your-writes).
  void ExpectAllPresent(uint32_t node, const std::vector<uint64_t>& keys) {
    std::vector<Key> batch;
    for (size_t i = 0; i < keys.size(); ++i) {
      batch.push_back(keys[i]);
      if (batch.size() < 200 && i + 1 < keys.size()) continue;
      ReadOptions options;
      options.consistency.read_your_writes = true;
      auto records = clients_[node]->Get("docs", batch, options);
      ASSERT_TRUE(records.ok()) << records.status();
      ASSERT_EQ(records->size(), batch.size());
      for (size_t j = 0; j < batch.size(); ++j) {
        const uint64_t key = std::get<uint64_t>(batch[j]);
        ASSERT_TRUE((*records)[j].has_value()) << "acknowledged key " << key << " is lost";
        EXPECT_EQ((*records)[j]->vector, VectorOf(key)) << "key " << key;
      }
      batch.clear();
    }
  }

  ClusterServices services_;
  std::string dir_;
  std::vector<std::unique_ptr<ShoaldProcess>> nodes_;
  std::vector<std::unique_ptr<client::Client>> clients_;
};

}  // namespace shoal::e2e

#endif  // SHOAL_TESTS_E2E_CLUSTER_FIXTURE_H_

// ClusterE2ETest: the fixture of the cluster-mode end-to-end tests — a real etcd, a real
// nats-server (JetStream) and three real shoald nodes (--cluster-etcd/--cluster-nats/--node-id,
// ids n1..n3), each with a C++ SDK client. Skips with a clear message when etcd or nats-server
// is not installed (scripts/common.sh installs both). Every node serves metrics
// (ShoaldProcess::metrics_port). Also what the cluster tests share: StoredMap (a shard map as
// etcd holds it) and BackgroundWriter (a client writing new keys until stopped).
#ifndef SHOAL_TESTS_E2E_CLUSTER_FIXTURE_H_
#define SHOAL_TESTS_E2E_CLUSTER_FIXTURE_H_

#include <signal.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cluster/cluster_node.h"
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

// The shard map of `name` as stored in etcd. A read etcd left unanswered (UNAVAILABLE: the
// client gives up after 3 s, and a loaded machine's etcd can stall that long) is asked again for
// up to 30 s: the tests observe the map here; etcd's latency is not what they check.
inline absl::StatusOr<cluster::ShardMap> StoredMap(const std::string& etcd_url,
                                                   const std::string& name = "docs") {
  cluster::EtcdClient etcd(etcd_url);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  auto stored = etcd.Get(std::string(cluster::kCollectionsPrefix) + name);
  while (absl::IsUnavailable(stored.status()) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(100));
    stored = etcd.Get(std::string(cluster::kCollectionsPrefix) + name);
  }
  if (!stored.ok()) return stored.status();
  if (stored->kvs.size() != 1) return absl::NotFoundError("no shard map of " + name);
  return cluster::DecodeShardMap(stored->kvs[0].value);
}

struct BackgroundWriterOptions {
  uint64_t batch = 20;             // new keys per Upsert
  bool retry_unavailable = false;  // send a batch refused UNAVAILABLE again (idempotent)
  bool search = false;             // a search after each write
};

// Writes batches of new keys to "docs" through `clients` in turn, on its own thread, until
// Stop; keeps the acknowledged keys. Without retry_unavailable a failed batch is skipped;
// with it, a batch refused UNAVAILABLE is sent again and every other error is kept in
// errors() (as is every search error other than UNAVAILABLE).
class BackgroundWriter {
 public:
  explicit BackgroundWriter(std::vector<client::Client*> clients,
                            BackgroundWriterOptions options = {})
      : clients_(std::move(clients)), options_(options) {
    thread_ = std::thread([this] { Run(); });
  }
  ~BackgroundWriter() {
    if (thread_.joinable()) Stop();
  }
  // Stops writing; the acknowledged keys.
  const std::vector<uint64_t>& Stop() {
    running_ = false;
    thread_.join();
    return acked_;
  }
  const std::vector<uint64_t>& acked() const { return acked_; }
  const std::vector<std::string>& errors() const { return errors_; }
  int retries() const { return retries_; }

 private:
  void Run() {
    uint64_t next = 0;
    for (uint32_t turn = 0; running_; ++turn) {
      std::vector<Record> records;
      for (uint64_t i = 0; i < options_.batch; ++i) records.push_back(RecordOf(next + i));
      client::Client& via = *clients_[turn % clients_.size()];
      absl::Status status = via.Upsert("docs", records).status();
      if (options_.retry_unavailable && absl::IsUnavailable(status)) {
        ++retries_;
        absl::SleepFor(absl::Milliseconds(50));
        continue;  // the same batch again
      }
      if (status.ok()) {
        for (uint64_t i = 0; i < options_.batch; ++i) acked_.push_back(next + i);
      } else if (options_.retry_unavailable) {
        errors_.push_back(absl::StrCat("upsert: ", status.ToString()));
      }
      next += options_.batch;
      if (!options_.search) continue;
      auto hits = via.Search("docs", VectorOf(next), {.k = 5});
      if (!hits.ok() && !absl::IsUnavailable(hits.status())) {
        errors_.push_back(absl::StrCat("search: ", hits.status().ToString()));
      }
    }
  }

  const std::vector<client::Client*> clients_;
  const BackgroundWriterOptions options_;
  std::atomic<bool> running_{true};
  std::vector<uint64_t> acked_;
  std::vector<std::string> errors_;
  int retries_ = 0;
  std::thread thread_;
};

class ClusterE2ETest : public testing::Test {
 protected:
  void SetUp() override {
    if (std::string missing = services_.Missing(); !missing.empty()) GTEST_SKIP() << missing;
    dir_ = MakeTempDir();
    const absl::Status started = services_.Start(dir_);
    ASSERT_TRUE(started.ok()) << started;
    for (uint32_t i = 0; i < kNodes; ++i) nodes_.push_back(std::make_unique<ShoaldProcess>());
    for (uint32_t i = 0; i < InitialNodes(); ++i) {
      ASSERT_TRUE(StartNode(i).ok()) << nodes_[i]->Stderr();
    }
  }

  // How many of the kNodes nodes SetUp starts (the others: StartNode(i) later).
  virtual uint32_t InitialNodes() const { return kNodes; }

  void TearDown() override {
    // A failed test shows what each node said (lease lost, replica state) before the fixture
    // removes the nodes' stderr files.
    if (HasFailure()) {
      for (size_t i = 0; i < nodes_.size(); ++i) {
        const std::string err = nodes_[i]->Stderr();
        if (err.empty()) continue;
        const size_t tail = err.size() > 8192 ? err.size() - 8192 : 0;
        std::cerr << "--- node n" << i + 1 << " stderr (last " << err.size() - tail << " bytes):\n"
                  << err.substr(tail) << "\n";
      }
    }
    nodes_.clear();
    // etcd and nats-server write under dir_ until they die (the services' destructor, after
    // TearDown, would be too late: remove_all met a JetStream directory still being written).
    services_.nats().Kill();
    services_.etcd().Kill();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::vector<std::string> ClusterArgs(uint32_t i) const {
    return {"--cluster-etcd", services_.etcd_url(),     "--cluster-nats",   services_.nats_url(),
            "--node-id",      absl::StrCat("n", i + 1), "--metrics-listen", "127.0.0.1:0"};
  }

  // More shoald flags (--key-file ...) and the key clients_ send, for fixtures that need them.
  virtual std::vector<std::string> ExtraArgs() const { return {}; }
  virtual std::string ClientKey() const { return ""; }

  absl::Status StartNode(uint32_t i) {
    const std::string data = absl::StrCat(dir_, "/node", i + 1);
    std::vector<std::string> args = ClusterArgs(i);
    for (const std::string& arg : ExtraArgs()) args.push_back(arg);
    absl::Status s = nodes_[i]->Start(data, args);
    if (!s.ok()) return s;
    absl::StatusOr<std::unique_ptr<client::Client>> c = client::Client::Connect(
        nodes_[i]->address(), {.api_key = ClientKey(), .timeout = absl::Seconds(20)});
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

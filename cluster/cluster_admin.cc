// ClusterDB's maintenance of a sharded collection, made on every copy of every shard
// ("<collection>@<shard>", on its node), the nodes side by side and each node's copies in turn:
// index builds (each copy builds over its own data) and compactions.
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "cluster/cluster_db.h"

namespace shoal::cluster {
namespace {

// A build may take far longer than an ordinary node-to-node call.
constexpr absl::Duration kAdminTimeout = absl::Hours(24);

}  // namespace

absl::Status ClusterDB::BuildShardedIndex(const ShardMap& map, std::string_view spec) {
  return OnEveryCopy(map, [&](const std::string& name, client::Client* peer) {
    return peer == nullptr ? local_->BuildIndex(name, spec, nullptr)
                           : peer->BuildIndex(name, std::string(spec)).status();
  });
}

absl::Status ClusterDB::CompactSharded(const ShardMap& map) {
  return OnEveryCopy(map, [&](const std::string& name, client::Client* peer) {
    return peer == nullptr ? local_->Compact(name) : peer->Compact(name).status();
  });
}

absl::Status ClusterDB::OnEveryCopy(const ShardMap& map, const CopyCall& call) {
  const ClusterView view = node_->View();
  std::map<std::string, std::vector<uint32_t>> shards_of;  // node id -> its shards
  for (uint32_t shard = 0; shard < map.replicas.size(); ++shard) {
    for (const std::string& id : map.replicas[shard]) shards_of[id].push_back(shard);
  }
  absl::Mutex mu;
  absl::Status first_error;
  auto fail = [&](const absl::Status& s, const std::string& id, uint32_t shard) {
    absl::MutexLock lock(&mu);
    if (!first_error.ok()) return;
    first_error = absl::Status(s.code(), absl::StrCat("collection '", map.spec.name, "' shard ",
                                                      shard, " on node ", id, ": ", s.message()));
  };
  std::vector<std::thread> workers;
  for (const auto& [id, shards] : shards_of) {
    workers.emplace_back([&, id = id, shards = shards] {
      std::unique_ptr<client::Client> peer;
      if (id != node_->node_id()) {
        auto address = view.nodes.find(id);
        if (address == view.nodes.end()) {
          return fail(absl::UnavailableError("the node is not live"), id, shards.front());
        }
        absl::StatusOr<std::unique_ptr<client::Client>> connected =
            node_->ConnectPeer(address->second, kAdminTimeout);
        if (!connected.ok()) return fail(connected.status(), id, shards.front());
        peer = *std::move(connected);
      }
      for (uint32_t shard : shards) {
        absl::Status s = call(ShardCollectionName(map.spec.name, shard), peer.get());
        if (!s.ok()) return fail(s, id, shard);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  return first_error;
}

}  // namespace shoal::cluster

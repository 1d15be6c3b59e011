// ClusterNode's stream retention: each node publishes the applied sequence of its shard copies
// to etcd (/shoal-applied/<collection>/<shard>/<node>, outside /shoal/ so that it does not wake
// the membership watch), the coordinator purges each shard's stream up to the lowest applied
// sequence of the shard's replicas, and a replica behind what the stream keeps copies the shard
// from another replica (FindSeed; shard_replica.h).
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cluster/cluster_node.h"

namespace shoal::cluster {
namespace {

constexpr uint32_t kSeedPage = 500;  // records per page copied from another replica

std::string AppliedKey(const std::string& collection, uint32_t shard, const std::string& node) {
  return absl::StrCat(kAppliedPrefix, collection, "/", shard, "/", node);
}

}  // namespace

void ClusterNode::PublishApplied() {
  std::vector<std::pair<std::string, std::shared_ptr<ShardReplica>>> replicas;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, replica] : replicas_) replicas.emplace_back(name, replica);
  }
  for (const auto& [name, replica] : replicas) {
    const uint64_t applied = replica->durable_applied();  // retention may purge up to it
    if (applied == 0 || published_[name] == applied) continue;
    std::optional<std::pair<std::string, uint32_t>> shard = ParseShardCollectionName(name);
    if (!shard) continue;
    const std::string key = AppliedKey(shard->first, shard->second, options_.node_id);
    if (etcd_.Put(key, absl::StrCat(applied)).ok()) published_[name] = applied;
  }
}

absl::StatusOr<uint64_t> ClusterNode::PublishedApplied(const std::string& collection,
                                                       uint32_t shard, const std::string& node) {
  absl::StatusOr<RangeResult> got = etcd_.Get(AppliedKey(collection, shard, node));
  if (!got.ok()) return got.status();
  uint64_t applied = 0;
  if (got->kvs.size() == 1 && !absl::SimpleAtoi(got->kvs[0].value, &applied)) {
    return absl::DataLossError(absl::StrCat(AppliedKey(collection, shard, node), ": '",
                                            got->kvs[0].value, "' is not a sequence"));
  }
  return applied;  // 0 when never published
}

void ClusterNode::PurgeStreams() {
  const ClusterView view = View();
  if (view.coordinator != options_.node_id || !view.etcd_reachable) return;
  for (const auto& [name, map] : view.collections) {
    for (uint32_t shard = 0; shard < map.replicas.size(); ++shard) {
      uint64_t lowest = UINT64_MAX;
      for (const std::string& node : map.replicas[shard]) {
        absl::StatusOr<uint64_t> applied = PublishedApplied(name, shard, node);
        lowest = std::min(lowest, applied.ok() ? *applied : 0);
      }
      const std::string stream = StreamName(name, shard);
      if (lowest == 0 || lowest == UINT64_MAX || purged_[stream] >= lowest) continue;
      if (absl::Status s = log_->Purge(name, shard, lowest + 1); !s.ok()) {
        std::cerr << "shoald: cluster: " << s << "\n";
        continue;
      }
      purged_[stream] = lowest;
    }
  }
}

absl::StatusOr<SeedSource> ClusterNode::FindSeed(const std::string& collection, uint32_t shard,
                                                 uint64_t first_kept) {
  std::optional<ShardMap> map = FindShardMap(collection);
  if (!map) return absl::UnavailableError(absl::StrCat("collection '", collection, "': no map"));
  absl::Status last = absl::UnavailableError("no other replica");
  for (const Replica& replica : Replicas(*map, shard)) {
    if (replica.local) continue;
    absl::StatusOr<uint64_t> applied = PublishedApplied(collection, shard, replica.node_id);
    if (!applied.ok()) {
      last = applied.status();
      continue;
    }
    if (*applied + 1 < first_kept) continue;
    absl::StatusOr<std::shared_ptr<client::Client>> peer = Peer(replica.address);
    if (!peer.ok()) {
      last = peer.status();
      continue;
    }
    const std::string name = ShardCollectionName(collection, shard);
    std::shared_ptr<client::Client> client = *peer;
    return SeedSource{
        .node_id = replica.node_id,
        .applied = *applied,
        .scroll =
            [client, name](const std::string& token) {
              return client->Scroll(name, nullptr,
                                    {.limit = kSeedPage,
                                     .page_token = token,
                                     .with_vectors = true,
                                     .with_attributes = true});
            },
        .tenants =
            [client, name](const std::string& token) {
              return client->ListTenants(name, kSeedPage, token);
            },
        .key_tenants = [client,
                        name](const Key& key) { return client->DescribeKeyTenants(name, key); }};
  }
  return absl::UnavailableError(absl::StrCat("collection '", collection, "' shard ", shard,
                                             ": no replica to copy from (", last.ToString(), ")"));
}

}  // namespace shoal::cluster

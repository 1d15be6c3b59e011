// An operator's shard move (shoal cluster move, AdminService.MoveShard): the coordinator
// writes it into the shard map as PlanMove would; the target copies and catches up, then
// completes it (CompleteMoves in cluster_node.cc).
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cluster/cluster_node.h"

namespace shoal::cluster {

absl::StatusOr<int64_t> ClusterNode::MoveShard(const std::string& collection, uint32_t shard,
                                               const std::string& from, const std::string& to) {
  Membership* membership = this->membership();
  if (membership == nullptr) return absl::UnavailableError("cluster: not started yet");
  const ClusterView view = membership->View();
  if (view.coordinator.empty()) {
    return absl::UnavailableError("cluster: no coordinator is elected yet; retry");
  }
  if (view.coordinator == options_.node_id) {
    return MoveAsCoordinator(collection, shard, from, to);
  }
  auto address = view.nodes.find(view.coordinator);
  if (address == view.nodes.end()) {
    return absl::UnavailableError("cluster: coordinator " + view.coordinator + " is not live");
  }
  absl::StatusOr<std::shared_ptr<client::Client>> peer = Peer(address->second);
  if (!peer.ok()) return peer.status();
  return (*peer)->MoveShard(collection, shard, from, to);
}

absl::StatusOr<int64_t> ClusterNode::MoveAsCoordinator(const std::string& collection,
                                                       uint32_t shard, const std::string& from,
                                                       const std::string& to) {
  absl::MutexLock admin(&admin_mu_);
  const ClusterView view = membership()->Refresh();
  if (!view.etcd_reachable) return absl::UnavailableError("cluster: etcd is not reachable");
  auto current = view.collections.find(collection);
  if (current == view.collections.end()) {
    return absl::NotFoundError(
        absl::StrCat("collection: '", collection, "' is not a sharded collection"));
  }
  std::vector<std::string> live;
  for (const auto& [id, address] : view.nodes) live.push_back(id);
  ShardMap map = current->second;
  if (absl::Status s = RequestMove(live, shard, from, to, map); !s.ok()) return s;
  absl::StatusOr<bool> written =
      etcd_.CompareAndPut(kCollectionsPrefix + collection, EncodeShardMap(map),
                          view.collection_revisions.at(collection));
  if (!written.ok()) return written.status();
  if (!*written) {
    return absl::AbortedError(
        absl::StrCat("collection '", collection, "': the shard map changed meanwhile; retry"));
  }
  std::cerr << "shoald: cluster: " << collection << " shard map version " << map.version
            << ": moving shard " << shard << " from " << from << " to " << to << " (requested)\n";
  membership()->Refresh();
  return map.version;
}

}  // namespace shoal::cluster

// ClusterNode's drops of sharded collections: the coordinator deletes the shard map from etcd
// (the one truth of what exists), then the shard streams, the published applied sequences
// and its tenants' quotas; every node, seeing the map gone, stops its copies and drops them with
// their applied-sequence files (SweepDropped). A node that was down meanwhile drops its copies when
// it first sees the cluster again; one that comes back after the collection was created
// anew under the same name starts its copies afresh (the map's incarnation differs from the
// one its files recorded: shard_replica.cc).
#include <filesystem>
#include <iostream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "cluster/cluster_node.h"

namespace shoal::cluster {

absl::Status ClusterNode::DropShardedCollection(const std::string& name) {
  return AtCoordinator(
      name, /*present_after=*/false, [&] { return DropAsCoordinator(name); },
      [&](client::Client& coordinator) { return coordinator.DropCollection(name); });
}

absl::Status ClusterNode::DropAsCoordinator(const std::string& name) {
  absl::MutexLock admin(&admin_mu_);
  ClusterView view = membership()->Refresh();
  if (!view.etcd_reachable) return absl::UnavailableError("cluster: etcd is not reachable");
  auto map = view.collections.find(name);
  if (map == view.collections.end()) {
    return absl::NotFoundError(absl::StrCat("collection: '", name, "' not found"));
  }
  for (const auto& [alias, target] : view.aliases) {
    if (target == name) {
      return absl::FailedPreconditionError(
          absl::StrCat("collection: '", name, "' has alias '", alias, "'; drop the alias first"));
    }
  }
  if (absl::Status s = etcd_.Delete(kCollectionsPrefix + name); !s.ok()) return s;
  // The map is gone: nothing routes to the streams any more. What is left below is garbage
  // a failure only leaves behind (a re-create makes the streams anew and publishes afresh).
  for (uint32_t shard = 0; shard < map->second.spec.shards; ++shard) {
    if (absl::Status s = log_->DeleteStream(name, shard); !s.ok() && !absl::IsNotFound(s)) {
      std::cerr << "shoald: cluster: dropping " << name << ": " << s << "\n";
    }
  }
  for (const std::string& prefix :
       {absl::StrCat(kAppliedPrefix, name, "/"), absl::StrCat(kTenantQuotasPrefix, name, "/")}) {
    if (absl::Status s = etcd_.DeletePrefix(prefix); !s.ok()) {
      std::cerr << "shoald: cluster: dropping " << name << ": " << s << "\n";
    }
  }
  std::cerr << "shoald: cluster: dropped " << name << "\n";
  return absl::OkStatus();
}

// Drops this node's copies of collections no shard map names any more (dropped while the
// copy ran, or while this node was away), with their applied-sequence files.
void ClusterNode::SweepDropped(const ClusterView& view) {
  if (!view.etcd_reachable) return;
  absl::StatusOr<std::vector<CollectionInfo>> local = local_->ListCollections();
  if (!local.ok()) return;
  for (const CollectionInfo& info : *local) {
    std::optional<std::pair<std::string, uint32_t>> shard =
        ParseShardCollectionName(info.spec.name);
    if (!shard || view.collections.contains(shard->first)) continue;
    {
      absl::MutexLock lock(&mu_);
      if (replicas_.contains(info.spec.name)) continue;  // stopped by Reconcile first
    }
    if (absl::Status s = local_->DropCollection(info.spec.name); !s.ok() && !absl::IsNotFound(s)) {
      std::cerr << "shoald: cluster: dropping copy " << info.spec.name << ": " << s << "\n";
      continue;
    }
    std::error_code error;
    std::filesystem::remove(ShardReplica::StatePath(options_.state_dir, info.spec.name), error);
    std::cerr << "shoald: cluster: dropped copy " << info.spec.name << "\n";
  }
}

}  // namespace shoal::cluster

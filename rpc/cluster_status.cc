#include "rpc/cluster_status.h"

namespace shoal::rpc {

void FillClusterStatus(const cluster::ClusterNode& node, v1::GetClusterResponse* response) {
  const cluster::ClusterView view = node.View();
  response->set_cluster_mode(true);
  response->set_node_id(node.node_id());
  response->set_coordinator(view.coordinator);
  response->set_etcd_reachable(view.etcd_reachable);
  for (const auto& [id, address] : view.nodes) {
    v1::ClusterNodeInfo* out = response->add_nodes();
    out->set_id(id);
    out->set_address(address);
    out->set_coordinator(id == view.coordinator);
  }
  for (const auto& [name, map] : view.collections) {
    v1::ClusterCollectionInfo* out = response->add_collections();
    out->set_name(name);
    out->set_version(map.version);
    out->set_shards(map.spec.shards);
    out->set_replication(map.spec.replication);
    out->set_stream_replicas(map.stream_replicas);
    for (uint32_t shard = 0; shard < map.replicas.size(); ++shard) {
      v1::ShardReplicas* replicas = out->add_replicas();
      replicas->set_shard(shard);
      for (const std::string& id : map.replicas[shard]) replicas->add_nodes(id);
    }
  }
}

}  // namespace shoal::rpc

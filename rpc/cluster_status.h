// The answer of AdminService.GetCluster on a cluster-mode shoald: the node's last view of the
// cluster (cluster/cluster_node.h) as wire messages. Part of the shoald binary only.
#ifndef SHOAL_RPC_CLUSTER_STATUS_H_
#define SHOAL_RPC_CLUSTER_STATUS_H_

#include "cluster/cluster_node.h"
#include "shoal/v1/admin_service.pb.h"

namespace shoal::rpc {

// Thread-safe (reads the node's view under its lock).
void FillClusterStatus(const cluster::ClusterNode& node, v1::GetClusterResponse* response);

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_CLUSTER_STATUS_H_

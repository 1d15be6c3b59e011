// Prometheus series of a cluster node (shoald in cluster mode), read from the node when
// Prometheus scrapes — no NATS or etcd call is made on a scrape:
//   shoal_cluster_live_nodes                                  gauge: nodes in this node's view
//   shoal_cluster_coordinator                                 gauge: 1 on the coordinator
//   shoal_cluster_etcd_reachable                              gauge: 1 when etcd answered last
//   shoal_shard_applied_sequence{collection,shard}            gauge: last entry applied here
//   shoal_shard_durable_sequence{collection,shard}            gauge: last entry recorded durably
//   shoal_shard_lag_entries{collection,shard}                 gauge: stream entries not fetched
//                                                             yet (JetStream's count at the
//                                                             last fetch; 0 when idle)
//   shoal_shard_ready{collection,shard}                       gauge: 1 once the copy serves reads
// One series per shard copy this node keeps. Thread-safe.
#ifndef SHOAL_RPC_CLUSTER_METRICS_H_
#define SHOAL_RPC_CLUSTER_METRICS_H_

#include <memory>

namespace prometheus {
class Collectable;
}  // namespace prometheus

namespace shoal::cluster {
class ClusterNode;
}  // namespace shoal::cluster

namespace shoal::rpc {

// `node` is not owned and must outlive the collector.
std::shared_ptr<prometheus::Collectable> MakeClusterCollector(const cluster::ClusterNode* node);

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_CLUSTER_METRICS_H_

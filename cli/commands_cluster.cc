// `shoal cluster status|nodes|shards [COLLECTION]`: what a cluster-mode shoald knows of its
// cluster (AdminService.GetCluster); `shoal cluster move COLLECTION SHARD FROM TO`: moves one
// replica of a shard (AdminService.MoveShard; the move completes in the background, `cluster
// shards` shows when).
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cli/commands_internal.h"
#include "shoal/v1/admin_service.grpc.pb.h"

namespace shoal::cli {

namespace {

absl::StatusOr<Table> Move(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 6, 6));
  uint32_t shard = 0;
  if (!absl::SimpleAtoi(args.positional[3], &shard)) {
    return absl::InvalidArgumentError(
        absl::StrCat("SHARD: '", args.positional[3], "' is not a shard number"));
  }
  v1::MoveShardRequest request;
  request.set_collection(args.positional[2]);
  request.set_shard(shard);
  request.set_from(args.positional[4]);
  request.set_to(args.positional[5]);
  v1::MoveShardResponse r;
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.admin().MoveShard(c.Context().get(), request, &r)));
  Table t{.columns = {"collection", "shard", "from", "to", "version"}, .single = true};
  t.rows.push_back({Cell::Text(request.collection()), Cell::Number(uint64_t{shard}),
                    Cell::Text(request.from()), Cell::Text(request.to()),
                    Cell::Number(int64_t{r.version()})});
  return t;
}

}  // namespace

absl::StatusOr<Table> Cluster(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 2, 6));
  const std::string& sub = args.positional[1];
  if (sub == "move") return Move(c, args);
  if (args.positional.size() > 3) return UsageError("cluster: status, nodes, shards or move");
  v1::GetClusterResponse r;
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.admin().GetCluster(c.Context().get(), {}, &r)));
  if (sub == "status") {
    Table t{.columns = {"cluster_mode", "node", "coordinator", "nodes", "sharded_collections",
                        "etcd_reachable"},
            .single = true};
    t.rows.push_back({Cell::Bool(r.cluster_mode()), Cell::Text(r.node_id()),
                      Cell::Text(r.coordinator()), Cell::Number(uint64_t(r.nodes_size())),
                      Cell::Number(uint64_t(r.collections_size())),
                      Cell::Bool(r.etcd_reachable())});
    return t;
  }
  if (!r.cluster_mode()) {
    return absl::FailedPreconditionError("cluster: the server is not in cluster mode");
  }
  if (sub == "nodes") {
    Table t{.columns = {"node", "address", "coordinator"}};
    for (const v1::ClusterNodeInfo& node : r.nodes()) {
      t.rows.push_back(
          {Cell::Text(node.id()), Cell::Text(node.address()), Cell::Bool(node.coordinator())});
    }
    return t;
  }
  if (sub != "shards") return UsageError("cluster: status, nodes, shards or move");
  const std::string only = args.positional.size() > 2 ? args.positional[2] : "";
  Table t{.columns = {"collection", "version", "shard", "replicas", "stream_replicas"}};
  for (const v1::ClusterCollectionInfo& info : r.collections()) {
    if (!only.empty() && info.name() != only) continue;
    for (const v1::ShardReplicas& shard : info.replicas()) {
      std::vector<Cell> nodes;
      for (const std::string& node : shard.nodes()) nodes.push_back(Cell::Text(node));
      t.rows.push_back({Cell::Text(info.name()), Cell::Number(int64_t{info.version()}),
                        Cell::Number(uint64_t{shard.shard()}), Cell::List(nodes),
                        Cell::Number(uint64_t{info.stream_replicas()})});
    }
  }
  return t;
}

}  // namespace shoal::cli

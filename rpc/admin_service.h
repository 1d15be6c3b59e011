// gRPC handlers of shoal.v1.AdminService: index builds with streamed progress, compaction,
// snapshots and restore (only by NAME inside the server's --snapshot-dir), statistics. Every
// RPC needs an admin key. Thread-safe.
#ifndef SHOAL_RPC_ADMIN_SERVICE_H_
#define SHOAL_RPC_ADMIN_SERVICE_H_

#include <atomic>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "rpc/call_gate.h"
#include "rpc/ingest_budget.h"
#include "rpc/snapshot_shelf.h"
#include "shoal/v1/admin_service.grpc.pb.h"

namespace shoal::rpc {

// Cluster mode: moves a replica of (collection, shard) from node `from` to node `to`; returns
// the shard map's version with the move in it (cluster::ClusterNode::MoveShard).
using ShardMoveFn = std::function<absl::StatusOr<int64_t>(
    const std::string& collection, uint32_t shard, const std::string& from, const std::string& to)>;

class AdminServiceImpl final : public v1::AdminService::Service {
 public:
  // `gate` and `budget` are not owned and must outlive the service. `snapshot_dir` empty =
  // snapshots are off (FAILED_PRECONDITION).
  // `cluster_status` (cluster mode only) fills GetCluster's answer; `cluster_move` makes
  // MoveShard's move (unset: FAILED_PRECONDITION, not in cluster mode).
  AdminServiceImpl(CallGate* gate, IngestBudget* budget, std::string snapshot_dir,
                   std::function<void(v1::GetClusterResponse*)> cluster_status = nullptr,
                   ShardMoveFn cluster_move = nullptr)
      : gate_(gate),
        budget_(budget),
        shelf_(std::move(snapshot_dir)),
        cluster_status_(std::move(cluster_status)),
        cluster_move_(std::move(cluster_move)) {}

  grpc::Status BuildIndex(grpc::ServerContext* context, const v1::BuildIndexRequest* request,
                          grpc::ServerWriter<v1::BuildIndexProgress>* writer) override;
  grpc::Status Compact(grpc::ServerContext* context, const v1::CompactRequest* request,
                       v1::CompactResponse* response) override;
  grpc::Status Snapshot(grpc::ServerContext* context, const v1::SnapshotRequest* request,
                        v1::SnapshotResponse* response) override;
  grpc::Status ListSnapshots(grpc::ServerContext* context, const v1::ListSnapshotsRequest* request,
                             v1::ListSnapshotsResponse* response) override;
  grpc::Status Restore(grpc::ServerContext* context, const v1::RestoreRequest* request,
                       v1::RestoreResponse* response) override;
  grpc::Status GetStats(grpc::ServerContext* context, const v1::GetStatsRequest* request,
                        v1::GetStatsResponse* response) override;
  grpc::Status GetCluster(grpc::ServerContext* context, const v1::GetClusterRequest* request,
                          v1::GetClusterResponse* response) override;
  grpc::Status MoveShard(grpc::ServerContext* context, const v1::MoveShardRequest* request,
                         v1::MoveShardResponse* response) override;

 private:
  absl::Status RunBuild(grpc::ServerContext* context, const v1::BuildIndexRequest& request,
                        grpc::ServerWriter<v1::BuildIndexProgress>* writer);

  CallGate* const gate_;
  IngestBudget* const budget_;
  const SnapshotShelf shelf_;
  const std::function<void(v1::GetClusterResponse*)> cluster_status_;
  const ShardMoveFn cluster_move_;
  const absl::Time started_ = absl::Now();
  std::atomic<int> builds_in_progress_{0};
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_ADMIN_SERVICE_H_

#include "rpc/admin_service.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "base/build_info.h"
#include "rpc/convert.h"

namespace shoal::rpc {
namespace {

constexpr RpcMethod kBuildIndex{"AdminService/BuildIndex", Role::kAdmin};
constexpr RpcMethod kCompact{"AdminService/Compact", Role::kAdmin};
constexpr RpcMethod kSnapshot{"AdminService/Snapshot", Role::kAdmin};
constexpr RpcMethod kListSnapshots{"AdminService/ListSnapshots", Role::kAdmin};
constexpr RpcMethod kRestore{"AdminService/Restore", Role::kAdmin};
constexpr RpcMethod kGetStats{"AdminService/GetStats", Role::kAdmin};
constexpr RpcMethod kGetCluster{"AdminService/GetCluster", Role::kAdmin};
constexpr RpcMethod kMoveShard{"AdminService/MoveShard", Role::kAdmin};

// DB's snapshot description in the wire form.
v1::SnapshotInfo SnapshotToProto(const SnapshotInfo& info) {
  v1::SnapshotInfo proto;
  proto.set_name(info.name);
  proto.set_files(info.files);
  proto.set_bytes(info.bytes);
  proto.set_created_unix_seconds(info.created_unix_seconds);
  return proto;
}

}  // namespace

grpc::Status AdminServiceImpl::BuildIndex(grpc::ServerContext* context,
                                          const v1::BuildIndexRequest* request,
                                          grpc::ServerWriter<v1::BuildIndexProgress>* writer) {
  const absl::Time start = absl::Now();
  absl::Status status = gate_->Admit(context, kBuildIndex).status();
  if (status.ok()) status = gate_->CheckMessage(context, *request, "request");
  if (status.ok()) status = RunBuild(context, *request, writer);
  return gate_->Finish(kBuildIndex, start, status);
}

absl::Status AdminServiceImpl::RunBuild(grpc::ServerContext* context,
                                        const v1::BuildIndexRequest& request,
                                        grpc::ServerWriter<v1::BuildIndexProgress>* writer) {
  if (request.collection().empty()) return absl::InvalidArgumentError("collection: required");
  if (request.spec().empty()) return absl::InvalidArgumentError("spec: required");
  const uint32_t interval_ms =
      request.progress_interval_ms() == 0 ? 1000 : request.progress_interval_ms();
  if (interval_ms < 10) {
    return absl::InvalidArgumentError(
        absl::StrCat("progress_interval_ms: ", interval_ms, " is below 10"));
  }
  CollectionInfo before;
  {
    DbHost::Lease lease = gate_->Acquire();
    if (!lease.ok()) return lease.status();
    absl::StatusOr<CollectionInfo> info = lease->DescribeCollection(request.collection());
    if (!info.ok()) return info.status();
    before = *std::move(info);
  }
  const std::string& name = before.spec.name;  // the real name, also when asked by alias
  const absl::Time start = absl::Now();
  v1::BuildIndexProgress progress;
  progress.set_vectors(before.num_vectors);
  absl::Mutex engine_mu;
  IndexBuildProgress engine;  // the builder's latest report
  auto report = [&](v1::BuildIndexProgress::Phase phase) {
    {
      absl::MutexLock lock(&engine_mu);
      if (phase == v1::BuildIndexProgress::PHASE_BUILDING) {
        progress.set_step(engine.phase);
        progress.set_fraction(engine.fraction);
        gate_->metrics().SetBuildProgress(name, engine.fraction);
      }
    }
    progress.set_phase(phase);
    progress.set_elapsed_seconds(absl::ToDoubleSeconds(absl::Now() - start));
    // A client that went away stops getting reports; the build still finishes.
    if (!context->IsCancelled()) writer->Write(progress);
  };

  ++builds_in_progress_;
  gate_->metrics().AddBuildsInProgress(1);
  gate_->metrics().SetBuildProgress(name, 0);
  // The build runs on its own thread (with its own lease) so this one can report progress.
  absl::Status built;
  absl::Notification done;
  std::thread builder([&] {
    {
      DbHost::Lease lease = gate_->Acquire();
      built = lease.ok() ? lease->BuildIndex(name, request.spec(),
                                             [&](const IndexBuildProgress& p) {
                                               absl::MutexLock lock(&engine_mu);
                                               engine = p;
                                             })
                         : lease.status();
    }
    done.Notify();
  });
  report(v1::BuildIndexProgress::PHASE_BUILDING);
  while (!done.WaitForNotificationWithTimeout(absl::Milliseconds(interval_ms))) {
    report(v1::BuildIndexProgress::PHASE_BUILDING);
  }
  builder.join();
  --builds_in_progress_;
  gate_->metrics().AddBuildsInProgress(-1);
  if (!built.ok()) return built;
  gate_->metrics().SetBuildProgress(name, 1);

  DbHost::Lease lease = gate_->Acquire();
  if (!lease.ok()) return lease.status();
  absl::StatusOr<CollectionInfo> after = lease->DescribeCollection(name);
  if (!after.ok()) return after.status();
  CollectionInfoToProto(*after, progress.mutable_collection());
  progress.clear_step();
  progress.set_fraction(1);
  progress.set_done(true);
  report(v1::BuildIndexProgress::PHASE_DONE);
  return absl::OkStatus();
}

grpc::Status AdminServiceImpl::Compact(grpc::ServerContext* context,
                                       const v1::CompactRequest* request,
                                       v1::CompactResponse* response) {
  return gate_->Unary(context, kCompact, *request, [&](DB& db) {
    const absl::Time start = absl::Now();
    absl::Status s = db.Compact(request->collection());
    response->set_seconds(absl::ToDoubleSeconds(absl::Now() - start));
    return s;
  });
}

grpc::Status AdminServiceImpl::Snapshot(grpc::ServerContext* context,
                                        const v1::SnapshotRequest* request,
                                        v1::SnapshotResponse* response) {
  return gate_->Unary(context, kSnapshot, *request, [&](DB& db) -> absl::Status {
    absl::StatusOr<SnapshotInfo> info = shelf_.Create(db, request->name());
    if (!info.ok()) return info.status();
    *response->mutable_snapshot() = SnapshotToProto(*info);
    return absl::OkStatus();
  });
}

grpc::Status AdminServiceImpl::ListSnapshots(grpc::ServerContext* context,
                                             const v1::ListSnapshotsRequest* request,
                                             v1::ListSnapshotsResponse* response) {
  return gate_->Unary(context, kListSnapshots, *request, [&](DB&) -> absl::Status {
    absl::StatusOr<std::vector<SnapshotInfo>> all = shelf_.List();
    if (!all.ok()) return all.status();
    for (const SnapshotInfo& info : *all) *response->add_snapshots() = SnapshotToProto(info);
    return absl::OkStatus();
  });
}

grpc::Status AdminServiceImpl::Restore(grpc::ServerContext* context,
                                       const v1::RestoreRequest* request,
                                       v1::RestoreResponse* response) {
  const absl::Time start = absl::Now();
  absl::Status status = gate_->Admit(context, kRestore).status();
  if (status.ok()) status = gate_->CheckMessage(context, *request, "request");
  // No lease here: Restore waits for every lease to end.
  if (status.ok()) status = shelf_.Restore(*gate_->host(), request->name());
  if (status.ok()) {
    DbHost::Lease lease = gate_->Acquire();
    absl::StatusOr<std::vector<CollectionInfo>> infos =
        lease.ok() ? lease->ListCollections() : lease.status();
    status = infos.status();
    if (status.ok()) {
      for (const CollectionInfo& info : *infos) {
        CollectionInfoToProto(info, response->add_collections());
      }
    }
  }
  return gate_->Finish(kRestore, start, status);
}

grpc::Status AdminServiceImpl::GetStats(grpc::ServerContext* context,
                                        const v1::GetStatsRequest* request,
                                        v1::GetStatsResponse* response) {
  return gate_->Unary(context, kGetStats, *request, [&](DB& db) -> absl::Status {
    absl::StatusOr<std::vector<CollectionInfo>> infos = db.ListCollections();
    if (!infos.ok()) return infos.status();
    for (const CollectionInfo& info : *infos) {
      v1::CollectionInfo* out = response->add_collections();
      CollectionInfoToProto(info, out);
      response->set_total_vectors(response->total_vectors() + out->num_vectors());
      response->set_total_vector_bytes(response->total_vector_bytes() + out->vector_bytes());
    }
    response->set_uptime_seconds(absl::ToDoubleSeconds(absl::Now() - started_));
    response->set_builds_in_progress(builds_in_progress_.load());
    response->set_ingest_inflight_bytes(budget_->inflight());
    response->set_ingest_inflight_budget_bytes(budget_->limit());
    response->set_version(absl::StrCat("shoald ", base::VersionText()));
    return absl::OkStatus();
  });
}

grpc::Status AdminServiceImpl::GetCluster(grpc::ServerContext* context,
                                          const v1::GetClusterRequest* request,
                                          v1::GetClusterResponse* response) {
  return gate_->Unary(context, kGetCluster, *request, [&](DB&) -> absl::Status {
    if (cluster_status_) cluster_status_(response);
    return absl::OkStatus();
  });
}

grpc::Status AdminServiceImpl::MoveShard(grpc::ServerContext* context,
                                         const v1::MoveShardRequest* request,
                                         v1::MoveShardResponse* response) {
  return gate_->Unary(context, kMoveShard, *request, [&](DB&) -> absl::Status {
    if (!cluster_move_) {
      return absl::FailedPreconditionError("MoveShard: the server is not in cluster mode");
    }
    if (request->collection().empty()) return absl::InvalidArgumentError("collection: required");
    absl::StatusOr<int64_t> version =
        cluster_move_(request->collection(), request->shard(), request->from(), request->to());
    if (!version.ok()) return version.status();
    response->set_version(*version);
    return absl::OkStatus();
  });
}

}  // namespace shoal::rpc

// Client: the Ingest stream and the AdminService calls.
#include <algorithm>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "rpc/client/client_internal.h"
#include "rpc/client/shoal_client.h"
#include "rpc/convert.h"

namespace shoal::client {
namespace {

using internal::FromGrpc;
using internal::InfoFromProto;
using internal::NewContext;

SnapshotInfo SnapshotFromProto(const v1::SnapshotInfo& proto) {
  return SnapshotInfo{proto.name(), proto.bytes(), proto.files(), proto.created_unix_seconds()};
}

}  // namespace

absl::StatusOr<IngestResult> Client::Ingest(const std::string& collection,
                                            std::span<const Record> records,
                                            const IngestOptions& options) {
  if (options.batch_records == 0) return absl::InvalidArgumentError("batch_records: must be > 0");
  const size_t window = std::max<size_t>(1, options.max_in_flight);
  const size_t batches = (records.size() + options.batch_records - 1) / options.batch_records;
  std::unique_ptr<grpc::ClientContext> context = NewContext(options_);
  context->AddMetadata("shoal-ingest-end-marker", "1");
  auto stream = stubs_->vectors->Ingest(context.get());
  // Batch `b` as a message; rebuilt when the server asks for it again.
  auto send = [&](uint64_t b) {
    v1::IngestRequest request;
    request.set_collection(collection);
    request.set_sequence(b);
    request.set_sync(options.sync);
    request.set_tenant(options.tenant);
    const size_t begin = b * options.batch_records;
    const size_t end = std::min(records.size(), begin + options.batch_records);
    request.mutable_records()->Reserve(static_cast<int>(end - begin));
    for (size_t i = begin; i < end; ++i) rpc::RecordToProto(records[i], request.add_records());
    return stream->Write(request);
  };
  IngestResult result;
  std::deque<uint64_t> in_flight;  // acks arrive in the order batches were sent
  uint64_t next = 0;
  bool broken = false;
  while (!broken && (next < batches || !in_flight.empty())) {
    while (next < batches && in_flight.size() < window) {
      if (!send(next)) {
        broken = true;
        break;
      }
      in_flight.push_back(next++);
    }
    if (broken) break;
    v1::IngestResponse ack;
    if (!stream->Read(&ack)) {
      broken = true;
      break;
    }
    if (in_flight.empty() || ack.sequence() != in_flight.front()) {
      context->TryCancel();
      stream->Finish().IgnoreError();
      return absl::InternalError(
          absl::StrCat("ingest: acknowledgement for batch ", ack.sequence(), " out of order"));
    }
    in_flight.pop_front();
    if (ack.retry_after_ms() > 0) {
      ++result.retries;
      absl::SleepFor(absl::Milliseconds(ack.retry_after_ms()));
      if (!send(ack.sequence())) {
        broken = true;
        break;
      }
      in_flight.push_back(ack.sequence());
      continue;
    }
    result.upserted += ack.upserted();
    ++result.batches;
  }
  if (!broken) {
    v1::IngestRequest end;
    end.set_end_of_stream(true);
    stream->WriteLast(end, grpc::WriteOptions());
  }
  grpc::Status status = stream->Finish();
  if (!status.ok()) return FromGrpc(status);
  // Never a result for batches that were not acknowledged, whatever status the stream ended
  // with (a server older than the end marker ends OK after a message it could not parse).
  if (broken || result.batches != batches) {
    return absl::UnavailableError(absl::StrCat(
        "ingest: the stream ended early: ", result.batches, " of ", batches, " batches (",
        result.upserted, " records) were acknowledged; the others were not applied"));
  }
  return result;
}

absl::StatusOr<CollectionInfo> Client::BuildIndex(
    const std::string& collection, const std::string& spec,
    const std::function<void(const BuildProgress&)>& on_progress, uint32_t progress_interval_ms) {
  v1::BuildIndexRequest request;
  request.set_collection(collection);
  request.set_spec(spec);
  request.set_progress_interval_ms(progress_interval_ms);
  std::unique_ptr<grpc::ClientContext> context = NewContext(options_);
  auto reader = stubs_->admin->BuildIndex(context.get(), request);
  v1::BuildIndexProgress progress;
  std::optional<CollectionInfo> built;
  while (reader->Read(&progress)) {
    if (on_progress) {
      on_progress(BuildProgress{progress.done() ? "done" : "building", progress.fraction(),
                                progress.elapsed_seconds(), progress.vectors(), progress.step()});
    }
    if (progress.done()) built = InfoFromProto(progress.collection());
  }
  grpc::Status status = reader->Finish();
  if (!status.ok()) return FromGrpc(status);
  if (!built.has_value()) return absl::InternalError("BuildIndex: stream ended without done");
  return *std::move(built);
}

absl::StatusOr<double> Client::Compact(const std::string& collection) {
  v1::CompactRequest request;
  request.set_collection(collection);
  v1::CompactResponse response;
  grpc::Status status = stubs_->admin->Compact(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.seconds();
}

absl::StatusOr<SnapshotInfo> Client::Snapshot(const std::string& name) {
  v1::SnapshotRequest request;
  request.set_name(name);
  v1::SnapshotResponse response;
  grpc::Status status = stubs_->admin->Snapshot(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return SnapshotFromProto(response.snapshot());
}

absl::StatusOr<std::vector<SnapshotInfo>> Client::ListSnapshots() {
  v1::ListSnapshotsResponse response;
  grpc::Status status = stubs_->admin->ListSnapshots(NewContext(options_).get(), {}, &response);
  if (!status.ok()) return FromGrpc(status);
  std::vector<SnapshotInfo> out;
  for (const v1::SnapshotInfo& info : response.snapshots()) out.push_back(SnapshotFromProto(info));
  return out;
}

absl::StatusOr<std::vector<CollectionInfo>> Client::Restore(const std::string& name) {
  v1::RestoreRequest request;
  request.set_name(name);
  v1::RestoreResponse response;
  grpc::Status status = stubs_->admin->Restore(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  std::vector<CollectionInfo> out;
  for (const v1::CollectionInfo& info : response.collections()) out.push_back(InfoFromProto(info));
  return out;
}

absl::StatusOr<ServerStats> Client::GetStats() {
  v1::GetStatsResponse response;
  grpc::Status status = stubs_->admin->GetStats(NewContext(options_).get(), {}, &response);
  if (!status.ok()) return FromGrpc(status);
  ServerStats stats;
  for (const v1::CollectionInfo& info : response.collections()) {
    stats.collections.push_back(InfoFromProto(info));
  }
  stats.total_vectors = response.total_vectors();
  stats.total_vector_bytes = response.total_vector_bytes();
  stats.uptime_seconds = response.uptime_seconds();
  stats.builds_in_progress = response.builds_in_progress();
  stats.ingest_inflight_bytes = response.ingest_inflight_bytes();
  stats.ingest_inflight_budget_bytes = response.ingest_inflight_budget_bytes();
  stats.version = response.version();
  return stats;
}

absl::StatusOr<int64_t> Client::MoveShard(const std::string& collection, uint32_t shard,
                                          const std::string& from, const std::string& to) {
  v1::MoveShardRequest request;
  request.set_collection(collection);
  request.set_shard(shard);
  request.set_from(from);
  request.set_to(to);
  v1::MoveShardResponse response;
  grpc::Status status = stubs_->admin->MoveShard(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.version();
}

}  // namespace shoal::client

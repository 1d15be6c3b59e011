#include "rpc/vector_service.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "rpc/convert.h"

namespace shoal::rpc {
namespace {

absl::Status CheckCollectionAndCount(const std::string& collection, int count,
                                     absl::string_view items_field) {
  if (collection.empty()) return absl::InvalidArgumentError("collection: required");
  if (count == 0) return absl::InvalidArgumentError(absl::StrCat(items_field, ": empty"));
  return absl::OkStatus();
}

// Records of an upsert-shaped request; errors name "records[i]".
absl::StatusOr<std::vector<Record>> RecordsFromProto(
    const google::protobuf::RepeatedPtrField<v1::Record>& protos) {
  std::vector<Record> records;
  records.reserve(protos.size());
  for (int i = 0; i < protos.size(); ++i) {
    // Every error's message starts with the field given: "records[i]" is added only then.
    absl::StatusOr<Record> record = RecordFromProto(protos[i], "");
    if (!record.ok()) {
      return absl::Status(record.status().code(),
                          absl::StrCat("records[", i, "]", record.status().message()));
    }
    records.push_back(*std::move(record));
  }
  return records;
}

absl::Status DoUpsert(CallGate& gate, DB& db, const Principal& caller,
                      const v1::UpsertRequest& request, v1::UpsertResponse& response) {
  if (absl::Status s =
          CheckCollectionAndCount(request.collection(), request.records_size(), "records");
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> tenant = gate.ScopeTenant(caller, request.tenant(), "tenant");
  if (!tenant.ok()) return tenant.status();
  absl::StatusOr<std::vector<Record>> records = RecordsFromProto(request.records());
  if (!records.ok()) return records.status();
  const WriteOptions options{.sync = request.sync(), .tenant = *tenant};
  if (absl::Status s = gate.TimedWrite(
          request.sync(), [&] { return db.Upsert(request.collection(), *records, options); });
      !s.ok()) {
    gate.metrics().RecordTenantWriteRejection(request.collection(), *tenant, s);
    return s;
  }
  response.set_upserted(records->size());
  return absl::OkStatus();
}

absl::Status DoGet(CallGate& gate, DB& db, const Principal& caller, const v1::GetRequest& request,
                   v1::GetResponse& response) {
  if (absl::Status s = CheckCollectionAndCount(request.collection(), request.keys_size(), "keys");
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> tenant = gate.ScopeTenant(caller, request.tenant(), "tenant");
  if (!tenant.ok()) return tenant.status();
  absl::StatusOr<std::vector<Key>> keys = KeysFromProto(request.keys(), "keys");
  if (!keys.ok()) return keys.status();
  absl::StatusOr<std::vector<std::optional<Record>>> records =
      db.Get(request.collection(), *keys,
             ReadOptions{.tenant = *tenant,
                         .consistency = {
                             .read_your_writes = request.consistency().read_your_writes(),
                             .min_applied_sequence = request.consistency().min_applied_sequence(),
                         }});
  if (!records.ok()) return records.status();
  for (const std::optional<Record>& record : *records) {
    v1::GetResult* result = response.add_results();
    result->set_found(record.has_value());
    if (record.has_value()) RecordToProto(*record, result->mutable_record());
  }
  return absl::OkStatus();
}

absl::Status DoDelete(CallGate& gate, DB& db, const Principal& caller,
                      const v1::DeleteRequest& request, v1::DeleteResponse& response) {
  if (absl::Status s = CheckCollectionAndCount(request.collection(), request.keys_size(), "keys");
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> tenant = gate.ScopeTenant(caller, request.tenant(), "tenant");
  if (!tenant.ok()) return tenant.status();
  absl::StatusOr<std::vector<Key>> keys = KeysFromProto(request.keys(), "keys");
  if (!keys.ok()) return keys.status();
  const WriteOptions options{.sync = request.sync(), .tenant = *tenant};
  absl::StatusOr<uint64_t> deleted;
  if (absl::Status s = gate.TimedWrite(request.sync(),
                                       [&] {
                                         deleted = db.Delete(request.collection(), *keys, options);
                                         return deleted.status();
                                       });
      !s.ok()) {
    return s;
  }
  response.set_deleted(*deleted);
  return absl::OkStatus();
}

absl::Status DoBatch(grpc::ServerContext* context, CallGate& gate, DB& db, const Principal& caller,
                     const v1::BatchRequest& request, v1::BatchResponse& response) {
  if (request.operations().empty()) return absl::InvalidArgumentError("operations: empty");
  for (int i = 0; i < request.operations_size(); ++i) {
    const v1::BatchOperation& op = request.operations(i);
    absl::Status s = gate.CheckDeadline(context);
    std::string field = absl::StrCat("operations[", i, "]");
    if (s.ok() && op.has_upsert()) {
      absl::StrAppend(&field, ".upsert");
      s = DoUpsert(gate, db, caller, op.upsert(), *response.add_results()->mutable_upsert());
    } else if (s.ok() && op.has_delete_()) {
      absl::StrAppend(&field, ".delete");
      s = DoDelete(gate, db, caller, op.delete_(), *response.add_results()->mutable_delete_());
    } else if (s.ok()) {
      s = absl::InvalidArgumentError("op: not set (upsert or delete)");
    }
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat(field, ".", s.message(), " (", i,
                                                 " operation(s) before it were applied)"));
    }
  }
  return absl::OkStatus();
}

constexpr RpcMethod kUpsert{"VectorService/Upsert", Role::kReadWrite, TenantAccess::kScoped};
constexpr RpcMethod kGet{"VectorService/Get", Role::kReadOnly, TenantAccess::kScoped};
constexpr RpcMethod kDelete{"VectorService/Delete", Role::kReadWrite, TenantAccess::kScoped};
constexpr RpcMethod kBatch{"VectorService/Batch", Role::kReadWrite, TenantAccess::kScoped};
constexpr RpcMethod kIngest{"VectorService/Ingest", Role::kReadWrite, TenantAccess::kScoped};

// Request metadata a client sends when it will end its Ingest stream with an end_of_stream
// message (proto/shoal/v1/vector_service.proto).
bool EndMarkerAnnounced(const grpc::ServerContext& context) {
  auto [begin, end] = context.client_metadata().equal_range("shoal-ingest-end-marker");
  return begin != end && begin->second == "1";
}

}  // namespace

grpc::Status VectorServiceImpl::Upsert(grpc::ServerContext* context,
                                       const v1::UpsertRequest* request,
                                       v1::UpsertResponse* response) {
  return gate_->Unary(context, kUpsert, *request, [&](DB& db, const Principal& caller) {
    return DoUpsert(*gate_, db, caller, *request, *response);
  });
}

grpc::Status VectorServiceImpl::Get(grpc::ServerContext* context, const v1::GetRequest* request,
                                    v1::GetResponse* response) {
  return gate_->Unary(context, kGet, *request, [&](DB& db, const Principal& caller) {
    return DoGet(*gate_, db, caller, *request, *response);
  });
}

grpc::Status VectorServiceImpl::Delete(grpc::ServerContext* context,
                                       const v1::DeleteRequest* request,
                                       v1::DeleteResponse* response) {
  return gate_->Unary(context, kDelete, *request, [&](DB& db, const Principal& caller) {
    return DoDelete(*gate_, db, caller, *request, *response);
  });
}

grpc::Status VectorServiceImpl::Batch(grpc::ServerContext* context, const v1::BatchRequest* request,
                                      v1::BatchResponse* response) {
  return gate_->Unary(context, kBatch, *request, [&](DB& db, const Principal& caller) {
    return DoBatch(context, *gate_, db, caller, *request, *response);
  });
}

grpc::Status VectorServiceImpl::Ingest(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::IngestResponse, v1::IngestRequest>* stream) {
  const absl::Time start = absl::Now();
  absl::StatusOr<Principal> caller = gate_->Admit(context, kIngest);
  absl::Status status = caller.status();
  if (status.ok()) status = RunIngest(context, *caller, stream);
  return gate_->Finish(kIngest, start, status);
}

absl::Status VectorServiceImpl::RunIngest(
    grpc::ServerContext* context, const Principal& caller,
    grpc::ServerReaderWriter<v1::IngestResponse, v1::IngestRequest>* stream) {
  v1::IngestRequest request;
  std::string collection;
  std::string requested_tenant;  // like `collection`, an empty one means the previous one
  uint64_t total = 0;
  uint64_t batches = 0;
  bool ended = false;
  while (stream->Read(&request)) {
    const std::string where = absl::StrCat("batch ", request.sequence());
    if (ended) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": end_of_stream: a message followed the end of the stream"));
    }
    if (request.end_of_stream()) {
      if (!request.records().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": records: the end_of_stream message carries none"));
      }
      ended = true;
      continue;
    }
    if (!request.collection().empty()) collection = request.collection();
    if (collection.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": collection: required"));
    }
    if (!request.tenant().empty()) requested_tenant = request.tenant();
    absl::StatusOr<std::string> tenant =
        gate_->ScopeTenant(caller, requested_tenant, absl::StrCat(where, ": tenant"));
    if (!tenant.ok()) return tenant.status();
    if (absl::Status s = gate_->CheckMessage(context, request, where); !s.ok()) return s;
    if (request.records().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": records: empty"));
    }
    v1::IngestResponse ack;
    ack.set_sequence(request.sequence());
    const uint64_t bytes = request.ByteSizeLong();
    if (!budget_->TryAcquire(bytes)) {
      gate_->metrics().RecordRejection("ingest_backpressure");
      ack.set_retry_after_ms(kRetryAfterMs);
      ack.set_total_upserted(total);
      if (!stream->Write(ack)) return absl::CancelledError("the client went away");
      continue;
    }
    gate_->metrics().SetIngestInflightBytes(budget_->inflight());
    absl::Status s;
    {
      absl::StatusOr<std::vector<Record>> records = RecordsFromProto(request.records());
      s = records.status();
      if (s.ok()) {
        DbHost::Lease lease = gate_->Acquire();
        s = !lease.ok() ? lease.status() : gate_->TimedWrite(request.sync(), [&] {
          return lease->Upsert(collection, *records, {.sync = request.sync(), .tenant = *tenant});
        });
        if (!s.ok()) gate_->metrics().RecordTenantWriteRejection(collection, *tenant, s);
      }
    }
    budget_->Release(bytes);
    gate_->metrics().SetIngestInflightBytes(budget_->inflight());
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat(where, ": ", s.message()));
    const uint64_t n = static_cast<uint64_t>(request.records_size());
    total += n;
    gate_->metrics().RecordIngested(n);
    ++batches;
    ack.set_upserted(n);
    ack.set_total_upserted(total);
    if (!stream->Write(ack)) return absl::CancelledError("the client went away");
  }
  // Read() also ends at a message that does not parse: only the marker tells a complete stream.
  if (!ended && EndMarkerAnnounced(*context)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "end_of_stream: the stream ended without its end marker (a message that could not be "
        "parsed ends it); ",
        batches, " batches (", total, " records) were applied and acknowledged"));
  }
  return absl::OkStatus();
}

}  // namespace shoal::rpc

#include "rpc/vector_service.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "rpc/convert.h"
#include "rpc/status_conversion.h"

namespace shoal::rpc {
namespace {

absl::Status CheckCollectionAndCount(const std::string& collection, int count,
                                     absl::string_view items_field) {
  if (collection.empty()) return absl::InvalidArgumentError("collection: required");
  if (count == 0) return absl::InvalidArgumentError(absl::StrCat(items_field, ": empty"));
  return absl::OkStatus();
}

absl::Status DoUpsert(DB& db, const v1::UpsertRequest& request, v1::UpsertResponse& response) {
  if (absl::Status s =
          CheckCollectionAndCount(request.collection(), request.records_size(), "records");
      !s.ok()) {
    return s;
  }
  std::vector<Record> records;
  records.reserve(request.records_size());
  for (int i = 0; i < request.records_size(); ++i) {
    absl::StatusOr<Record> record =
        RecordFromProto(request.records(i), absl::StrCat("records[", i, "]"));
    if (!record.ok()) return record.status();
    records.push_back(*std::move(record));
  }
  if (absl::Status s = db.Upsert(request.collection(), records, {.sync = request.sync()});
      !s.ok()) {
    return s;
  }
  response.set_upserted(records.size());
  return absl::OkStatus();
}

absl::Status DoGet(DB& db, const v1::GetRequest& request, v1::GetResponse& response) {
  if (absl::Status s = CheckCollectionAndCount(request.collection(), request.keys_size(), "keys");
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::vector<Key>> keys = KeysFromProto(request.keys(), "keys");
  if (!keys.ok()) return keys.status();
  absl::StatusOr<std::vector<std::optional<Record>>> records = db.Get(request.collection(), *keys);
  if (!records.ok()) return records.status();
  for (const std::optional<Record>& record : *records) {
    v1::GetResult* result = response.add_results();
    result->set_found(record.has_value());
    if (record.has_value()) RecordToProto(*record, result->mutable_record());
  }
  return absl::OkStatus();
}

absl::Status DoDelete(DB& db, const v1::DeleteRequest& request, v1::DeleteResponse& response) {
  if (absl::Status s = CheckCollectionAndCount(request.collection(), request.keys_size(), "keys");
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::vector<Key>> keys = KeysFromProto(request.keys(), "keys");
  if (!keys.ok()) return keys.status();
  absl::StatusOr<uint64_t> deleted =
      db.Delete(request.collection(), *keys, {.sync = request.sync()});
  if (!deleted.ok()) return deleted.status();
  response.set_deleted(*deleted);
  return absl::OkStatus();
}

}  // namespace

grpc::Status VectorServiceImpl::Upsert(grpc::ServerContext* /*context*/,
                                       const v1::UpsertRequest* request,
                                       v1::UpsertResponse* response) {
  return ToGrpcStatus(DoUpsert(*db_, *request, *response));
}

grpc::Status VectorServiceImpl::Get(grpc::ServerContext* /*context*/, const v1::GetRequest* request,
                                    v1::GetResponse* response) {
  return ToGrpcStatus(DoGet(*db_, *request, *response));
}

grpc::Status VectorServiceImpl::Delete(grpc::ServerContext* /*context*/,
                                       const v1::DeleteRequest* request,
                                       v1::DeleteResponse* response) {
  return ToGrpcStatus(DoDelete(*db_, *request, *response));
}

}  // namespace shoal::rpc

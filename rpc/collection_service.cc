#include "rpc/collection_service.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rpc/convert.h"
#include "rpc/status_conversion.h"

namespace shoal::rpc {
namespace {

absl::Status RequireName(const std::string& name, absl::string_view field) {
  if (name.empty()) return absl::InvalidArgumentError(std::string(field) + ": required");
  return absl::OkStatus();
}

absl::Status Create(DB& db, const v1::CreateCollectionRequest& request,
                    v1::CreateCollectionResponse& response) {
  if (!request.has_spec()) return absl::InvalidArgumentError("spec: required");
  if (absl::Status s = RequireName(request.spec().name(), "spec.name"); !s.ok()) return s;
  absl::StatusOr<CollectionSpec> spec = CollectionSpecFromProto(request.spec(), "spec");
  if (!spec.ok()) return spec.status();
  if (absl::Status s = db.CreateCollection(*spec); !s.ok()) return s;
  // Report what the DB made of it (index name); if a concurrent drop already removed it, the
  // create still succeeded, so answer with the spec alone.
  absl::StatusOr<CollectionInfo> info = db.DescribeCollection(spec->name);
  if (info.ok()) {
    CollectionInfoToProto(*info, response.mutable_collection());
  } else {
    CollectionSpecToProto(*spec, response.mutable_collection()->mutable_spec());
  }
  return absl::OkStatus();
}

absl::Status List(DB& db, v1::ListCollectionsResponse& response) {
  absl::StatusOr<std::vector<CollectionInfo>> infos = db.ListCollections();
  if (!infos.ok()) return infos.status();
  std::sort(infos->begin(), infos->end(), [](const CollectionInfo& a, const CollectionInfo& b) {
    return a.spec.name < b.spec.name;
  });
  for (const CollectionInfo& info : *infos) {
    CollectionInfoToProto(info, response.add_collections());
  }
  return absl::OkStatus();
}

absl::Status Describe(DB& db, const v1::DescribeCollectionRequest& request,
                      v1::DescribeCollectionResponse& response) {
  if (absl::Status s = RequireName(request.name(), "name"); !s.ok()) return s;
  absl::StatusOr<CollectionInfo> info = db.DescribeCollection(request.name());
  if (!info.ok()) return info.status();
  CollectionInfoToProto(*info, response.mutable_collection());
  return absl::OkStatus();
}

absl::Status Drop(DB& db, const v1::DropCollectionRequest& request) {
  if (absl::Status s = RequireName(request.name(), "name"); !s.ok()) return s;
  return db.DropCollection(request.name());
}

}  // namespace

grpc::Status CollectionServiceImpl::CreateCollection(grpc::ServerContext* /*context*/,
                                                     const v1::CreateCollectionRequest* request,
                                                     v1::CreateCollectionResponse* response) {
  return ToGrpcStatus(Create(*db_, *request, *response));
}

grpc::Status CollectionServiceImpl::ListCollections(grpc::ServerContext* /*context*/,
                                                    const v1::ListCollectionsRequest* /*request*/,
                                                    v1::ListCollectionsResponse* response) {
  return ToGrpcStatus(List(*db_, *response));
}

grpc::Status CollectionServiceImpl::DescribeCollection(grpc::ServerContext* /*context*/,
                                                       const v1::DescribeCollectionRequest* request,
                                                       v1::DescribeCollectionResponse* response) {
  return ToGrpcStatus(Describe(*db_, *request, *response));
}

grpc::Status CollectionServiceImpl::DropCollection(grpc::ServerContext* /*context*/,
                                                   const v1::DropCollectionRequest* request,
                                                   v1::DropCollectionResponse* /*response*/) {
  return ToGrpcStatus(Drop(*db_, *request));
}

}  // namespace shoal::rpc

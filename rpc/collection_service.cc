#include "rpc/collection_service.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rpc/convert.h"

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

// A tenant-bound key sees a collection's shape, not its collection-wide counts (they would
// tell it about other tenants' records); CountByTenant and DescribeTenant give its own.
void HideCountsFromTenant(const Principal& caller, v1::CollectionInfo* info) {
  if (caller.tenant.empty()) return;
  info->set_num_vectors(0);
  info->set_vector_bytes(0);
  info->set_index_ram_bytes(0);
  info->set_unindexed_vectors(0);
}

absl::Status List(DB& db, const Principal& caller, v1::ListCollectionsResponse& response) {
  absl::StatusOr<std::vector<CollectionInfo>> infos = db.ListCollections();
  if (!infos.ok()) return infos.status();
  std::sort(infos->begin(), infos->end(), [](const CollectionInfo& a, const CollectionInfo& b) {
    return a.spec.name < b.spec.name;
  });
  for (const CollectionInfo& info : *infos) {
    v1::CollectionInfo* out = response.add_collections();
    CollectionInfoToProto(info, out);
    HideCountsFromTenant(caller, out);
  }
  return absl::OkStatus();
}

absl::Status Describe(DB& db, const Principal& caller, const v1::DescribeCollectionRequest& request,
                      v1::DescribeCollectionResponse& response) {
  if (absl::Status s = RequireName(request.name(), "name"); !s.ok()) return s;
  absl::StatusOr<CollectionInfo> info = db.DescribeCollection(request.name());
  if (!info.ok()) return info.status();
  CollectionInfoToProto(*info, response.mutable_collection());
  HideCountsFromTenant(caller, response.mutable_collection());
  return absl::OkStatus();
}

absl::Status Drop(DB& db, const v1::DropCollectionRequest& request) {
  if (absl::Status s = RequireName(request.name(), "name"); !s.ok()) return s;
  return db.DropCollection(request.name());
}

// CreateAlias and AlterAlias share their request shape.
template <typename Request>
absl::Status SetAlias(DB& db, const Request& request, bool create) {
  if (absl::Status s = RequireName(request.alias(), "alias"); !s.ok()) return s;
  if (absl::Status s = RequireName(request.collection(), "collection"); !s.ok()) return s;
  return create ? db.CreateAlias(request.alias(), request.collection())
                : db.AlterAlias(request.alias(), request.collection());
}

absl::Status ListAliases(DB& db, const v1::ListAliasesRequest& request,
                         v1::ListAliasesResponse& response) {
  absl::StatusOr<std::vector<AliasInfo>> aliases = db.ListAliases();
  if (!aliases.ok()) return aliases.status();
  for (const AliasInfo& alias : *aliases) {
    if (!request.collection().empty() && alias.collection != request.collection()) continue;
    v1::Alias* out = response.add_aliases();
    out->set_alias(alias.alias);
    out->set_collection(alias.collection);
  }
  return absl::OkStatus();
}

constexpr RpcMethod kCreate{"CollectionService/CreateCollection", Role::kReadWrite};
constexpr RpcMethod kList{"CollectionService/ListCollections", Role::kReadOnly,
                          TenantAccess::kAnyKey};
constexpr RpcMethod kDescribe{"CollectionService/DescribeCollection", Role::kReadOnly,
                              TenantAccess::kAnyKey};
constexpr RpcMethod kDrop{"CollectionService/DropCollection", Role::kReadWrite};
constexpr RpcMethod kCreateAlias{"CollectionService/CreateAlias", Role::kReadWrite};
constexpr RpcMethod kAlterAlias{"CollectionService/AlterAlias", Role::kReadWrite};
constexpr RpcMethod kDropAlias{"CollectionService/DropAlias", Role::kReadWrite};
constexpr RpcMethod kListAliases{"CollectionService/ListAliases", Role::kReadOnly,
                                 TenantAccess::kAnyKey};

}  // namespace

grpc::Status CollectionServiceImpl::CreateCollection(grpc::ServerContext* context,
                                                     const v1::CreateCollectionRequest* request,
                                                     v1::CreateCollectionResponse* response) {
  return gate_->Unary(context, kCreate, *request,
                      [&](DB& db) { return Create(db, *request, *response); });
}

grpc::Status CollectionServiceImpl::ListCollections(grpc::ServerContext* context,
                                                    const v1::ListCollectionsRequest* request,
                                                    v1::ListCollectionsResponse* response) {
  return gate_->Unary(context, kList, *request,
                      [&](DB& db, const Principal& caller) { return List(db, caller, *response); });
}

grpc::Status CollectionServiceImpl::DescribeCollection(grpc::ServerContext* context,
                                                       const v1::DescribeCollectionRequest* request,
                                                       v1::DescribeCollectionResponse* response) {
  return gate_->Unary(context, kDescribe, *request, [&](DB& db, const Principal& caller) {
    return Describe(db, caller, *request, *response);
  });
}

grpc::Status CollectionServiceImpl::DropCollection(grpc::ServerContext* context,
                                                   const v1::DropCollectionRequest* request,
                                                   v1::DropCollectionResponse* /*response*/) {
  return gate_->Unary(context, kDrop, *request, [&](DB& db) { return Drop(db, *request); });
}

grpc::Status CollectionServiceImpl::CreateAlias(grpc::ServerContext* context,
                                                const v1::CreateAliasRequest* request,
                                                v1::CreateAliasResponse* /*response*/) {
  return gate_->Unary(context, kCreateAlias, *request,
                      [&](DB& db) { return SetAlias(db, *request, /*create=*/true); });
}

grpc::Status CollectionServiceImpl::AlterAlias(grpc::ServerContext* context,
                                               const v1::AlterAliasRequest* request,
                                               v1::AlterAliasResponse* /*response*/) {
  return gate_->Unary(context, kAlterAlias, *request,
                      [&](DB& db) { return SetAlias(db, *request, /*create=*/false); });
}

grpc::Status CollectionServiceImpl::DropAlias(grpc::ServerContext* context,
                                              const v1::DropAliasRequest* request,
                                              v1::DropAliasResponse* /*response*/) {
  return gate_->Unary(context, kDropAlias, *request, [&](DB& db) {
    if (absl::Status s = RequireName(request->alias(), "alias"); !s.ok()) return s;
    return db.DropAlias(request->alias());
  });
}

grpc::Status CollectionServiceImpl::ListAliases(grpc::ServerContext* context,
                                                const v1::ListAliasesRequest* request,
                                                v1::ListAliasesResponse* response) {
  return gate_->Unary(context, kListAliases, *request,
                      [&](DB& db) { return rpc::ListAliases(db, *request, *response); });
}

}  // namespace shoal::rpc

#include "rpc/tenant_service.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "rpc/convert.h"

namespace shoal::rpc {
namespace {

absl::Status RequireCollection(const std::string& collection) {
  if (collection.empty()) return absl::InvalidArgumentError("collection: required");
  return absl::OkStatus();
}

absl::Status Create(CallGate& gate, DB& db, const Principal& caller,
                    const v1::CreateTenantRequest& request, v1::CreateTenantResponse& response) {
  if (absl::Status s = RequireCollection(request.collection()); !s.ok()) return s;
  absl::StatusOr<std::string> tenant = gate.TargetTenant(caller, request.tenant(), "tenant");
  if (!tenant.ok()) return tenant.status();
  const TenantSpec spec{.name = *tenant, .quotas = TenantQuotasFromProto(request.quotas())};
  if (absl::Status s = db.CreateTenant(request.collection(), spec); !s.ok()) return s;
  // Report what the DB made of it; if a concurrent drop already removed it, the create still
  // succeeded, so answer with the spec alone.
  absl::StatusOr<TenantInfo> info = db.DescribeTenant(request.collection(), *tenant);
  if (info.ok()) {
    TenantInfoToProto(*info, response.mutable_tenant());
  } else {
    response.mutable_tenant()->set_name(spec.name);
    TenantQuotasToProto(spec.quotas, response.mutable_tenant()->mutable_quotas());
  }
  return absl::OkStatus();
}

// DropTenant and DeleteByTenant: both delete the records a tenant owns and answer how many.
using TenantDeletion = absl::StatusOr<uint64_t> (DB::*)(std::string_view, std::string_view,
                                                        const WriteOptions&);
template <typename Request, typename Response>
absl::Status DeleteTenantRecords(CallGate& gate, DB& db, const Principal& caller,
                                 const Request& request, Response& response,
                                 TenantDeletion deletion) {
  if (absl::Status s = RequireCollection(request.collection()); !s.ok()) return s;
  absl::StatusOr<std::string> tenant = gate.TargetTenant(caller, request.tenant(), "tenant");
  if (!tenant.ok()) return tenant.status();
  absl::StatusOr<uint64_t> deleted;
  if (absl::Status s = gate.TimedWrite(request.sync(),
                                       [&] {
                                         deleted = (db.*deletion)(request.collection(), *tenant,
                                                                  {.sync = request.sync()});
                                         return deleted.status();
                                       });
      !s.ok()) {
    return s;
  }
  response.set_deleted(*deleted);
  return absl::OkStatus();
}

absl::Status Drop(CallGate& gate, DB& db, const Principal& caller,
                  const v1::DropTenantRequest& request, v1::DropTenantResponse& response) {
  return DeleteTenantRecords(gate, db, caller, request, response, &DB::DropTenant);
}

absl::Status List(DB& db, const Principal& caller, const v1::ListTenantsRequest& request,
                  v1::ListTenantsResponse& response) {
  if (absl::Status s = RequireCollection(request.collection()); !s.ok()) return s;
  const uint32_t page_size =
      request.page_size() == 0 ? TenantServiceImpl::kDefaultPageSize : request.page_size();
  if (page_size > TenantServiceImpl::kMaxPageSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size: ", page_size, " is over ", TenantServiceImpl::kMaxPageSize));
  }
  if (!caller.tenant.empty()) {
    // A tenant-bound key lists its own tenant, as one page (empty where it does not exist).
    absl::StatusOr<TenantInfo> own = db.DescribeTenant(request.collection(), caller.tenant);
    if (absl::IsNotFound(own.status())) {
      // Unknown collection stays NOT_FOUND; an unknown tenant is an empty list.
      absl::StatusOr<CollectionInfo> collection = db.DescribeCollection(request.collection());
      return collection.status();
    }
    if (!own.ok()) return own.status();
    if (request.page_token().empty()) TenantInfoToProto(*own, response.add_tenants());
    return absl::OkStatus();
  }
  absl::StatusOr<TenantPage> page =
      db.ListTenants(request.collection(), page_size, request.page_token());
  if (!page.ok()) return page.status();
  for (const TenantInfo& info : page->tenants) TenantInfoToProto(info, response.add_tenants());
  response.set_next_page_token(page->next_page_token);
  return absl::OkStatus();
}

absl::Status Describe(CallGate& gate, DB& db, const Principal& caller,
                      const v1::DescribeTenantRequest& request,
                      v1::DescribeTenantResponse& response) {
  if (absl::Status s = RequireCollection(request.collection()); !s.ok()) return s;
  absl::StatusOr<std::string> tenant = gate.TargetTenant(caller, request.tenant(), "tenant");
  if (!tenant.ok()) return tenant.status();
  absl::StatusOr<TenantInfo> info = db.DescribeTenant(request.collection(), *tenant);
  if (!info.ok()) return info.status();
  TenantInfoToProto(*info, response.mutable_tenant());
  return absl::OkStatus();
}

absl::Status SetQuotas(CallGate& gate, DB& db, const Principal& caller,
                       const v1::SetTenantQuotasRequest& request) {
  if (absl::Status s = RequireCollection(request.collection()); !s.ok()) return s;
  absl::StatusOr<std::string> tenant = gate.TargetTenant(caller, request.tenant(), "tenant");
  if (!tenant.ok()) return tenant.status();
  return db.SetTenantQuotas(request.collection(), *tenant, TenantQuotasFromProto(request.quotas()));
}

absl::Status SetState(CallGate& gate, DB& db, const Principal& caller,
                      const v1::SetTenantStateRequest& request) {
  if (absl::Status s = RequireCollection(request.collection()); !s.ok()) return s;
  absl::StatusOr<std::string> tenant = gate.TargetTenant(caller, request.tenant(), "tenant");
  if (!tenant.ok()) return tenant.status();
  absl::StatusOr<TenantState> state = TenantStateFromProto(request.state(), "state");
  if (!state.ok()) return state.status();
  return db.SetTenantState(request.collection(), *tenant, *state);
}

// Grant and Revoke share their request shape.
template <typename Request>
absl::Status ChangeGrants(CallGate& gate, DB& db, const Principal& caller, const Request& request,
                          bool grant, uint64_t* keys_changed) {
  if (absl::Status s = RequireCollection(request.collection()); !s.ok()) return s;
  absl::StatusOr<std::string> tenant = gate.TargetTenant(caller, request.tenant(), "tenant");
  if (!tenant.ok()) return tenant.status();
  if (request.keys().empty()) return absl::InvalidArgumentError("keys: empty");
  absl::StatusOr<std::vector<Key>> keys = KeysFromProto(request.keys(), "keys");
  if (!keys.ok()) return keys.status();
  const WriteOptions options{.sync = request.sync()};
  if (absl::Status s =
          gate.TimedWrite(request.sync(),
                          [&] {
                            return grant ? db.Grant(request.collection(), *tenant, *keys, options)
                                         : db.Revoke(request.collection(), *tenant, *keys, options);
                          });
      !s.ok()) {
    return s;
  }
  *keys_changed = keys->size();
  return absl::OkStatus();
}

absl::Status ListKeyTenants(DB& db, const v1::ListKeyTenantsRequest& request,
                            v1::ListKeyTenantsResponse& response) {
  if (absl::Status s = RequireCollection(request.collection()); !s.ok()) return s;
  if (!request.has_key()) return absl::InvalidArgumentError("key: required");
  absl::StatusOr<Key> key = KeyFromProto(request.key(), "key");
  if (!key.ok()) return key.status();
  absl::StatusOr<KeyTenants> tenants = db.DescribeKeyTenants(request.collection(), *key);
  if (absl::IsUnimplemented(tenants.status())) {
    // A DB that does not tell the owner apart from grantees: the names alone, owner unset.
    absl::StatusOr<std::vector<std::string>> names = db.ListKeyTenants(request.collection(), *key);
    if (!names.ok()) return names.status();
    for (std::string& tenant : *names) response.add_tenants(std::move(tenant));
    return absl::OkStatus();
  }
  if (!tenants.ok()) return tenants.status();
  if (!tenants->owner.empty()) response.add_tenants(tenants->owner);
  for (std::string& tenant : tenants->grantees) response.add_tenants(std::move(tenant));
  response.set_owner(std::move(tenants->owner));
  return absl::OkStatus();
}

absl::Status Count(CallGate& gate, DB& db, const Principal& caller,
                   const v1::CountByTenantRequest& request, v1::CountByTenantResponse& response) {
  if (absl::Status s = RequireCollection(request.collection()); !s.ok()) return s;
  absl::StatusOr<std::string> tenant = gate.TargetTenant(caller, request.tenant(), "tenant");
  if (!tenant.ok()) return tenant.status();
  absl::StatusOr<uint64_t> count =
      db.CountByTenant(request.collection(), *tenant, request.owned_only());
  if (!count.ok()) return count.status();
  response.set_count(*count);
  return absl::OkStatus();
}

absl::Status DeleteBy(CallGate& gate, DB& db, const Principal& caller,
                      const v1::DeleteByTenantRequest& request,
                      v1::DeleteByTenantResponse& response) {
  return DeleteTenantRecords(gate, db, caller, request, response, &DB::DeleteByTenant);
}

// Tenant administration and sharing act beyond one tenant: a tenant-bound key may not call
// them (kWholeCollection, the default). The per-tenant reads and DeleteByTenant are kScoped.
constexpr RpcMethod kCreate{"TenantService/CreateTenant", Role::kAdmin};
constexpr RpcMethod kDrop{"TenantService/DropTenant", Role::kAdmin};
constexpr RpcMethod kList{"TenantService/ListTenants", Role::kReadOnly, TenantAccess::kScoped};
constexpr RpcMethod kDescribe{"TenantService/DescribeTenant", Role::kReadOnly,
                              TenantAccess::kScoped};
constexpr RpcMethod kSetQuotas{"TenantService/SetTenantQuotas", Role::kAdmin};
constexpr RpcMethod kSetState{"TenantService/SetTenantState", Role::kAdmin};
constexpr RpcMethod kGrant{"TenantService/Grant", Role::kReadWrite};
constexpr RpcMethod kRevoke{"TenantService/Revoke", Role::kReadWrite};
constexpr RpcMethod kListKeyTenants{"TenantService/ListKeyTenants", Role::kReadOnly};
constexpr RpcMethod kCount{"TenantService/CountByTenant", Role::kReadOnly, TenantAccess::kScoped};
constexpr RpcMethod kDeleteBy{"TenantService/DeleteByTenant", Role::kReadWrite,
                              TenantAccess::kScoped};

}  // namespace

grpc::Status TenantServiceImpl::CreateTenant(grpc::ServerContext* context,
                                             const v1::CreateTenantRequest* request,
                                             v1::CreateTenantResponse* response) {
  return gate_->Unary(context, kCreate, *request, [&](DB& db, const Principal& caller) {
    return Create(*gate_, db, caller, *request, *response);
  });
}

grpc::Status TenantServiceImpl::DropTenant(grpc::ServerContext* context,
                                           const v1::DropTenantRequest* request,
                                           v1::DropTenantResponse* response) {
  return gate_->Unary(context, kDrop, *request, [&](DB& db, const Principal& caller) {
    return Drop(*gate_, db, caller, *request, *response);
  });
}

grpc::Status TenantServiceImpl::ListTenants(grpc::ServerContext* context,
                                            const v1::ListTenantsRequest* request,
                                            v1::ListTenantsResponse* response) {
  return gate_->Unary(context, kList, *request, [&](DB& db, const Principal& caller) {
    return List(db, caller, *request, *response);
  });
}

grpc::Status TenantServiceImpl::DescribeTenant(grpc::ServerContext* context,
                                               const v1::DescribeTenantRequest* request,
                                               v1::DescribeTenantResponse* response) {
  return gate_->Unary(context, kDescribe, *request, [&](DB& db, const Principal& caller) {
    return Describe(*gate_, db, caller, *request, *response);
  });
}

grpc::Status TenantServiceImpl::SetTenantQuotas(grpc::ServerContext* context,
                                                const v1::SetTenantQuotasRequest* request,
                                                v1::SetTenantQuotasResponse* /*response*/) {
  return gate_->Unary(context, kSetQuotas, *request, [&](DB& db, const Principal& caller) {
    return SetQuotas(*gate_, db, caller, *request);
  });
}

grpc::Status TenantServiceImpl::SetTenantState(grpc::ServerContext* context,
                                               const v1::SetTenantStateRequest* request,
                                               v1::SetTenantStateResponse* /*response*/) {
  return gate_->Unary(context, kSetState, *request, [&](DB& db, const Principal& caller) {
    return SetState(*gate_, db, caller, *request);
  });
}

grpc::Status TenantServiceImpl::Grant(grpc::ServerContext* context, const v1::GrantRequest* request,
                                      v1::GrantResponse* response) {
  return gate_->Unary(context, kGrant, *request, [&](DB& db, const Principal& caller) {
    uint64_t keys = 0;
    absl::Status s = ChangeGrants(*gate_, db, caller, *request, /*grant=*/true, &keys);
    response->set_keys(keys);
    return s;
  });
}

grpc::Status TenantServiceImpl::Revoke(grpc::ServerContext* context,
                                       const v1::RevokeRequest* request,
                                       v1::RevokeResponse* response) {
  return gate_->Unary(context, kRevoke, *request, [&](DB& db, const Principal& caller) {
    uint64_t keys = 0;
    absl::Status s = ChangeGrants(*gate_, db, caller, *request, /*grant=*/false, &keys);
    response->set_keys(keys);
    return s;
  });
}

grpc::Status TenantServiceImpl::ListKeyTenants(grpc::ServerContext* context,
                                               const v1::ListKeyTenantsRequest* request,
                                               v1::ListKeyTenantsResponse* response) {
  return gate_->Unary(context, kListKeyTenants, *request,
                      [&](DB& db) { return rpc::ListKeyTenants(db, *request, *response); });
}

grpc::Status TenantServiceImpl::CountByTenant(grpc::ServerContext* context,
                                              const v1::CountByTenantRequest* request,
                                              v1::CountByTenantResponse* response) {
  return gate_->Unary(context, kCount, *request, [&](DB& db, const Principal& caller) {
    return Count(*gate_, db, caller, *request, *response);
  });
}

grpc::Status TenantServiceImpl::DeleteByTenant(grpc::ServerContext* context,
                                               const v1::DeleteByTenantRequest* request,
                                               v1::DeleteByTenantResponse* response) {
  return gate_->Unary(context, kDeleteBy, *request, [&](DB& db, const Principal& caller) {
    return DeleteBy(*gate_, db, caller, *request, *response);
  });
}

}  // namespace shoal::rpc

// Client: the TenantService calls (tenants, quotas, state, grants, per-tenant counts).
#include <string>
#include <utility>
#include <vector>

#include "rpc/client/client_internal.h"
#include "rpc/client/shoal_client.h"
#include "rpc/convert.h"

namespace shoal::client {
namespace {

using internal::FromGrpc;
using internal::NewContext;

template <typename Request>
void AddKeys(std::span<const Key> keys, Request& request) {
  request.mutable_keys()->Reserve(static_cast<int>(keys.size()));
  for (const Key& key : keys) rpc::KeyToProto(key, request.add_keys());
}

// One ListKeyTenants call: both the names (ListKeyTenants) and the owner (DescribeKeyTenants)
// come from its response.
grpc::Status CallListKeyTenants(v1::TenantService::Stub& stub, grpc::ClientContext& context,
                                const std::string& collection, const Key& key,
                                v1::ListKeyTenantsResponse& response) {
  v1::ListKeyTenantsRequest request;
  request.set_collection(collection);
  rpc::KeyToProto(key, request.mutable_key());
  return stub.ListKeyTenants(&context, request, &response);
}

}  // namespace

absl::StatusOr<TenantInfo> Client::CreateTenant(const std::string& collection,
                                                const TenantSpec& spec) {
  v1::CreateTenantRequest request;
  request.set_collection(collection);
  request.set_tenant(spec.name);
  rpc::TenantQuotasToProto(spec.quotas, request.mutable_quotas());
  v1::CreateTenantResponse response;
  grpc::Status status =
      stubs_->tenants->CreateTenant(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return rpc::TenantInfoFromProto(response.tenant());
}

absl::StatusOr<uint64_t> Client::DropTenant(const std::string& collection,
                                            const std::string& tenant, bool sync) {
  v1::DropTenantRequest request;
  request.set_collection(collection);
  request.set_tenant(tenant);
  request.set_sync(sync);
  v1::DropTenantResponse response;
  grpc::Status status = stubs_->tenants->DropTenant(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.deleted();
}

absl::StatusOr<TenantPage> Client::ListTenants(const std::string& collection, uint32_t page_size,
                                               const std::string& page_token) {
  v1::ListTenantsRequest request;
  request.set_collection(collection);
  request.set_page_size(page_size);
  request.set_page_token(page_token);
  v1::ListTenantsResponse response;
  grpc::Status status =
      stubs_->tenants->ListTenants(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  TenantPage page;
  for (const v1::TenantInfo& info : response.tenants()) {
    page.tenants.push_back(rpc::TenantInfoFromProto(info));
  }
  page.next_page_token = response.next_page_token();
  return page;
}

absl::StatusOr<TenantInfo> Client::DescribeTenant(const std::string& collection,
                                                  const std::string& tenant) {
  v1::DescribeTenantRequest request;
  request.set_collection(collection);
  request.set_tenant(tenant);
  v1::DescribeTenantResponse response;
  grpc::Status status =
      stubs_->tenants->DescribeTenant(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return rpc::TenantInfoFromProto(response.tenant());
}

absl::Status Client::SetTenantQuotas(const std::string& collection, const std::string& tenant,
                                     const TenantQuotas& quotas) {
  v1::SetTenantQuotasRequest request;
  request.set_collection(collection);
  request.set_tenant(tenant);
  rpc::TenantQuotasToProto(quotas, request.mutable_quotas());
  v1::SetTenantQuotasResponse response;
  return FromGrpc(stubs_->tenants->SetTenantQuotas(NewContext(options_).get(), request, &response));
}

absl::Status Client::SetTenantState(const std::string& collection, const std::string& tenant,
                                    TenantState state) {
  v1::SetTenantStateRequest request;
  request.set_collection(collection);
  request.set_tenant(tenant);
  request.set_state(rpc::TenantStateToProto(state));
  v1::SetTenantStateResponse response;
  return FromGrpc(stubs_->tenants->SetTenantState(NewContext(options_).get(), request, &response));
}

absl::Status Client::Grant(const std::string& collection, const std::string& tenant,
                           std::span<const Key> keys, bool sync) {
  v1::GrantRequest request;
  request.set_collection(collection);
  request.set_tenant(tenant);
  request.set_sync(sync);
  AddKeys(keys, request);
  v1::GrantResponse response;
  return FromGrpc(stubs_->tenants->Grant(NewContext(options_).get(), request, &response));
}

absl::Status Client::Revoke(const std::string& collection, const std::string& tenant,
                            std::span<const Key> keys, bool sync) {
  v1::RevokeRequest request;
  request.set_collection(collection);
  request.set_tenant(tenant);
  request.set_sync(sync);
  AddKeys(keys, request);
  v1::RevokeResponse response;
  return FromGrpc(stubs_->tenants->Revoke(NewContext(options_).get(), request, &response));
}

absl::StatusOr<std::vector<std::string>> Client::ListKeyTenants(const std::string& collection,
                                                                const Key& key) {
  v1::ListKeyTenantsResponse response;
  grpc::Status status =
      CallListKeyTenants(*stubs_->tenants, *NewContext(options_), collection, key, response);
  if (!status.ok()) return FromGrpc(status);
  return std::vector<std::string>(response.tenants().begin(), response.tenants().end());
}

absl::StatusOr<KeyTenants> Client::DescribeKeyTenants(const std::string& collection,
                                                      const Key& key) {
  v1::ListKeyTenantsResponse response;
  grpc::Status status =
      CallListKeyTenants(*stubs_->tenants, *NewContext(options_), collection, key, response);
  if (!status.ok()) return FromGrpc(status);
  KeyTenants out{.owner = response.owner()};
  // The owner, when there is one, is also the first of `tenants`.
  const int first_grantee = out.owner.empty() ? 0 : 1;
  for (int i = first_grantee; i < response.tenants_size(); ++i) {
    out.grantees.push_back(response.tenants(i));
  }
  return out;
}

absl::StatusOr<uint64_t> Client::CountByTenant(const std::string& collection,
                                               const std::string& tenant, bool owned_only) {
  v1::CountByTenantRequest request;
  request.set_collection(collection);
  request.set_tenant(tenant);
  request.set_owned_only(owned_only);
  v1::CountByTenantResponse response;
  grpc::Status status =
      stubs_->tenants->CountByTenant(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.count();
}

absl::StatusOr<uint64_t> Client::DeleteByTenant(const std::string& collection,
                                                const std::string& tenant, bool sync) {
  v1::DeleteByTenantRequest request;
  request.set_collection(collection);
  request.set_tenant(tenant);
  request.set_sync(sync);
  v1::DeleteByTenantResponse response;
  grpc::Status status =
      stubs_->tenants->DeleteByTenant(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.deleted();
}

}  // namespace shoal::client

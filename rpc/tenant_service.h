// gRPC handlers of shoal.v1.TenantService (tenants inside a collection, grants, per-tenant
// counts and deletes): check the request's shape, pin the tenant to the caller's key
// (rpc/tenant_scope.h), call the DB, convert the result; the CallGate does auth, limits and
// metrics. A tenant-bound key may describe, count and delete-by its own tenant only, and
// ListTenants shows it that tenant alone; the rest (create, drop, quotas, state, grant, revoke,
// list a key's tenants) is PERMISSION_DENIED to it. Thread-safe (the DB is); holds no state of
// its own.
#ifndef SHOAL_RPC_TENANT_SERVICE_H_
#define SHOAL_RPC_TENANT_SERVICE_H_

#include "rpc/call_gate.h"
#include "shoal/v1/tenant_service.grpc.pb.h"

namespace shoal::rpc {

class TenantServiceImpl final : public v1::TenantService::Service {
 public:
  // ListTenants' page size when the request leaves it 0, and the largest accepted.
  static constexpr uint32_t kDefaultPageSize = 100;
  static constexpr uint32_t kMaxPageSize = 10000;

  // `gate` is not owned and must outlive the service.
  explicit TenantServiceImpl(CallGate* gate) : gate_(gate) {}

  grpc::Status CreateTenant(grpc::ServerContext* context, const v1::CreateTenantRequest* request,
                            v1::CreateTenantResponse* response) override;
  grpc::Status DropTenant(grpc::ServerContext* context, const v1::DropTenantRequest* request,
                          v1::DropTenantResponse* response) override;
  grpc::Status ListTenants(grpc::ServerContext* context, const v1::ListTenantsRequest* request,
                           v1::ListTenantsResponse* response) override;
  grpc::Status DescribeTenant(grpc::ServerContext* context,
                              const v1::DescribeTenantRequest* request,
                              v1::DescribeTenantResponse* response) override;
  grpc::Status SetTenantQuotas(grpc::ServerContext* context,
                               const v1::SetTenantQuotasRequest* request,
                               v1::SetTenantQuotasResponse* response) override;
  grpc::Status SetTenantState(grpc::ServerContext* context,
                              const v1::SetTenantStateRequest* request,
                              v1::SetTenantStateResponse* response) override;
  grpc::Status Grant(grpc::ServerContext* context, const v1::GrantRequest* request,
                     v1::GrantResponse* response) override;
  grpc::Status Revoke(grpc::ServerContext* context, const v1::RevokeRequest* request,
                      v1::RevokeResponse* response) override;
  grpc::Status ListKeyTenants(grpc::ServerContext* context,
                              const v1::ListKeyTenantsRequest* request,
                              v1::ListKeyTenantsResponse* response) override;
  grpc::Status CountByTenant(grpc::ServerContext* context, const v1::CountByTenantRequest* request,
                             v1::CountByTenantResponse* response) override;
  grpc::Status DeleteByTenant(grpc::ServerContext* context,
                              const v1::DeleteByTenantRequest* request,
                              v1::DeleteByTenantResponse* response) override;

 private:
  CallGate* const gate_;
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_TENANT_SERVICE_H_

// DBImpl's tenant calls (include/shoal/db.h "Tenants"). The engine behind them is
// tenants/ (the per-tenant sub-trees of the index's centroid tree) — not built yet: every call
// is Unimplemented, and so is any read or write that names a tenant.
#include "db/db_impl.h"

namespace shoal {

const char* TenantStateName(TenantState state) {
  switch (state) {
    case TenantState::kActive:
      return "active";
    case TenantState::kInactive:
      return "inactive";
    case TenantState::kOffloaded:
      return "offloaded";
  }
  return "unknown";
}

namespace db {

absl::Status DBImpl::TenantsNotBuiltYet() {
  return absl::UnimplementedError("tenant: multi-tenancy is not built yet");
}

absl::Status DBImpl::CreateTenant(std::string_view, const TenantSpec&) {
  return TenantsNotBuiltYet();
}
absl::StatusOr<uint64_t> DBImpl::DropTenant(std::string_view, std::string_view,
                                            const WriteOptions&) {
  return TenantsNotBuiltYet();
}
absl::StatusOr<TenantPage> DBImpl::ListTenants(std::string_view, uint32_t, std::string_view) {
  return TenantsNotBuiltYet();
}
absl::StatusOr<TenantInfo> DBImpl::DescribeTenant(std::string_view, std::string_view) {
  return TenantsNotBuiltYet();
}
absl::Status DBImpl::SetTenantQuotas(std::string_view, std::string_view, const TenantQuotas&) {
  return TenantsNotBuiltYet();
}
absl::Status DBImpl::SetTenantState(std::string_view, std::string_view, TenantState) {
  return TenantsNotBuiltYet();
}
absl::Status DBImpl::Grant(std::string_view, std::string_view, std::span<const Key>,
                           const WriteOptions&) {
  return TenantsNotBuiltYet();
}
absl::Status DBImpl::Revoke(std::string_view, std::string_view, std::span<const Key>,
                            const WriteOptions&) {
  return TenantsNotBuiltYet();
}
absl::StatusOr<std::vector<std::string>> DBImpl::ListKeyTenants(std::string_view, const Key&) {
  return TenantsNotBuiltYet();
}
absl::StatusOr<uint64_t> DBImpl::CountByTenant(std::string_view, std::string_view, bool) {
  return TenantsNotBuiltYet();
}
absl::StatusOr<uint64_t> DBImpl::DeleteByTenant(std::string_view, std::string_view,
                                                const WriteOptions&) {
  return TenantsNotBuiltYet();
}

}  // namespace db
}  // namespace shoal

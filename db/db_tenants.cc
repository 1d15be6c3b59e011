// DBImpl's tenant calls (include/shoal/db.h "Tenants"): each resolves the collection and hands
// the call to it (db/collection_tenants.cc, db/collection_tenant_admin.cc). Calls that change
// durable state hold change_mu_ shared, like every write (see db_impl.h).
#include "base/status_macros.h"
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

absl::Status DBImpl::CreateTenant(std::string_view collection, const TenantSpec& spec) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  absl::ReaderMutexLock change(&change_mu_);
  return c->CreateTenant(spec);
}

absl::StatusOr<uint64_t> DBImpl::DropTenant(std::string_view collection, std::string_view tenant,
                                            const WriteOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  absl::ReaderMutexLock change(&change_mu_);
  return c->DropTenant(tenant, options);
}

absl::StatusOr<TenantPage> DBImpl::ListTenants(std::string_view collection, uint32_t page_size,
                                               std::string_view page_token) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  return c->ListTenants(page_size, page_token);
}

absl::StatusOr<TenantInfo> DBImpl::DescribeTenant(std::string_view collection,
                                                  std::string_view tenant) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  return c->DescribeTenant(tenant);
}

absl::Status DBImpl::SetTenantQuotas(std::string_view collection, std::string_view tenant,
                                     const TenantQuotas& quotas) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  absl::ReaderMutexLock change(&change_mu_);
  return c->SetTenantQuotas(tenant, quotas);
}

absl::Status DBImpl::SetTenantState(std::string_view collection, std::string_view tenant,
                                    TenantState state) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  absl::ReaderMutexLock change(&change_mu_);
  return c->SetTenantState(tenant, state);
}

absl::Status DBImpl::Grant(std::string_view collection, std::string_view tenant,
                           std::span<const Key> keys, const WriteOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  absl::ReaderMutexLock change(&change_mu_);
  return c->SetAccess(tenant, keys, options, /*grant=*/true);
}

absl::Status DBImpl::Revoke(std::string_view collection, std::string_view tenant,
                            std::span<const Key> keys, const WriteOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  absl::ReaderMutexLock change(&change_mu_);
  return c->SetAccess(tenant, keys, options, /*grant=*/false);
}

absl::StatusOr<KeyTenants> DBImpl::DescribeKeyTenants(std::string_view collection, const Key& key) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  return c->DescribeKeyTenants(key);
}

absl::StatusOr<std::vector<std::string>> DBImpl::ListKeyTenants(std::string_view collection,
                                                                const Key& key) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  return c->ListKeyTenants(key);
}

absl::StatusOr<uint64_t> DBImpl::CountByTenant(std::string_view collection, std::string_view tenant,
                                               bool owned_only) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  return c->CountByTenant(tenant, owned_only);
}

absl::StatusOr<uint64_t> DBImpl::DeleteByTenant(std::string_view collection,
                                                std::string_view tenant,
                                                const WriteOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  absl::ReaderMutexLock change(&change_mu_);
  return c->DeleteByTenant(tenant, options);
}

}  // namespace db
}  // namespace shoal

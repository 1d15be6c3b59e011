#include "rpc/tenant_scope.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace shoal::rpc {
namespace {

absl::Status OtherTenantDenied(const Principal& caller, absl::string_view requested,
                               absl::string_view field) {
  return absl::PermissionDeniedError(
      absl::StrCat(field, ": key \"", caller.name, "\" is bound to tenant \"", caller.tenant,
                   "\" and may not name tenant \"", requested, "\""));
}

}  // namespace

absl::Status CheckTenantAccess(const Principal& caller, TenantAccess access,
                               absl::string_view rpc) {
  if (caller.tenant.empty() || access != TenantAccess::kWholeCollection) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat("key \"", caller.name, "\" is bound to tenant \"",
                                                  caller.tenant, "\"; ", rpc,
                                                  " needs a key not bound to one"));
}

absl::StatusOr<std::string> ScopeTenant(const Principal& caller, absl::string_view requested,
                                        absl::string_view field) {
  if (!caller.tenant.empty()) {
    if (!requested.empty() && requested != caller.tenant) {
      return OtherTenantDenied(caller, requested, field);
    }
    return caller.tenant;
  }
  if (requested.empty() || caller.role == Role::kAdmin) return std::string(requested);
  return absl::PermissionDeniedError(
      absl::StrCat(field, ": key \"", caller.name, "\" is ", RoleName(caller.role),
                   " and not bound to a tenant; only admin keys may name a tenant in a request"));
}

absl::StatusOr<std::string> TargetTenant(const Principal& caller, absl::string_view requested,
                                         absl::string_view field) {
  if (!caller.tenant.empty()) {
    if (!requested.empty() && requested != caller.tenant) {
      return OtherTenantDenied(caller, requested, field);
    }
    return caller.tenant;
  }
  if (requested.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": required"));
  return std::string(requested);
}

}  // namespace shoal::rpc

// The `tenant` command (TenantService): one entry in the command table whose first argument
// picks the operation.
//   tenant create COLLECTION TENANT [--max-vectors N] [--max-bytes N] [--max-qps R]
//   tenant drop COLLECTION TENANT            tenant list COLLECTION [--page-size N]
//   tenant describe COLLECTION [TENANT]      tenant quota COLLECTION TENANT [--max-...]
//   tenant state COLLECTION TENANT active|inactive|offloaded
//   tenant grant|revoke COLLECTION TENANT KEY...
//   tenant tenants-of COLLECTION KEY         tenant count COLLECTION [TENANT] [--owned]
// A TENANT left out means the API key's own tenant (a key bound to one).
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cli/commands_internal.h"

namespace shoal::cli {

namespace v1 = ::shoal::v1;

namespace {

std::string StateText(v1::TenantState state) {
  switch (state) {
    case v1::TENANT_STATE_ACTIVE:
      return "active";
    case v1::TENANT_STATE_INACTIVE:
      return "inactive";
    case v1::TENANT_STATE_OFFLOADED:
      return "offloaded";
    default:
      return "unspecified";
  }
}

absl::StatusOr<v1::TenantState> ParseState(const std::string& text) {
  if (text == "active") return v1::TENANT_STATE_ACTIVE;
  if (text == "inactive") return v1::TENANT_STATE_INACTIVE;
  if (text == "offloaded") return v1::TENANT_STATE_OFFLOADED;
  return UsageError(
      absl::StrCat("state: \"", text, "\" is not one of active, inactive, offloaded"));
}

Table TenantTable(bool single) {
  return Table{.columns = {"tenant", "state", "vectors_owned", "vectors_visible", "bytes_owned",
                           "searches", "search_p50_us", "search_p99_us", "max_vectors", "max_bytes",
                           "max_searches_per_second"},
               .single = single};
}

void AddTenantRow(const v1::TenantInfo& info, Table* t) {
  t->rows.push_back({Cell::Text(info.name()), Cell::Text(StateText(info.state())),
                     Cell::Number(static_cast<uint64_t>(info.vectors_owned())),
                     Cell::Number(static_cast<uint64_t>(info.vectors_visible())),
                     Cell::Bytes(static_cast<uint64_t>(info.bytes_owned())),
                     Cell::Number(static_cast<uint64_t>(info.searches())),
                     Cell::Number(info.search_p50_us()), Cell::Number(info.search_p99_us()),
                     Cell::Number(static_cast<uint64_t>(info.quotas().max_vectors())),
                     Cell::Bytes(static_cast<uint64_t>(info.quotas().max_bytes())),
                     Cell::Number(info.quotas().max_searches_per_second())});
}

absl::StatusOr<v1::TenantQuotas> ParseQuotas(const Args& args) {
  v1::TenantQuotas quotas;
  SHOAL_ASSIGN_OR_RETURN(uint64_t vectors, args.GetUint("max-vectors", 0));
  SHOAL_ASSIGN_OR_RETURN(uint64_t bytes, args.GetUint("max-bytes", 0));
  SHOAL_ASSIGN_OR_RETURN(double qps, args.GetDouble("max-qps", 0));
  quotas.set_max_vectors(vectors);
  quotas.set_max_bytes(bytes);
  quotas.set_max_searches_per_second(qps);
  return quotas;
}

Table Count(const std::string& column, uint64_t n) {
  Table t{.columns = {column}, .single = true};
  t.rows.push_back({Cell::Number(n)});
  return t;
}

// positional: tenant OP COLLECTION [TENANT] ...; "" when TENANT is left out.
std::string TenantArg(const Args& args) {
  return args.positional.size() > 3 ? args.positional[3] : "";
}

absl::StatusOr<Table> Create(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 4, 4));
  v1::CreateTenantRequest request;
  request.set_collection(args.positional[2]);
  request.set_tenant(args.positional[3]);
  SHOAL_ASSIGN_OR_RETURN(*request.mutable_quotas(), ParseQuotas(args));
  v1::CreateTenantResponse response;
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.tenants().CreateTenant(c.Context().get(), request, &response)));
  Table t = TenantTable(/*single=*/true);
  AddTenantRow(response.tenant(), &t);
  return t;
}

absl::StatusOr<Table> Drop(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 4, 4));
  v1::DropTenantRequest request;
  request.set_collection(args.positional[2]);
  request.set_tenant(args.positional[3]);
  request.set_sync(args.Has("sync"));
  v1::DropTenantResponse response;
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.tenants().DropTenant(c.Context().get(), request, &response)));
  return Count("deleted", response.deleted());
}

// Every page (or, with --page-token, that page only).
absl::StatusOr<Table> List(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 3, 3));
  SHOAL_ASSIGN_OR_RETURN(uint64_t page_size, args.GetUint("page-size", 0, 10000));
  v1::ListTenantsRequest request;
  request.set_collection(args.positional[2]);
  request.set_page_size(static_cast<uint32_t>(page_size));
  request.set_page_token(args.Get("page-token", ""));
  Table t = TenantTable(/*single=*/false);
  for (;;) {
    v1::ListTenantsResponse response;
    SHOAL_RETURN_IF_ERROR(FromGrpc(c.tenants().ListTenants(c.Context().get(), request, &response)));
    for (const v1::TenantInfo& info : response.tenants()) AddTenantRow(info, &t);
    if (response.next_page_token().empty() || args.Has("page-token")) break;
    request.set_page_token(response.next_page_token());
  }
  return t;
}

absl::StatusOr<Table> Describe(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 3, 4));
  v1::DescribeTenantRequest request;
  request.set_collection(args.positional[2]);
  request.set_tenant(TenantArg(args));
  v1::DescribeTenantResponse response;
  SHOAL_RETURN_IF_ERROR(
      FromGrpc(c.tenants().DescribeTenant(c.Context().get(), request, &response)));
  Table t = TenantTable(/*single=*/true);
  AddTenantRow(response.tenant(), &t);
  return t;
}

absl::StatusOr<Table> Quota(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 4, 4));
  v1::SetTenantQuotasRequest request;
  request.set_collection(args.positional[2]);
  request.set_tenant(args.positional[3]);
  SHOAL_ASSIGN_OR_RETURN(*request.mutable_quotas(), ParseQuotas(args));
  v1::SetTenantQuotasResponse response;
  SHOAL_RETURN_IF_ERROR(
      FromGrpc(c.tenants().SetTenantQuotas(c.Context().get(), request, &response)));
  return Describe(c, args);
}

absl::StatusOr<Table> State(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 5, 5));
  v1::SetTenantStateRequest request;
  request.set_collection(args.positional[2]);
  request.set_tenant(args.positional[3]);
  SHOAL_ASSIGN_OR_RETURN(v1::TenantState state, ParseState(args.positional[4]));
  request.set_state(state);
  v1::SetTenantStateResponse response;
  SHOAL_RETURN_IF_ERROR(
      FromGrpc(c.tenants().SetTenantState(c.Context().get(), request, &response)));
  Table t{.columns = {"tenant", "state"}, .single = true};
  t.rows.push_back({Cell::Text(args.positional[3]), Cell::Text(args.positional[4])});
  return t;
}

template <typename Request>
void FillGrant(const Args& args, Request& request) {
  request.set_collection(args.positional[2]);
  request.set_tenant(args.positional[3]);
  request.set_sync(args.Has("sync"));
  for (size_t i = 4; i < args.positional.size(); ++i) {
    *request.add_keys() = ParseKey(args.positional[i]);
  }
}

absl::StatusOr<Table> GrantOrRevoke(const Connection& c, const Args& args, bool grant) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 5, SIZE_MAX));
  uint64_t keys = 0;
  if (grant) {
    v1::GrantRequest request;
    FillGrant(args, request);
    v1::GrantResponse response;
    SHOAL_RETURN_IF_ERROR(FromGrpc(c.tenants().Grant(c.Context().get(), request, &response)));
    keys = response.keys();
  } else {
    v1::RevokeRequest request;
    FillGrant(args, request);
    v1::RevokeResponse response;
    SHOAL_RETURN_IF_ERROR(FromGrpc(c.tenants().Revoke(c.Context().get(), request, &response)));
    keys = response.keys();
  }
  return Count(grant ? "granted" : "revoked", keys);
}

absl::StatusOr<Table> TenantsOf(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 4, 4));
  v1::ListKeyTenantsRequest request;
  request.set_collection(args.positional[2]);
  *request.mutable_key() = ParseKey(args.positional[3]);
  v1::ListKeyTenantsResponse response;
  SHOAL_RETURN_IF_ERROR(
      FromGrpc(c.tenants().ListKeyTenants(c.Context().get(), request, &response)));
  Table t{.columns = {"tenant", "owner"}};
  for (int i = 0; i < response.tenants_size(); ++i) {
    t.rows.push_back({Cell::Text(response.tenants(i)), Cell::Bool(i == 0)});
  }
  return t;
}

absl::StatusOr<Table> CountBy(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 3, 4));
  v1::CountByTenantRequest request;
  request.set_collection(args.positional[2]);
  request.set_tenant(TenantArg(args));
  request.set_owned_only(args.Has("owned"));
  v1::CountByTenantResponse response;
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.tenants().CountByTenant(c.Context().get(), request, &response)));
  return Count(args.Has("owned") ? "owned" : "visible", response.count());
}

}  // namespace

absl::StatusOr<Table> Tenant(const Connection& c, const Args& args) {
  if (args.positional.size() < 3) return absl::InvalidArgumentError(kUsageError);
  const std::string& op = args.positional[1];
  if (op == "create") return Create(c, args);
  if (op == "drop") return Drop(c, args);
  if (op == "list") return List(c, args);
  if (op == "describe") return Describe(c, args);
  if (op == "quota") return Quota(c, args);
  if (op == "state") return State(c, args);
  if (op == "grant") return GrantOrRevoke(c, args, /*grant=*/true);
  if (op == "revoke") return GrantOrRevoke(c, args, /*grant=*/false);
  if (op == "tenants-of") return TenantsOf(c, args);
  if (op == "count") return CountBy(c, args);
  return UsageError(absl::StrCat("tenant: unknown operation \"", op,
                                 "\" (create, drop, list, describe, quota, state, grant, revoke, "
                                 "tenants-of, count)"));
}

}  // namespace shoal::cli

// Which tenant an RPC acts for, decided from the caller's API key and the request body.
//
// The tenant of a call comes from the authenticated caller (DESIGN.md §5): a key bound to a
// tenant (Principal::tenant, key-file "tenant=T") only ever sees and changes that tenant, so
// its requests are pinned to it whatever their body says; a body naming another tenant is
// PERMISSION_DENIED naming the field. Of the keys that are not bound, only admin keys may name
// a tenant in the body (read-write and read-only keys see every record already, but may not
// act as a tenant: owning records, spending its quotas).
//
//   SHOAL_ASSIGN_OR_RETURN(std::string tenant,
//                          ScopeTenant(caller, request.tenant(), "tenant"));
//   db.Search(request.collection(), queries, {.k = 10, .tenant = tenant});
//
// Every function is stateless and thread-safe. Messages name the key by its NAME, never the
// key itself.
#ifndef SHOAL_RPC_TENANT_SCOPE_H_
#define SHOAL_RPC_TENANT_SCOPE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rpc/api_keys.h"

namespace shoal::rpc {

// How an RPC treats a tenant-bound key (CallGate checks it before the handler runs).
enum class TenantAccess {
  // Acts on a whole collection or the server (drop a collection, build an index, snapshot,
  // restore, compact, aliases, grants): a tenant-bound key is PERMISSION_DENIED.
  kWholeCollection,
  // Reads no record and no tenant's data (list / describe collections): any key.
  kAnyKey,
  // Names its tenant in the body; the handler pins it with ScopeTenant or TargetTenant.
  kScoped,
};

// PERMISSION_DENIED for a tenant-bound `caller` when `access` is kWholeCollection, naming
// the key, its tenant and the RPC (`rpc`, e.g. "CollectionService/DropCollection").
absl::Status CheckTenantAccess(const Principal& caller, TenantAccess access, absl::string_view rpc);

// For record RPCs (Upsert, Get, Delete, Search, Ingest): the tenant the call acts for, ""
// = none (every record). `requested` is the body's tenant, `field` its path in messages
// ("tenant", "searches[2].tenant").
//   bound key:  "" or its own tenant -> its own; any other -> PERMISSION_DENIED
//   admin key:  `requested` as it is
//   other keys: "" -> ""; a tenant -> PERMISSION_DENIED
absl::StatusOr<std::string> ScopeTenant(const Principal& caller, absl::string_view requested,
                                        absl::string_view field);

// For TenantService RPCs, whose body names the tenant they act on:
//   bound key:  "" or its own tenant -> its own; any other -> PERMISSION_DENIED
//   other keys: "" -> INVALID_ARGUMENT "<field>: required"; a tenant -> it (the RPC's role
//               decides who may call it)
absl::StatusOr<std::string> TargetTenant(const Principal& caller, absl::string_view requested,
                                         absl::string_view field);

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_TENANT_SCOPE_H_

// API keys: who may call what. Loaded once from shoald's --key-file.
//
// Key file: one key per line, "ROLE KEY [NAME] [tenant=T]"; blank lines and lines starting
// with '#' are ignored. ROLE is admin, read-write or read-only; KEY is 16..256 printable ASCII
// characters without spaces; NAME ([A-Za-z0-9_.-]{1,64}, default "key<LINE>") identifies the
// key in logs, metrics and rate limits, so the secret itself never appears there.
// tenant=T binds a read-write or read-only key to tenant T (a tenant name,
// [A-Za-z_][A-Za-z0-9_-]{0,63}) in every collection: the key only ever sees and changes T's
// records, whatever a request names (rpc/tenant_scope.h). Admin keys cannot be bound.
//
//   # role       key                               name         tenant
//   admin        3f9c2a...e1                       ops
//   read-write   8b1d44...90                       ingest
//   read-only    c07e5a...2b                       dashboards
//   read-write   5e77a0...4c                       acme-app     tenant=acme
//
// Clients send the key as gRPC metadata "authorization: Bearer KEY" (or "x-api-key: KEY").
// Every configured key is compared with the presented one in time that does not depend on
// where they differ.
//
// Thread safety: immutable after Load; all methods are const and thread-safe.
#ifndef SHOAL_RPC_API_KEYS_H_
#define SHOAL_RPC_API_KEYS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shoal::rpc {

// What a key may do; each role includes the ones before it.
enum class Role { kReadOnly = 0, kReadWrite = 1, kAdmin = 2 };

// "read-only", "read-write", "admin".
const char* RoleName(Role role);

// Who made a call.
struct Principal {
  std::string name;  // the key's NAME ("anonymous" when auth is off)
  Role role = Role::kAdmin;
  std::string tenant;  // the tenant the key is bound to; "" = not bound
};

class ApiKeys {
 public:
  // Parses the key file's text. INVALID_ARGUMENT names the line: "line 3: unknown role ...".
  // At least one key is required; duplicate keys or names are rejected.
  static absl::StatusOr<ApiKeys> Parse(absl::string_view text);
  // Reads and parses `path` (NOT_FOUND / PERMISSION_DENIED when unreadable).
  static absl::StatusOr<ApiKeys> Load(const std::string& path);

  // The principal of `presented` (the raw key), or UNAUTHENTICATED.
  absl::StatusOr<Principal> Authenticate(absl::string_view presented) const;

  size_t size() const { return keys_.size(); }

 private:
  struct Entry {
    std::string key;
    Principal principal;
  };
  std::vector<Entry> keys_;
};

// The key a client sent in metadata values: "Bearer KEY" from `authorization`, else the
// `x-api-key` value. Empty when neither is present.
absl::string_view PresentedKey(absl::string_view authorization, absl::string_view x_api_key);

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_API_KEYS_H_

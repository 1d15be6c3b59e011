// ConsoleApi: the small HTTP/JSON API behind shoald's web console, independent of the HTTP
// server that carries it (rpc/console/console_server.h), so tests call it directly.
//
//   ConsoleApi api(&gate, &shelf, &builds);
//   HttpResponse r = api.Handle({.method = "GET", .path = "/api/collections",
//                                .authorization = "Bearer KEY"});
//
// Every call is admitted by the server's CallGate, exactly as an RPC: the API key (header
// "Authorization: Bearer KEY" or "X-Api-Key: KEY"), the role, the rate limit and the message
// size; then it gets a DB lease and its latency is recorded as method "Console/<Op>". Writes go
// through the same DB calls, and so the same validation, as the gRPC handlers. Roles are those
// of the matching RPCs, and so is what a tenant-bound key ("ROLE KEY NAME tenant=T") may do:
// "any" routes answer every key alike, "scoped" ones only ever show its own tenant T (records T
// sees, T's own tenant stats, the cache partitions of T), "none" refuse it (PERMISSION_DENIED):
//
//   method path                                  role        bound key
//   GET    /api/session                          read-only   any     who am I (name, role, tenant)
//   GET    /api/collections                      read-only   any     every CollectionInfo (+ the
//                                                                    bound tenant's counts)
//   POST   /api/collections                      read-write  none    create {name, dimension,
//   metric} GET    /api/collections/NAME                 read-only   any     one CollectionInfo
//   DELETE /api/collections/NAME                 read-write  none    drop
//   POST   /api/collections/NAME/get             read-only   scoped  {keys} -> records (or null)
//   POST   /api/collections/NAME/browse          read-only   scoped  {filter?, near?, limit?,
//                                                                    page_token?} -> records
//   POST   /api/collections/NAME/search          read-only   scoped  {vector | key, k?, filter?,
//                                                                    max_postings?} -> hits
//   POST   /api/collections/NAME/build           admin       none    {spec} -> the started build
//   GET    /api/builds                           read-only   none    console builds, progress
//   GET    /api/snapshots                        admin       none    every snapshot
//   POST   /api/snapshots                        admin       none    create {name?}
//   POST   /api/snapshots/NAME/restore           admin       none    restore (replaces the DB)
//   GET    /api/metrics                          read-only   any     MetricsSample (not recorded)
//   GET    /api/collections/NAME/tenants         read-only   scoped  tenants (a bound key: its own)
//   GET    /api/caches                           read-only   scoped  every cache (a bound key: its
//                                                                    partitions' entries, bytes)
//   GET    /api/caches/NAME                      read-only   scoped  stats and policies (a bound
//                                                                    key: its partitions only)
//   POST   /api/caches/NAME/policy               admin       none    {category, policy} -> policy
//
// The record routes take an optional "tenant" in the body, pinned as gRPC pins it
// (rpc/tenant_scope.h): a bound key gets its own whatever it names, an admin key the one it
// names, other keys none.
//
// Answers are JSON (rpc/console/console_json.h); an error is {"error": {code, message}} with
// the HTTP status of its canonical code (401 unknown key, 403 role, 400 bad field, 404, ...).
// No answer ever contains an API key.
//
// Other web sites cannot drive the console through a user's browser: a POST must carry
// "Content-Type: application/json" (which a cross-site page can only send after a CORS
// preflight, never granted here), a request with an Origin must come from the console's own
// origin, and without API keys the Host must be an IP address or "localhost" (a DNS-rebinding
// page reaches 127.0.0.1 under a name of its own). Clients that are not browsers send no Origin.
// Thread safety: thread-safe; holds no per-call state.
#ifndef SHOAL_RPC_CONSOLE_CONSOLE_API_H_
#define SHOAL_RPC_CONSOLE_CONSOLE_API_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rpc/call_gate.h"
#include "rpc/console/console_json.h"
#include "rpc/console/index_builds.h"
#include "rpc/snapshot_shelf.h"

namespace shoal::rpc::console {

struct HttpRequest {
  std::string method;  // "GET", "POST", "DELETE"
  std::string path;    // decoded, without the query string: "/api/collections/fashion"
  std::string body;
  std::string authorization;  // header values; "" when absent
  std::string x_api_key;
  std::string host;
  std::string origin;
  std::string content_type;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

class ConsoleApi {
 public:
  // None is owned; all must outlive the API.
  ConsoleApi(CallGate* gate, const SnapshotShelf* shelf, IndexBuilds* builds)
      : gate_(gate), shelf_(shelf), builds_(builds) {}

  // Answers one request to a path under /api/ (404 for other paths).
  HttpResponse Handle(const HttpRequest& request);

 private:
  struct Call;
  struct Route;
  using Handler = absl::StatusOr<Json> (ConsoleApi::*)(Call& call);

  static const std::vector<Route>& Routes();
  // The cross-site checks above.
  absl::Status CheckBrowserOrigin(const HttpRequest& request) const;
  absl::StatusOr<Json> Dispatch(const Route& route, Call& call);

  // console_api.cc
  absl::StatusOr<Json> Session(Call& call);
  absl::StatusOr<Json> ListCollections(Call& call);
  absl::StatusOr<Json> CreateCollection(Call& call);
  absl::StatusOr<Json> DescribeCollection(Call& call);
  absl::StatusOr<Json> DropCollection(Call& call);
  absl::StatusOr<Json> ListTenants(Call& call);
  // console_records.cc
  absl::StatusOr<Json> GetRecords(Call& call);
  absl::StatusOr<Json> Browse(Call& call);
  absl::StatusOr<Json> Search(Call& call);
  // The tenant a record route acts for: the body's optional "tenant", pinned by ScopeTenant.
  absl::StatusOr<std::string> RecordTenant(Call& call);
  // console_caches.cc
  absl::StatusOr<Json> ListCaches(Call& call);
  absl::StatusOr<Json> DescribeCache(Call& call);
  absl::StatusOr<Json> SetCachePolicy(Call& call);
  // console_admin.cc
  absl::StatusOr<Json> BuildIndex(Call& call);
  absl::StatusOr<Json> ListBuilds(Call& call);
  absl::StatusOr<Json> ListSnapshots(Call& call);
  absl::StatusOr<Json> CreateSnapshot(Call& call);
  absl::StatusOr<Json> RestoreSnapshot(Call& call);
  absl::StatusOr<Json> Metrics(Call& call);

  CallGate* const gate_;
  const SnapshotShelf* const shelf_;
  IndexBuilds* const builds_;
};

}  // namespace shoal::rpc::console

#endif  // SHOAL_RPC_CONSOLE_CONSOLE_API_H_

// CallGate: what every shoal.v1 handler does around its own work, in one place:
//   1. authenticate the API key from the call's metadata (when the server has keys)
//   2. check the key's role against the RPC's (read-only < read-write < admin), and refuse a
//      tenant-bound key an RPC that acts on a whole collection (rpc/tenant_scope.h)
//   3. take a token from the key's rate-limit bucket
//   4. refuse a request message above --max-message-bytes, and a call whose deadline passed
//   5. lend the DB (DbHost::Lease) to the handler's body
//   6. convert the status (ToGrpcStatus) and record the latency by method and code
//
//   grpc::Status SearchServiceImpl::Search(grpc::ServerContext* context, const Req* request,
//                                          Resp* response) {
//     return gate_->Unary(context, kSearch, *request,
//                         [&](DB& db) { return DoSearch(db, *request, *response); });
//   }
//
// A body may also take the caller, `(DB& db, const Principal& caller)`, to pin the request's
// tenant with ScopeTenant / TargetTenant (rpc/tenant_scope.h).
//
// Streams call Admit once, then CheckMessage / Acquire per message, and Finish at the end (a
// stream of independent requests: AdmitMessage and Finish per message).
// Thread safety: thread-safe; the gate holds no per-call state.
#ifndef SHOAL_RPC_CALL_GATE_H_
#define SHOAL_RPC_CALL_GATE_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <cstddef>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "rpc/api_keys.h"
#include "rpc/db_host.h"
#include "rpc/metrics.h"
#include "rpc/rate_limiter.h"
#include "rpc/tenant_scope.h"
#include "shoal/db.h"

namespace shoal::rpc {

// An RPC as the gate sees it: its name in metrics ("SearchService/Search"), the least role
// that may call it, and what a tenant-bound key may do with it (by default: nothing).
struct RpcMethod {
  const char* name;
  Role role;
  TenantAccess tenant_access = TenantAccess::kWholeCollection;
};

class CallGate {
 public:
  // `keys` may be null (authentication off: every caller is an admin named "anonymous").
  // None is owned; all must outlive the gate.
  CallGate(const ApiKeys* keys, RateLimiter* limiter, ServerMetrics* metrics, DbHost* host,
           size_t max_message_bytes)
      : keys_(keys),
        limiter_(limiter),
        metrics_(metrics),
        host_(host),
        max_message_bytes_(max_message_bytes) {}

  // Steps 1-6 for a unary RPC; `body` is called as absl::Status(DB&) or
  // absl::Status(DB&, const Principal&).
  template <typename Body>
  grpc::Status Unary(grpc::ServerContext* context, const RpcMethod& method,
                     const google::protobuf::Message& request, Body&& body) {
    const absl::Time start = absl::Now();
    absl::StatusOr<Principal> caller = Admit(context, method);
    absl::Status status = caller.status();
    if (status.ok()) status = CheckMessage(context, request, "request");
    if (status.ok()) {
      DbHost::Lease lease = host_->Acquire();
      if (!lease.ok()) {
        status = lease.status();
      } else if constexpr (std::is_invocable_v<Body&, DB&, const Principal&>) {
        status = body(*lease, *caller);
      } else {
        status = body(*lease);
      }
    }
    return Finish(method, start, status);
  }

  // Steps 1-3: the caller, or UNAUTHENTICATED / PERMISSION_DENIED / RESOURCE_EXHAUSTED.
  absl::StatusOr<Principal> Admit(grpc::ServerContext* context, const RpcMethod& method);
  // Steps 1-3 for a caller that presented these credentials (the values of an "authorization"
  // and an "x-api-key" header or metadata entry; "" when absent). Other transports than gRPC
  // (the web console) admit their calls through this, by the same rules.
  absl::StatusOr<Principal> AdmitPresented(absl::string_view authorization,
                                           absl::string_view x_api_key, const RpcMethod& method);
  // Step 3 again for one message of a stream whose every message is its own request
  // (SearchStream): RESOURCE_EXHAUSTED when the caller's rate-limit bucket is empty.
  absl::Status AdmitMessage(const Principal& caller);
  // ScopeTenant / TargetTenant (rpc/tenant_scope.h), counting a refusal in the rejection
  // metrics as "tenant_denied".
  absl::StatusOr<std::string> ScopeTenant(const Principal& caller, absl::string_view requested,
                                          absl::string_view field);
  absl::StatusOr<std::string> TargetTenant(const Principal& caller, absl::string_view requested,
                                           absl::string_view field);
  // Step 4 for one message; `what` names it in the error ("request", "message 3").
  absl::Status CheckMessage(grpc::ServerContext* context, const google::protobuf::Message& message,
                            const std::string& what);
  // The size half of step 4, for a request of `bytes` in any encoding.
  absl::Status CheckSize(size_t bytes, const std::string& what);
  // DEADLINE_EXCEEDED / CANCELLED once the client's deadline passed or it went away.
  absl::Status CheckDeadline(grpc::ServerContext* context);
  // Step 6.
  grpc::Status Finish(const RpcMethod& method, absl::Time start, const absl::Status& status);

  // Whether callers must present an API key.
  bool authenticates() const { return keys_ != nullptr; }
  DbHost::Lease Acquire() { return host_->Acquire(); }
  DbHost* host() { return host_; }
  ServerMetrics& metrics() { return *metrics_; }

  // Times `write` (absl::Status()) into the WAL-sync histogram when `sync` is set.
  template <typename Write>
  absl::Status TimedWrite(bool sync, Write&& write) {
    if (!sync) return write();
    const absl::Time start = absl::Now();
    absl::Status status = write();
    if (status.ok()) metrics_->RecordWalSync(absl::ToDoubleSeconds(absl::Now() - start));
    return status;
  }

 private:
  const ApiKeys* const keys_;
  RateLimiter* const limiter_;
  ServerMetrics* const metrics_;
  DbHost* const host_;
  const size_t max_message_bytes_;
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_CALL_GATE_H_

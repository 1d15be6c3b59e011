// Shoal's gRPC server: serves a DB through shoal.v1's services (collections, vectors, search,
// tenants, admin), grpc.health.v1 and (when grpc++ reflection is available) server reflection, with
// API keys, TLS, rate limits and Prometheus metrics as configured. Used by shoald and, in-process,
// by tests.
//
//   ServerOptions options;
//   options.listen_address = "127.0.0.1:0";
//   options.key_file = "/etc/shoal/keys";          // optional: API keys (rpc/api_keys.h)
//   SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<DbHost> host, DbHost::Open("/data", {}));
//   SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Start(host.get(), options));
//   std::cout << server->address() << "\n";   // the port actually bound
//   ...
//   server->Shutdown(absl::Seconds(5));          // health NOT_SERVING, drain, stop
//
// Thread safety: all methods may be called from any thread; Shutdown is idempotent.
#ifndef SHOAL_RPC_SERVER_H_
#define SHOAL_RPC_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "rpc/db_host.h"
#include "shoal/db.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace prometheus {
class Collectable;
}  // namespace prometheus

namespace shoal::v1 {
class GetClusterResponse;  // shoal/v1/admin_service.pb.h
}  // namespace shoal::v1

namespace shoal::rpc {

namespace console {
class ConsoleApi;
class ConsoleServer;
class IndexBuilds;
}  // namespace console

class AdminServiceImpl;
class CacheServiceImpl;
class ApiKeys;
class CallGate;
class CollectionServiceImpl;
class IngestBudget;
class RateLimiter;
class SearchServiceImpl;
class SnapshotShelf;
class ServerMetrics;
class TenantServiceImpl;
class VectorServiceImpl;

struct ServerOptions {
  // HOST:PORT; port 0 lets the OS pick (read it back with Server::port()). Or unix:PATH, a
  // Unix-domain socket (this machine's clients only; cheaper than loopback TCP), which the
  // server creates and removes again when it shuts down.
  std::string listen_address = "127.0.0.1:50051";
  // More addresses served alike, e.g. unix:PATH for local clients beside a TCP listen_address.
  std::vector<std::string> more_listen_addresses;
  // API key file (see rpc/api_keys.h); empty = no authentication (every caller is admin).
  std::string key_file;
  // Without a key file only loopback addresses may be bound, unless this is set.
  bool allow_remote = false;
  // PEM files; both set = TLS, both empty = plaintext.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Largest request or response message, in bytes. Requests up to twice this reach the
  // handlers, which refuse them with a message naming the limit (and count them in metrics);
  // gRPC itself refuses larger ones. Both are RESOURCE_EXHAUSTED.
  int max_message_bytes = 64 << 20;
  // Per-key token bucket (requests per second, burst); 0 = off.
  double rate_limit_rps = 0;
  double rate_limit_burst = 0;
  // Bytes of Ingest batches applied at once over all streams before clients are told to back
  // off.
  uint64_t ingest_inflight_bytes = 256ull << 20;
  // HOST:PORT of the Prometheus endpoint (GET /metrics only); empty = not served.
  std::string metrics_listen;
  // Where Snapshot writes and Restore reads snapshots (by name only); empty = off.
  std::string snapshot_dir;
  // HOST:PORT of the web console (rpc/console/: a page and its JSON API, with the same keys,
  // roles, limits and metrics as the gRPC services); empty = not served. Like the gRPC
  // address, only loopback without a key file (or allow_remote).
  std::string console_listen;
  // Cluster mode: fills AdminService.GetCluster's answer (shoald_main.cc sets it); unset = a
  // single node (cluster_mode false).
  std::function<void(v1::GetClusterResponse*)> cluster_status;
  // Cluster mode: makes AdminService.MoveShard's move; unset = FAILED_PRECONDITION.
  std::function<absl::StatusOr<int64_t>(const std::string&, uint32_t, const std::string&,
                                        const std::string&)>
      cluster_move;
  // More series for the metrics endpoint (cluster mode: rpc/cluster_metrics.h).
  std::vector<std::shared_ptr<prometheus::Collectable>> extra_metrics;
};

class Server {
 public:
  // Binds and starts serving `host`'s DB; `host` is not owned and must outlive the Server;
  // health reports SERVING when this returns. Errors: INVALID_ARGUMENT (bad address, message
  // size, key file, TLS files), PERMISSION_DENIED (non-loopback address without a key file or
  // allow_remote), UNAVAILABLE (bind failed, or a server already listens on a unix:PATH).
  static absl::StatusOr<std::unique_ptr<Server>> Start(DbHost* host, const ServerOptions& options);
  // As above for a DB that is not owned (Restore is then FAILED_PRECONDITION).
  static absl::StatusOr<std::unique_ptr<Server>> Start(DB* db, const ServerOptions& options);

  // Shuts down with no grace period if Shutdown was not called.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // listen_address as bound: "host:port" (the OS-chosen port when 0 was asked for) or
  // "unix:PATH"; port() is 0 for a Unix socket.
  const std::string& address() const { return addresses_.front(); }
  int port() const { return port_; }
  // Every address served, listen_address first, then more_listen_addresses in order.
  const std::vector<std::string>& addresses() const { return addresses_; }
  // The metrics endpoint's port; 0 when not served.
  int metrics_port() const;
  // The web console's port; 0 when not served.
  int console_port() const;

  // Reports NOT_SERVING (overall and for every service) through grpc.health.v1 while still
  // answering RPCs, so load balancers drain before Shutdown. Idempotent.
  void SetNotServing();

  // SetNotServing, stop accepting RPCs, let in-flight ones finish for up to `grace`, then
  // cancel the rest and return once every handler has returned (the DB is then unused).
  // gRPC also waits for client connections and streams to close: an open grpc.health.v1
  // Watch stream, or an idle client that is not polling (e.g. a C++ synchronous client
  // between calls, which never sees the GOAWAY), holds the shutdown for the whole grace.
  // Idempotent: a concurrent or later call returns once the first one has finished.
  void Shutdown(absl::Duration grace);

 private:
  Server();
  absl::Status Init(DbHost* host, const ServerOptions& options);
  absl::Status StartConsole(const ServerOptions& options);
  void StopConsole();

  std::unique_ptr<DbHost> owned_host_;  // Start(DB*) only
  std::unique_ptr<ApiKeys> keys_;
  std::unique_ptr<RateLimiter> limiter_;
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<IngestBudget> budget_;
  std::unique_ptr<CallGate> gate_;
  std::unique_ptr<CollectionServiceImpl> collections_;
  std::unique_ptr<VectorServiceImpl> vectors_;
  std::unique_ptr<SearchServiceImpl> search_;
  std::unique_ptr<AdminServiceImpl> admin_;
  std::unique_ptr<CacheServiceImpl> caches_;
  std::unique_ptr<TenantServiceImpl> tenants_;
  std::unique_ptr<grpc::Server> server_;
  // Declared after the gate and the services: destroyed (stopped) before them.
  std::unique_ptr<SnapshotShelf> console_shelf_;
  std::unique_ptr<console::IndexBuilds> console_builds_;
  std::unique_ptr<console::ConsoleApi> console_api_;
  std::unique_ptr<console::ConsoleServer> console_;
  std::vector<std::string> addresses_;
  int port_ = 0;

  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_SERVER_H_

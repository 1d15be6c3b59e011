// Shoal's gRPC server: serves a DB through shoal.v1's services, grpc.health.v1 and (when grpc++
// reflection is available) server reflection. Used by shoald and, in-process, by tests.
//
//   ServerOptions options;
//   options.listen_address = "127.0.0.1:0";
//   SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Start(db.get(), options));
//   std::cout << server->address() << "\n";   // the port actually bound
//   ...
//   server->Shutdown(absl::Seconds(5));          // health NOT_SERVING, drain, stop
//
// Thread safety: all methods may be called from any thread; Shutdown is idempotent.
#ifndef SHOAL_RPC_SERVER_H_
#define SHOAL_RPC_SERVER_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "shoal/db.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace shoal::rpc {

class CollectionServiceImpl;
class VectorServiceImpl;
class SearchServiceImpl;

struct ServerOptions {
  // HOST:PORT; port 0 lets the OS pick (read it back with Server::port()).
  std::string listen_address = "127.0.0.1:50051";
  // Without authentication (a later issue) only loopback addresses may be bound.
  bool allow_remote = false;
  // Largest request or response message, in bytes.
  int max_message_bytes = 64 << 20;
};

class Server {
 public:
  // Binds and starts serving `db`, which is not owned and must outlive the Server; health
  // reports SERVING when this returns. Errors: INVALID_ARGUMENT (bad address or message size),
  // PERMISSION_DENIED (non-loopback address without allow_remote), UNAVAILABLE (bind failed).
  static absl::StatusOr<std::unique_ptr<Server>> Start(DB* db, const ServerOptions& options);

  // Shuts down with no grace period if Shutdown was not called.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // "host:port" as bound (the OS-chosen port when 0 was asked for).
  const std::string& address() const { return address_; }
  int port() const { return port_; }

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
  Server(std::unique_ptr<CollectionServiceImpl> collections,
         std::unique_ptr<VectorServiceImpl> vectors, std::unique_ptr<SearchServiceImpl> search);

  std::unique_ptr<CollectionServiceImpl> collections_;
  std::unique_ptr<VectorServiceImpl> vectors_;
  std::unique_ptr<SearchServiceImpl> search_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  int port_ = 0;

  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_SERVER_H_

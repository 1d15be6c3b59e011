#include "rpc/server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#ifdef SHOAL_RPC_WITH_REFLECTION
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#endif

#include <chrono>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "rpc/collection_service.h"
#include "rpc/listen_address.h"
#include "rpc/search_service.h"
#include "rpc/vector_service.h"

namespace shoal::rpc {
namespace {

// Names reported through grpc.health.v1 besides the overall "" entry.
const char* const kServiceNames[] = {
    v1::CollectionService::service_full_name(),
    v1::VectorService::service_full_name(),
    v1::SearchService::service_full_name(),
};

void SetHealth(grpc::Server& server, bool serving) {
  grpc::HealthCheckServiceInterface* health = server.GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus("", serving);
  for (const char* name : kServiceNames) health->SetServingStatus(name, serving);
}

}  // namespace

Server::Server(std::unique_ptr<CollectionServiceImpl> collections,
               std::unique_ptr<VectorServiceImpl> vectors,
               std::unique_ptr<SearchServiceImpl> search)
    : collections_(std::move(collections)),
      vectors_(std::move(vectors)),
      search_(std::move(search)) {}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(DB* db, const ServerOptions& options) {
  absl::StatusOr<ListenAddress> listen = ParseListenAddress(options.listen_address);
  if (!listen.ok()) return listen.status();
  if (!options.allow_remote && !IsLoopbackHost(listen->host)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "listen: refusing to bind non-loopback address ", options.listen_address,
        " without authentication; use a loopback address (127.0.0.1, [::1], localhost) or "
        "--insecure-allow-remote"));
  }
  if (options.max_message_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_message_bytes: ", options.max_message_bytes, " is not positive"));
  }

  std::unique_ptr<Server> server(new Server(std::make_unique<CollectionServiceImpl>(db),
                                            std::make_unique<VectorServiceImpl>(db),
                                            std::make_unique<SearchServiceImpl>(db)));
  // Process-wide switches; they only affect servers built after them.
  grpc::EnableDefaultHealthCheckService(true);
#ifdef SHOAL_RPC_WITH_REFLECTION
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
#endif
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(listen->ToString(), grpc::InsecureServerCredentials(), &bound_port);
  // gRPC sets SO_REUSEPORT by default, which would let a second shoald silently share the
  // port (and split the traffic) instead of failing to start.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  builder.RegisterService(server->collections_.get());
  builder.RegisterService(server->vectors_.get());
  builder.RegisterService(server->search_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || bound_port == 0) {
    if (server->server_ != nullptr) server->server_->Shutdown();
    server->server_.reset();
    return absl::UnavailableError(
        absl::StrCat("listen: could not bind ", options.listen_address,
                     " (address in use, or not an address of this machine?)"));
  }
  server->port_ = bound_port;
  server->address_ = absl::StrCat(listen->host, ":", bound_port);
  SetHealth(*server->server_, true);
  return server;
}

Server::~Server() { Shutdown(absl::ZeroDuration()); }

void Server::SetNotServing() {
  if (server_ != nullptr) SetHealth(*server_, false);
}

void Server::Shutdown(absl::Duration grace) {
  absl::MutexLock lock(&mu_);
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  SetHealth(*server_, false);
  server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(grace));
  server_->Wait();
}

}  // namespace shoal::rpc

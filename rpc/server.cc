#include "rpc/server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#ifdef SHOAL_RPC_WITH_REFLECTION
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#endif

#include <algorithm>
#include <chrono>
#include <climits>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "rpc/admin_service.h"
#include "rpc/api_keys.h"
#include "rpc/cache_service.h"
#include "rpc/call_gate.h"
#include "rpc/collection_service.h"
#include "rpc/console/console_api.h"
#include "rpc/console/console_server.h"
#include "rpc/console/index_builds.h"
#include "rpc/ingest_budget.h"
#include "rpc/listen_address.h"
#include "rpc/metrics.h"
#include "rpc/parse_failure.h"
#include "rpc/rate_limiter.h"
#include "rpc/search_service.h"
#include "rpc/snapshot_shelf.h"
#include "rpc/tenant_service.h"
#include "rpc/vector_service.h"

namespace shoal::rpc {
namespace {

// Idle sync-server threads kept polling for calls; see Init.
constexpr int kSyncServerMaxPollers = 3;

// Names reported through grpc.health.v1 besides the overall "" entry.
const char* const kServiceNames[] = {
    v1::CollectionService::service_full_name(), v1::VectorService::service_full_name(),
    v1::SearchService::service_full_name(),     v1::AdminService::service_full_name(),
    v1::CacheService::service_full_name(),      v1::TenantService::service_full_name(),
};

void SetHealth(grpc::Server& server, bool serving) {
  grpc::HealthCheckServiceInterface* health = server.GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus("", serving);
  for (const char* name : kServiceNames) health->SetServingStatus(name, serving);
}

absl::StatusOr<std::string> ReadFile(const std::string& path, const char* field) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(field, ": cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// PERMISSION_DENIED unless `address` (the value of option `field`) is loopback, or keys are
// configured, or remote access without keys was asked for: the rule of every port shoald opens.
absl::Status CheckExposure(const ServerOptions& options, const std::string& address,
                           const char* field) {
  if (address.empty() || !options.key_file.empty() || options.allow_remote) {
    return absl::OkStatus();
  }
  absl::StatusOr<ListenAddress> parsed = ParseListenAddress(address);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", parsed.status().message()));
  }
  if (parsed->is_unix() || IsLoopbackHost(parsed->host)) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat(field, ": refusing to bind non-loopback address ", address,
                   " without authentication; give --key-file (API keys), or use a loopback address "
                   "(127.0.0.1, [::1], localhost), or --insecure-allow-remote"));
}

// listen_address and more_listen_addresses, parsed and vetted (CheckExposure; a Unix socket
// another server answers on is refused), after the same exposure checks of the metrics and
// console addresses.
absl::StatusOr<std::vector<ListenAddress>> ListenAddresses(const ServerOptions& options) {
  // The metrics port names every collection, the console shows everything: the same rule.
  for (auto [field, address] : {std::pair{"metrics_listen", &options.metrics_listen},
                                std::pair{"console_listen", &options.console_listen}}) {
    if (absl::StartsWith(*address, "unix:")) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": HOST:PORT only, not ", *address));
    }
    if (absl::Status s = CheckExposure(options, *address, field); !s.ok()) return s;
  }
  std::vector<std::string> texts = {options.listen_address};
  texts.insert(texts.end(), options.more_listen_addresses.begin(),
               options.more_listen_addresses.end());
  std::vector<ListenAddress> listen;
  for (const std::string& text : texts) {
    absl::StatusOr<ListenAddress> parsed = ParseListenAddress(text);
    if (!parsed.ok()) return parsed.status();
    if (absl::Status s = CheckExposure(options, text, "listen"); !s.ok()) return s;
    if (parsed->is_unix()) {
      if (absl::Status s = CheckUnixSocketFree(parsed->unix_path); !s.ok()) return s;
    }
    listen.push_back(*std::move(parsed));
  }
  return listen;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const ServerOptions& options) {
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError("tls: set both --tls-cert and --tls-key, or neither");
  }
  if (options.tls_cert_file.empty()) return grpc::InsecureServerCredentials();
  absl::StatusOr<std::string> cert = ReadFile(options.tls_cert_file, "tls-cert");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadFile(options.tls_key_file, "tls-key");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

Server::Server() = default;

absl::StatusOr<std::unique_ptr<Server>> Server::Start(DB* db, const ServerOptions& options) {
  auto host = std::make_unique<DbHost>(db);
  absl::StatusOr<std::unique_ptr<Server>> server = Start(host.get(), options);
  if (server.ok()) (*server)->owned_host_ = std::move(host);
  return server;
}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(DbHost* host, const ServerOptions& options) {
  std::unique_ptr<Server> server(new Server());
  if (absl::Status s = server->Init(host, options); !s.ok()) return s;
  return server;
}

absl::Status Server::Init(DbHost* host, const ServerOptions& options) {
  absl::StatusOr<std::vector<ListenAddress>> listen = ListenAddresses(options);
  if (!listen.ok()) return listen.status();
  if (options.max_message_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_message_bytes: ", options.max_message_bytes, " is not positive"));
  }
  if (!options.key_file.empty()) {
    absl::StatusOr<ApiKeys> keys = ApiKeys::Load(options.key_file);
    if (!keys.ok()) return absl::InvalidArgumentError(keys.status().message());
    keys_ = std::make_unique<ApiKeys>(*std::move(keys));
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = Credentials(options);
  if (!credentials.ok()) return credentials.status();

  limiter_ = std::make_unique<RateLimiter>(options.rate_limit_rps, options.rate_limit_burst);
  metrics_ = std::make_unique<ServerMetrics>();
  budget_ = std::make_unique<IngestBudget>(options.ingest_inflight_bytes);
  gate_ = std::make_unique<CallGate>(keys_.get(), limiter_.get(), metrics_.get(), host,
                                     static_cast<size_t>(options.max_message_bytes));
  collections_ = std::make_unique<CollectionServiceImpl>(gate_.get());
  vectors_ = std::make_unique<VectorServiceImpl>(gate_.get(), budget_.get());
  search_ = std::make_unique<SearchServiceImpl>(gate_.get());
  admin_ = std::make_unique<AdminServiceImpl>(gate_.get(), budget_.get(), options.snapshot_dir,
                                              options.cluster_status, options.cluster_move);
  caches_ = std::make_unique<CacheServiceImpl>(gate_.get());
  tenants_ = std::make_unique<TenantServiceImpl>(gate_.get());
  if (!options.metrics_listen.empty()) {
    absl::Status s = metrics_->Serve(options.metrics_listen, host, options.extra_metrics);
    if (!s.ok()) return s;
  }

  // Process-wide switches; they only affect servers built after them.
  grpc::EnableDefaultHealthCheckService(true);
#ifdef SHOAL_RPC_WITH_REFLECTION
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
#endif
  grpc::ServerBuilder builder;
  std::vector<int> bound_ports(listen->size(), 0);
  for (size_t i = 0; i < listen->size(); ++i) {
    builder.AddListeningPort((*listen)[i].ToString(), *credentials, &bound_ports[i]);
  }
  // gRPC sets SO_REUSEPORT by default, which would let a second shoald silently share the
  // port (and split the traffic) instead of failing to start.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Up to twice the limit reaches the handlers, which refuse it with a clear message (and
  // count it); gRPC refuses anything larger.
  const int receive_limit =
      options.max_message_bytes > INT_MAX / 2 ? INT_MAX : options.max_message_bytes * 2;
  builder.SetMaxReceiveMessageSize(receive_limit);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  builder.experimental().SetInterceptorCreators(ParseFailureInterceptors());
  // The sync server runs each handler on the poller thread that took the call and starts a new
  // poller when none is left polling. With gRPC's default MAX_POLLERS (2), a thread that finished
  // a call exited whenever two others were polling, so with calls back to back threads were
  // created and destroyed all the time. Each idle poller waits on the same completion queue and
  // costs wake-ups, so the cap stays small.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              kSyncServerMaxPollers);
  builder.RegisterService(collections_.get());
  builder.RegisterService(vectors_.get());
  builder.RegisterService(search_.get());
  builder.RegisterService(admin_.get());
  builder.RegisterService(caches_.get());
  builder.RegisterService(tenants_.get());
  server_ = builder.BuildAndStart();
  for (size_t i = 0; i < listen->size(); ++i) {
    ListenAddress& address = (*listen)[i];
    if (server_ == nullptr || bound_ports[i] == 0) {
      if (server_ != nullptr) server_->Shutdown();
      server_.reset();
      return absl::UnavailableError(
          absl::StrCat("listen: could not bind ", address.ToString(),
                       " (address in use, or not an address of this machine?)"));
    }
    if (!address.is_unix()) address.port = bound_ports[i];  // gRPC reports 1 for a socket
    addresses_.push_back(address.ToString());
  }
  port_ = listen->front().is_unix() ? 0 : listen->front().port;
  if (absl::Status s = StartConsole(options); !s.ok()) return s;
  SetHealth(*server_, true);
  return absl::OkStatus();
}

absl::Status Server::StartConsole(const ServerOptions& options) {
  if (options.console_listen.empty()) return absl::OkStatus();
  absl::StatusOr<ListenAddress> listen = ParseListenAddress(options.console_listen);
  if (!listen.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("console_listen: ", listen.status().message()));
  }
  console_shelf_ = std::make_unique<SnapshotShelf>(options.snapshot_dir);
  console_builds_ = std::make_unique<console::IndexBuilds>(gate_.get());
  console_api_ = std::make_unique<console::ConsoleApi>(gate_.get(), console_shelf_.get(),
                                                       console_builds_.get());
  absl::StatusOr<std::unique_ptr<console::ConsoleServer>> console = console::ConsoleServer::Start(
      listen->ToString(), console_api_.get(), static_cast<size_t>(options.max_message_bytes));
  if (!console.ok()) return console.status();
  console_ = *std::move(console);
  return absl::OkStatus();
}

void Server::StopConsole() {
  console_.reset();  // waits for requests in flight
  console_api_.reset();
  console_builds_.reset();  // waits for the console's index builds
}

Server::~Server() { Shutdown(absl::ZeroDuration()); }

int Server::metrics_port() const { return metrics_ == nullptr ? 0 : metrics_->port(); }

int Server::console_port() const { return console_ == nullptr ? 0 : console_->port(); }

void Server::SetNotServing() {
  if (server_ != nullptr) SetHealth(*server_, false);
}

void Server::Shutdown(absl::Duration grace) {
  absl::MutexLock lock(&mu_);
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  SetHealth(*server_, false);
  StopConsole();
  server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(grace));
  server_->Wait();
}

}  // namespace shoal::rpc

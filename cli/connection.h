// Connection: the `shoal` tools' channel to shoald — address, optional TLS, API key and a
// per-call deadline — plus the generated stubs of every service.
//
//   ConnectionOptions options{.server = "127.0.0.1:50051", .api_key = getenv("SHOAL_API_KEY")};
//   SHOAL_ASSIGN_OR_RETURN(auto connection, Connection::Create(options));
//   auto context = connection->Context();  // deadline + "authorization: Bearer <key>"
//   grpc::Status s = connection->collections().ListCollections(context.get(), request, &resp);
//   SHOAL_RETURN_IF_ERROR(FromGrpc(s));
//
// Thread safety: the stubs and Context() may be used from any number of threads.
#ifndef SHOAL_CLI_CONNECTION_H_
#define SHOAL_CLI_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "shoal/v1/admin_service.grpc.pb.h"
#include "shoal/v1/collection_service.grpc.pb.h"
#include "shoal/v1/search_service.grpc.pb.h"
#include "shoal/v1/tenant_service.grpc.pb.h"
#include "shoal/v1/vector_service.grpc.pb.h"

namespace shoal::cli {

struct ConnectionOptions {
  std::string server = "127.0.0.1:50051";
  // Sent as "authorization: Bearer <key>" on every call when not empty.
  std::string api_key;
  // TLS: on when `tls` is set or any of the files is given. PEM files; `tls_ca` empty = the
  // system roots; `tls_cert` + `tls_key` = a client certificate.
  bool tls = false;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  // Overrides the name checked against the server certificate (tests, IP addresses).
  std::string tls_server_name;
  std::chrono::milliseconds timeout{30000};
  // Largest message sent or received (ingest batches, big search answers).
  int max_message_bytes = 64 << 20;
};

class Connection {
 public:
  // NotFound / Internal when a TLS file cannot be read. Connecting itself is lazy.
  static absl::StatusOr<std::unique_ptr<Connection>> Create(const ConnectionOptions& options);

  // A fresh context with the deadline and the API key set; one per call.
  std::unique_ptr<grpc::ClientContext> Context() const;
  // Same, for a long-running call (a stream, an index build): deadline `timeout`.
  std::unique_ptr<grpc::ClientContext> Context(std::chrono::milliseconds timeout) const;

  const std::string& server() const { return options_.server; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  ::shoal::v1::CollectionService::Stub& collections() const { return *collections_; }
  ::shoal::v1::VectorService::Stub& vectors() const { return *vectors_; }
  ::shoal::v1::SearchService::Stub& search() const { return *search_; }
  ::shoal::v1::AdminService::Stub& admin() const { return *admin_; }
  ::shoal::v1::TenantService::Stub& tenants() const { return *tenants_; }
  ::grpc::health::v1::Health::Stub& health() const { return *health_; }

 private:
  Connection() = default;
  ConnectionOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<::shoal::v1::CollectionService::Stub> collections_;
  std::unique_ptr<::shoal::v1::VectorService::Stub> vectors_;
  std::unique_ptr<::shoal::v1::SearchService::Stub> search_;
  std::unique_ptr<::shoal::v1::AdminService::Stub> admin_;
  std::unique_ptr<::shoal::v1::TenantService::Stub> tenants_;
  std::unique_ptr<::grpc::health::v1::Health::Stub> health_;
};

// grpc::Status -> absl::Status (the two share the canonical code numbering).
absl::Status FromGrpc(const grpc::Status& status);

// "NOT_FOUND: name: 'x' not found": how every tool prints an error.
std::string ErrorText(const absl::Status& status);

}  // namespace shoal::cli

#endif  // SHOAL_CLI_CONNECTION_H_

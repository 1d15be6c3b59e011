#include "cli/connection.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace shoal::cli {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(flag, ": cannot read \"", path, "\""));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Connection>> Connection::Create(const ConnectionOptions& options) {
  std::unique_ptr<Connection> c(new Connection());
  c->options_ = options;
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  const bool tls = options.tls || !options.tls_ca.empty() || !options.tls_cert.empty();
  if (tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca.empty()) {
      absl::StatusOr<std::string> pem = ReadPem("--tls-ca", options.tls_ca);
      if (!pem.ok()) return pem.status();
      ssl.pem_root_certs = *pem;
    }
    if (!options.tls_cert.empty()) {
      absl::StatusOr<std::string> cert = ReadPem("--tls-cert", options.tls_cert);
      if (!cert.ok()) return cert.status();
      absl::StatusOr<std::string> key = ReadPem("--tls-key", options.tls_key);
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    credentials = grpc::SslCredentials(ssl);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(options.max_message_bytes);
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  if (!options.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls_server_name);
  }
  c->channel_ = grpc::CreateCustomChannel(options.server, credentials, args);
  c->collections_ = ::shoal::v1::CollectionService::NewStub(c->channel_);
  c->vectors_ = ::shoal::v1::VectorService::NewStub(c->channel_);
  c->search_ = ::shoal::v1::SearchService::NewStub(c->channel_);
  c->admin_ = ::shoal::v1::AdminService::NewStub(c->channel_);
  c->tenants_ = ::shoal::v1::TenantService::NewStub(c->channel_);
  c->health_ = ::grpc::health::v1::Health::NewStub(c->channel_);
  return c;
}

std::unique_ptr<grpc::ClientContext> Connection::Context() const {
  return Context(options_.timeout);
}

std::unique_ptr<grpc::ClientContext> Connection::Context(std::chrono::milliseconds timeout) const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  if (!options_.api_key.empty()) {
    context->AddMetadata("authorization", absl::StrCat("Bearer ", options_.api_key));
  }
  return context;
}

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::string ErrorText(const absl::Status& status) {
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message());
}

}  // namespace shoal::cli

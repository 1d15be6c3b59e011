#include "rpc/console/console_server.h"

#include <civetweb.h>

#include <algorithm>
#include <mutex>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace shoal::rpc::console {
namespace {

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Content Too Large";
    case 429:
      return "Too Many Requests";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return status < 500 ? "Client Error" : "Server Error";
  }
}

// The page may load only its own files and talk only to its own origin; it is never framed.
constexpr char kSecurityHeaders[] =
    "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'none'\r\n"
    "X-Content-Type-Options: nosniff\r\n"
    "Referrer-Policy: no-referrer\r\n"
    "Cache-Control: no-store\r\n";

// `with_body` false: HEAD, which gets the headers of the GET (its length included) only.
void Send(mg_connection* connection, int status, const char* content_type, const void* body,
          size_t size, bool with_body = true) {
  std::string head = absl::StrCat("HTTP/1.1 ", status, " ", ReasonPhrase(status),
                                  "\r\nContent-Type: ", content_type, "\r\nContent-Length: ", size,
                                  "\r\n", kSecurityHeaders);
  if (status == 401) head += "WWW-Authenticate: Bearer realm=\"shoald\"\r\n";
  head += "Connection: close\r\n\r\n";
  mg_write(connection, head.data(), head.size());
  if (with_body && size > 0) mg_write(connection, body, size);
}

std::string Header(mg_connection* connection, const char* name) {
  const char* value = mg_get_header(connection, name);
  return value == nullptr ? "" : value;
}

}  // namespace

const ConsoleAsset* FindAsset(absl::string_view path) {
  if (path == "/") path = "/index.html";
  if (!absl::ConsumePrefix(&path, "/")) return nullptr;
  for (size_t i = 0; i < kConsoleAssetCount; ++i) {
    if (kConsoleAssets[i].path == path) return &kConsoleAssets[i];
  }
  return nullptr;
}

absl::StatusOr<std::unique_ptr<ConsoleServer>> ConsoleServer::Start(const std::string& listen,
                                                                    ConsoleApi* api,
                                                                    size_t max_body_bytes) {
  static std::once_flag init;
  std::call_once(init, [] { mg_init_library(0); });
  std::unique_ptr<ConsoleServer> server(new ConsoleServer(api, max_body_bytes));
  // Several threads and a socket timeout well below civetweb's 30 s: a client that sends half a
  // request and goes idle must not hold a thread for long (the metrics port's lesson). The
  // timeout bounds each read and write, not how long a handler (a restore) may run.
  const char* options[] = {"listening_ports",    listen.c_str(), "num_threads", "8",
                           "request_timeout_ms", "10000",        nullptr};
  mg_callbacks callbacks{};
  mg_init_data init_data{};
  init_data.callbacks = &callbacks;
  init_data.configuration_options = options;
  char error_text[256] = "";
  unsigned error_code = 0;
  mg_error_data error{};
  error.code = &error_code;
  error.text = error_text;
  error.text_buffer_size = sizeof(error_text);
  server->context_ = mg_start2(&init_data, &error);
  if (server->context_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("console_listen: cannot serve on ", listen, ": ", error_text));
  }
  mg_set_request_handler(server->context_, "/", &ConsoleServer::HandleRequest, server.get());
  mg_server_port ports[4];
  const int count = mg_get_server_ports(server->context_, 4, ports);
  server->port_ = count > 0 ? ports[0].port : 0;
  return server;
}

ConsoleServer::~ConsoleServer() {
  if (context_ != nullptr) mg_stop(context_);
}

int ConsoleServer::HandleRequest(mg_connection* connection, void* self) {
  return static_cast<ConsoleServer*>(self)->Serve(connection);
}

int ConsoleServer::Serve(mg_connection* connection) {
  const mg_request_info* info = mg_get_request_info(connection);
  const std::string method = info->request_method == nullptr ? "" : info->request_method;
  const std::string path = info->local_uri == nullptr ? "/" : info->local_uri;
  if (!absl::StartsWith(path, "/api/")) {
    const ConsoleAsset* asset = FindAsset(path);
    if (asset == nullptr || (method != "GET" && method != "HEAD")) {
      static constexpr char kNotFound[] = "not found\n";
      Send(connection, 404, "text/plain; charset=utf-8", kNotFound, sizeof(kNotFound) - 1);
      return 404;
    }
    Send(connection, 200, asset->content_type, asset->data, asset->size, method != "HEAD");
    return 200;
  }
  HttpRequest request{.method = method,
                      .path = path,
                      .authorization = Header(connection, "Authorization"),
                      .x_api_key = Header(connection, "X-Api-Key"),
                      .host = Header(connection, "Host"),
                      .origin = Header(connection, "Origin"),
                      .content_type = Header(connection, "Content-Type")};
  // Read at most one byte past the limit: enough for the gate to refuse it, by the same rule
  // and message as gRPC's, without holding a huge body in memory.
  const size_t want =
      info->content_length < 0
          ? 0
          : std::min<size_t>(static_cast<size_t>(info->content_length), max_body_bytes_ + 1);
  request.body.resize(want);
  size_t got = 0;
  while (got < want) {
    const int n = mg_read(connection, request.body.data() + got, want - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  request.body.resize(got);
  HttpResponse response = api_->Handle(request);
  Send(connection, response.status, response.content_type.c_str(), response.body.data(),
       response.body.size());
  return response.status;
}

}  // namespace shoal::rpc::console

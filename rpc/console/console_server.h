// ConsoleServer: shoald's web console over HTTP (civetweb, Debian's libcivetweb): the embedded
// single-page front end (console_assets.h) and, under /api/, ConsoleApi. Started by
// rpc/server.cc when ServerOptions::console_listen is set, on its own port.
//
//   SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<ConsoleServer> console,
//                          ConsoleServer::Start("127.0.0.1:0", &api, max_body_bytes));
//   console->port();   // the bound port
//
// Plain HTTP: API keys cross it in clear, so off loopback it belongs behind a TLS proxy (the
// caller enforces the loopback rule). Responses carry a strict Content-Security-Policy (the
// page loads only its own scripts and styles, no inline script) and are never cached.
// Thread safety: requests are served on civetweb's worker threads; the destructor stops the
// server and waits for requests in flight.
#ifndef SHOAL_RPC_CONSOLE_CONSOLE_SERVER_H_
#define SHOAL_RPC_CONSOLE_CONSOLE_SERVER_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rpc/console/console_api.h"
#include "rpc/console/console_assets.h"

struct mg_connection;
struct mg_context;

namespace shoal::rpc::console {

class ConsoleServer {
 public:
  // Serves on `listen` (HOST:PORT, an IP address; port 0 picks one). `api` is not owned and
  // must outlive the server. Request bodies over `max_body_bytes` are refused (413) unread.
  // UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<ConsoleServer>> Start(const std::string& listen,
                                                              ConsoleApi* api,
                                                              size_t max_body_bytes);
  ~ConsoleServer();
  ConsoleServer(const ConsoleServer&) = delete;
  ConsoleServer& operator=(const ConsoleServer&) = delete;

  int port() const { return port_; }

 private:
  ConsoleServer(ConsoleApi* api, size_t max_body_bytes)
      : api_(api), max_body_bytes_(max_body_bytes) {}
  static int HandleRequest(mg_connection* connection, void* self);
  int Serve(mg_connection* connection);

  ConsoleApi* const api_;
  const size_t max_body_bytes_;
  mg_context* context_ = nullptr;
  int port_ = 0;
};

// The embedded file served at `path` ("/" is index.html), or null.
const ConsoleAsset* FindAsset(absl::string_view path);

}  // namespace shoal::rpc::console

#endif  // SHOAL_RPC_CONSOLE_CONSOLE_SERVER_H_

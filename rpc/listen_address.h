// Parsing and vetting of shoald's --listen address ("HOST:PORT", or "unix:PATH" for a
// Unix-domain socket).
//
//   SHOAL_ASSIGN_OR_RETURN(ListenAddress address, ParseListenAddress("127.0.0.1:0"));
//   if (!address.is_unix() && !IsLoopbackHost(address.host)) ...  // refuse unless allowed
//
// Stateless; thread-safe.
#ifndef SHOAL_RPC_LISTEN_ADDRESS_H_
#define SHOAL_RPC_LISTEN_ADDRESS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shoal::rpc {

struct ListenAddress {
  // As written, IPv6 brackets included ("127.0.0.1", "[::1]", "localhost", "0.0.0.0").
  std::string host;
  int port = 0;  // 0..65535; 0 = let the OS pick
  // A Unix-domain socket's path instead of host and port (reachable from this machine only).
  std::string unix_path;

  bool is_unix() const { return !unix_path.empty(); }
  // "host:port", or "unix:PATH" (as gRPC addresses are written).
  std::string ToString() const;
};

// Accepts "HOST:PORT" with HOST an IPv4 address, a bracketed IPv6 address or a host name, and
// "unix:PATH" (also "unix://" + an absolute path). INVALID_ARGUMENT (naming `listen`) when the
// host is empty, the port is not 0..65535, or the path is empty or too long for a socket.
absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view text);

// OK when a server may bind Unix socket `path`: nothing is there, or a socket no server
// answers on (left by one that died; gRPC replaces it). UNAVAILABLE when a server listens on it
// (gRPC would silently take the path over), FAILED_PRECONDITION when something other than a
// socket is there.
absl::Status CheckUnixSocketFree(const std::string& path);

// True for "localhost", 127.0.0.0/8, ::1 and IPv4-mapped 127.0.0.0/8 ("[::1]" brackets
// allowed). Wildcards (0.0.0.0, ::) and every other name are not loopback.
bool IsLoopbackHost(absl::string_view host);

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_LISTEN_ADDRESS_H_

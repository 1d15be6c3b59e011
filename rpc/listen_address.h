// Parsing and vetting of shoald's --listen address ("HOST:PORT").
//
//   SHOAL_ASSIGN_OR_RETURN(ListenAddress address, ParseListenAddress("127.0.0.1:0"));
//   if (!IsLoopbackHost(address.host)) ...  // refuse unless remote access is allowed
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

  // "host:port".
  std::string ToString() const;
};

// Accepts "HOST:PORT" with HOST an IPv4 address, a bracketed IPv6 address or a host name.
// INVALID_ARGUMENT (naming `listen`) when the host is empty or the port is not 0..65535.
absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view text);

// True for "localhost", 127.0.0.0/8, ::1 and IPv4-mapped 127.0.0.0/8 ("[::1]" brackets
// allowed). Wildcards (0.0.0.0, ::) and every other name are not loopback.
bool IsLoopbackHost(absl::string_view host);

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_LISTEN_ADDRESS_H_

#include "rpc/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace shoal::rpc {

std::string ListenAddress::ToString() const {
  if (is_unix()) return absl::StrCat("unix:", unix_path);
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view text) {
  if (absl::ConsumePrefix(&text, "unix:")) {
    // "unix://" is followed by an absolute path; "unix:" by any path.
    if (absl::StartsWith(text, "//")) text.remove_prefix(2);
    ListenAddress address;
    address.unix_path = std::string(text);
    if (address.unix_path.empty()) {
      return absl::InvalidArgumentError("listen: \"unix:\" needs a socket path (unix:/PATH)");
    }
    if (address.unix_path.size() >= sizeof(sockaddr_un{}.sun_path)) {
      return absl::InvalidArgumentError(absl::StrCat("listen: socket path \"", address.unix_path,
                                                     "\" is over ",
                                                     sizeof(sockaddr_un{}.sun_path) - 1, " bytes"));
    }
    return address;
  }
  const size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen: \"", text, "\" is not HOST:PORT (e.g. 127.0.0.1:50051)"));
  }
  ListenAddress address;
  address.host = std::string(text.substr(0, colon));
  absl::string_view port = text.substr(colon + 1);
  if (address.host.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("listen: \"", text, "\" has no host"));
  }
  // An unbracketed IPv6 address ("::1:50051") is ambiguous; require brackets.
  if (address.host.find(':') != std::string::npos &&
      !(address.host.front() == '[' && address.host.back() == ']')) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen: IPv6 host in \"", text, "\" must be bracketed, e.g. [::1]:50051"));
  }
  uint32_t port_number = 0;
  if (port.empty() || !absl::SimpleAtoi(port, &port_number) || port_number > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen: port \"", port, "\" is not a number in 0..65535"));
  }
  address.port = static_cast<int>(port_number);
  return address;
}

bool IsLoopbackHost(absl::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (absl::AsciiStrToLower(host) == "localhost") return true;
  const std::string text(host);
  in_addr v4;
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

absl::Status CheckUnixSocketFree(const std::string& path) {
  struct stat info;
  if (path.size() >= sizeof(sockaddr_un{}.sun_path) || lstat(path.c_str(), &info) != 0) {
    return absl::OkStatus();  // nothing there (or a path the bind will refuse)
  }
  if (!S_ISSOCK(info.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("listen: ", path, " exists and is not a socket"));
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);  // size checked above
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::OkStatus();  // let the bind report what is wrong
  const bool answered = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  if (answered) {
    return absl::UnavailableError(absl::StrCat("listen: a server already listens on unix:", path));
  }
  return absl::OkStatus();
}

}  // namespace shoal::rpc

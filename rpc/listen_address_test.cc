#include "rpc/listen_address.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace shoal::rpc {
namespace {

TEST(ListenAddressTest, ParsesHostAndPort) {
  absl::StatusOr<ListenAddress> a = ParseListenAddress("127.0.0.1:50051");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 50051);
  a = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->host, "[::1]");
  EXPECT_EQ(a->port, 0);
  EXPECT_EQ(a->ToString(), "[::1]:0");
}

TEST(ListenAddressTest, RejectsMalformedAddressesNamingTheFlag) {
  for (const char* text : {"127.0.0.1", ":50051", "127.0.0.1:", "127.0.0.1:70000", "127.0.0.1:-1",
                           "::1:50051", "host:port"}) {
    absl::StatusOr<ListenAddress> a = ParseListenAddress(text);
    ASSERT_FALSE(a.ok()) << text;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(a.status().message().find("listen"), std::string::npos) << a.status();
  }
}

TEST(ListenAddressTest, ParsesUnixSocketPaths) {
  absl::StatusOr<ListenAddress> a = ParseListenAddress("unix:/run/shoal/shoald.sock");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->is_unix());
  EXPECT_EQ(a->unix_path, "/run/shoal/shoald.sock");
  EXPECT_EQ(a->ToString(), "unix:/run/shoal/shoald.sock");
  a = ParseListenAddress("unix:///tmp/s.sock");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->unix_path, "/tmp/s.sock");
  a = ParseListenAddress("unix:relative.sock");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->unix_path, "relative.sock");
  EXPECT_FALSE(ParseListenAddress("127.0.0.1:1")->is_unix());
  for (const std::string text :
       {std::string("unix:"), std::string("unix://"), "unix:/" + std::string(120, 'x')}) {
    a = ParseListenAddress(text);
    ASSERT_FALSE(a.ok()) << text;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(a.status().message().find("listen"), std::string::npos) << a.status();
  }
}

TEST(ListenAddressTest, UnixSocketPathMustBeFreeOrAStaleSocket) {
  const std::string dir = testing::TempDir();
  EXPECT_TRUE(CheckUnixSocketFree(dir + "/no-such-socket").ok());
  const std::string file = dir + "/listen_address_test_file";
  std::ofstream(file) << "not a socket";
  EXPECT_EQ(CheckUnixSocketFree(file).code(), absl::StatusCode::kFailedPrecondition);
  std::remove(file.c_str());
  // A socket bound and listening: taken. Bound but closed (a dead server's): free.
  const std::string path = dir + "/listen_address_test.sock";
  std::remove(path.c_str());
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  EXPECT_EQ(CheckUnixSocketFree(path).code(), absl::StatusCode::kUnavailable);
  close(fd);
  EXPECT_TRUE(CheckUnixSocketFree(path).ok());
  std::remove(path.c_str());
}

TEST(ListenAddressTest, LoopbackHosts) {
  for (const char* host :
       {"127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST", "[::1]", "::1", "[::ffff:127.0.0.1]"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"0.0.0.0", "[::]", "10.0.0.1", "192.168.1.1", "example.com", "128.0.0.1",
                           "[::ffff:10.0.0.1]", ""}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

}  // namespace
}  // namespace shoal::rpc

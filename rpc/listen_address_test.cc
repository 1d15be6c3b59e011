#include "rpc/listen_address.h"

#include <gtest/gtest.h>

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

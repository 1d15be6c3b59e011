// End-to-end: API keys and roles, TLS, message-size and rate limits, the Prometheus endpoint
// and health during shutdown, on a real `shoald` child process driven through the C++ SDK.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/build_info.h"
#include "rpc/client/shoal_client.h"
#include "tests/e2e/prometheus_text.h"
#include "tests/e2e/shoald_process.h"

namespace shoal::e2e {
namespace {

using client::Client;

constexpr char kAdminKey[] = "admin-key-0123456789abcdef";
constexpr char kWriterKey[] = "writer-key-0123456789abcdef";
constexpr char kReaderKey[] = "reader-key-0123456789abcdef";

class SecurityE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    ASSERT_FALSE(dir_.empty());
    key_file_ = dir_ + "/keys";
    std::ofstream(key_file_) << "# role key name\n"
                             << "admin " << kAdminKey << " ops\n"
                             << "read-write " << kWriterKey << " loader\n"
                             << "read-only " << kReaderKey << " viewer\n";
  }
  void TearDown() override {
    shoald_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Start(std::vector<std::string> args) {
    args.insert(args.end(), {"--metrics-listen", "127.0.0.1:0", "--snapshot-dir", dir_ + "/snaps"});
    shoald_ = std::make_unique<ShoaldProcess>();
    absl::Status started = shoald_->Start(dir_ + "/data", args);
    ASSERT_TRUE(started.ok()) << started;
  }
  std::unique_ptr<Client> Connect(const std::string& key, client::ConnectOptions options = {}) {
    options.api_key = key;
    absl::StatusOr<std::unique_ptr<Client>> c = Client::Connect(shoald_->address(), options);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  std::vector<Sample> Scrape() {
    absl::StatusOr<HttpResponse> response = HttpGet(shoald_->metrics_port(), "/metrics");
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) return {};
    EXPECT_EQ(response->status, 200);
    absl::StatusOr<std::vector<Sample>> samples = ParsePrometheusText(response->body);
    EXPECT_TRUE(samples.ok()) << samples.status() << "\n" << response->body;
    return samples.ok() ? *std::move(samples) : std::vector<Sample>{};
  }

  std::string dir_;
  std::string key_file_;
  std::unique_ptr<ShoaldProcess> shoald_;
};

TEST_F(SecurityE2eTest, KeysAndRolesDecideWhoMayDoWhat) {
  Start({"--key-file", key_file_});
  std::unique_ptr<Client> admin = Connect(kAdminKey);
  std::unique_ptr<Client> writer = Connect(kWriterKey);
  std::unique_ptr<Client> reader = Connect(kReaderKey);
  std::unique_ptr<Client> nobody = Connect("");
  std::unique_ptr<Client> wrong = Connect("wrong-key-0123456789abcdef");

  // Health needs no key (load balancers probe it).
  EXPECT_TRUE(nobody->IsServing().value_or(false));
  EXPECT_TRUE(absl::IsUnauthenticated(nobody->ListCollections().status()));
  EXPECT_TRUE(absl::IsUnauthenticated(wrong->ListCollections().status()));

  ASSERT_TRUE(writer->CreateCollection({.name = "docs", .dimension = 2}).ok());
  Record record{.key = uint64_t{1}, .vector = {1, 2}};
  EXPECT_TRUE(writer->Upsert("docs", {&record, 1}).ok());
  // A read-only key reads and searches but cannot write.
  EXPECT_TRUE(reader->DescribeCollection("docs").ok());
  EXPECT_TRUE(reader->Search("docs", record.vector, {.k = 1}).ok());
  absl::Status denied = reader->Upsert("docs", {&record, 1}).status();
  EXPECT_TRUE(absl::IsPermissionDenied(denied)) << denied;
  EXPECT_NE(denied.message().find("viewer"), std::string::npos) << denied;
  EXPECT_TRUE(absl::IsPermissionDenied(reader->DropCollection("docs")));
  EXPECT_TRUE(absl::IsPermissionDenied(reader->Ingest("docs", {&record, 1}).status()));
  // Admin RPCs need the admin key.
  EXPECT_TRUE(absl::IsPermissionDenied(writer->GetStats().status()));
  EXPECT_TRUE(absl::IsPermissionDenied(writer->Snapshot("s").status()));
  EXPECT_TRUE(admin->GetStats().ok());
  EXPECT_TRUE(admin->Snapshot("s").ok());

  std::vector<Sample> samples = Scrape();
  EXPECT_GE(
      SampleValue(samples, "shoal_rejections_total", {{"reason", "unauthenticated"}}).value_or(0),
      2);
  EXPECT_GE(
      SampleValue(samples, "shoal_rejections_total", {{"reason", "permission_denied"}}).value_or(0),
      5);
}

TEST_F(SecurityE2eTest, MetricsEndpointServesPrometheusTextAndCountersAdvance) {
  Start({});
  std::unique_ptr<Client> c = Connect("");
  ASSERT_TRUE(c->CreateCollection({.name = "docs", .dimension = 2}).ok());
  std::vector<Record> records = {{.key = uint64_t{1}, .vector = {1, 2}},
                                 {.key = uint64_t{2}, .vector = {3, 4}}};
  ASSERT_TRUE(c->Upsert("docs", records, /*sync=*/true).ok());
  const std::vector<float> query = {1, 2};
  ASSERT_TRUE(c->Search("docs", query, {.k = 1}).ok());
  const std::map<std::string, std::string> search_ok = {{"method", "SearchService/Search"},
                                                        {"code", "OK"}};
  std::vector<Sample> first = Scrape();
  const double searches =
      SampleValue(first, "shoal_rpc_duration_seconds_count", search_ok).value_or(-1);
  EXPECT_GE(searches, 1);
  EXPECT_EQ(SampleValue(first, "shoal_collection_vectors", {{"collection", "docs"}}), 2.0);
  EXPECT_EQ(SampleValue(first, "shoal_collection_vector_bytes", {{"collection", "docs"}}), 16.0);
  EXPECT_GE(SampleValue(first, "shoal_wal_sync_seconds_count").value_or(0), 1);
  EXPECT_TRUE(SampleValue(first, "shoal_rpc_duration_seconds_bucket",
                          {{"method", "SearchService/Search"}, {"code", "OK"}, {"le", "+Inf"}})
                  .has_value());
  EXPECT_TRUE(SampleValue(first, "shoal_index_builds_in_progress").has_value());
  EXPECT_EQ(SampleValue(first, "shoal_build_info",
                        {{"version", base::ProjectVersion()}, {"revision", base::GitDescribe()}}),
            1.0);

  for (int i = 0; i < 5; ++i) ASSERT_TRUE(c->Search("docs", query, {.k = 1}).ok());
  EXPECT_TRUE(absl::IsNotFound(c->Search("nope", query, {.k = 1}).status()));
  ASSERT_TRUE(c->BuildIndex("docs", "flat").ok());
  std::vector<Sample> second = Scrape();
  EXPECT_EQ(SampleValue(second, "shoal_rpc_duration_seconds_count", search_ok), searches + 5);
  EXPECT_EQ(SampleValue(second, "shoal_rpc_duration_seconds_count",
                        {{"method", "SearchService/Search"}, {"code", "NOT_FOUND"}}),
            1.0);
  EXPECT_EQ(SampleValue(second, "shoal_index_build_progress", {{"collection", "docs"}}), 1.0);

  // The metrics port serves nothing else, not even near-misses of its one path.
  for (const char* path : {"/v1/collections", "/metrics/", "/metricsX", "/METRICS", "/"}) {
    absl::StatusOr<HttpResponse> other = HttpGet(shoald_->metrics_port(), path);
    ASSERT_TRUE(other.ok()) << path << ": " << other.status();
    EXPECT_EQ(other->status, 404) << path;
  }

  // Clients that send half a request and go idle do not block the scrape.
  std::vector<int> idle;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<int> fd = ConnectLoopback(shoald_->metrics_port());
    ASSERT_TRUE(fd.ok()) << fd.status();
    const std::string half = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    ASSERT_EQ(write(*fd, half.data(), half.size()), static_cast<ssize_t>(half.size()));
    idle.push_back(*fd);
  }
  absl::StatusOr<HttpResponse> scrape = HttpGet(shoald_->metrics_port(), "/metrics");
  for (int fd : idle) close(fd);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(scrape->status, 200);
}

TEST_F(SecurityE2eTest, OversizeMessagesAndRateLimitsAreResourceExhausted) {
  Start({"--max-message-bytes", "65536", "--rate-limit-rps", "1", "--rate-limit-burst", "4"});
  std::unique_ptr<Client> c = Connect("");
  ASSERT_TRUE(c->CreateCollection({.name = "docs", .dimension = 1024}).ok());
  // ~82 KB: over the limit, refused by the handler with the limit named.
  std::vector<Record> records(20);
  for (size_t i = 0; i < records.size(); ++i) {
    records[i].key = uint64_t{i};
    records[i].vector.assign(1024, 0.5f);
  }
  absl::Status status = c->Upsert("docs", records).status();
  EXPECT_TRUE(absl::IsResourceExhausted(status)) << status;
  EXPECT_NE(status.message().find("max-message-bytes"), std::string::npos) << status;
  std::vector<Sample> samples = Scrape();
  EXPECT_EQ(SampleValue(samples, "shoal_rejections_total", {{"reason", "message_too_large"}}), 1.0);

  // 1 request/s with a burst of 4: ten back-to-back calls cannot all pass.
  int limited = 0;
  for (int i = 0; i < 10; ++i) {
    absl::Status s = c->ListCollections().status();
    if (absl::IsResourceExhausted(s)) {
      ++limited;
      EXPECT_NE(s.message().find("rate limit"), std::string::npos) << s;
    }
  }
  EXPECT_GT(limited, 0);
}

TEST_F(SecurityE2eTest, TlsServesOnlyTls) {
  const std::string cert = dir_ + "/cert.pem";
  const std::string key = dir_ + "/key.pem";
  const std::string command =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -addext "
      "subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
      key + " -out " + cert + " >/dev/null 2>&1";
  if (std::system(command.c_str()) != 0) GTEST_SKIP() << "openssl could not make a certificate";
  Start({"--tls-cert", cert, "--tls-key", key, "--key-file", key_file_});
  std::stringstream pem;
  pem << std::ifstream(cert).rdbuf();
  client::ConnectOptions tls{
      .tls = true, .tls_root_certs_pem = pem.str(), .tls_target_name = "localhost"};
  tls.timeout = absl::Seconds(10);
  std::unique_ptr<Client> secure = Connect(kReaderKey, tls);
  absl::StatusOr<std::vector<CollectionInfo>> list = secure->ListCollections();
  EXPECT_TRUE(list.ok()) << list.status();
  client::ConnectOptions plain;
  plain.timeout = absl::Seconds(5);
  EXPECT_FALSE(Connect(kReaderKey, plain)->ListCollections().ok());
}

TEST_F(SecurityE2eTest, HealthTurnsNotServingOnShutdownAndRemoteBindNeedsKeys) {
  Start({"--shutdown-drain-ms", "3000", "--shutdown-grace-ms", "500"});
  std::unique_ptr<Client> c = Connect("");
  ASSERT_TRUE(c->IsServing().value_or(false));
  shoald_->Signal(SIGTERM);
  // During the drain period the server still answers, with NOT_SERVING.
  absl::StatusOr<bool> serving = true;
  for (int i = 0; i < 100 && serving.ok() && *serving; ++i) {
    serving = c->IsServing();
    if (serving.ok() && *serving) absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_TRUE(serving.ok()) << serving.status();
  EXPECT_FALSE(*serving);
  c.reset();
  EXPECT_EQ(shoald_->Wait().value_or(-1), 0) << shoald_->Stderr();

  // Without a key file a non-loopback address is refused; with one it is allowed.
  ShoaldProcess refused;
  absl::StatusOr<int> exit_status =
      refused.RunToExit({"--listen", "0.0.0.0:0", "--data", dir_ + "/data2"});
  ASSERT_TRUE(exit_status.ok());
  EXPECT_NE(*exit_status, 0);
  EXPECT_NE(refused.Stderr().find("--key-file"), std::string::npos) << refused.Stderr();
}

}  // namespace
}  // namespace shoal::e2e

// Test-only: ConsoleApiTest, the fixture of rpc/console/console_*_test.cc: ConsoleApi over a
// real DB in a temporary directory, called directly (no HTTP), with keys of every role and two
// bound to tenant "acme".
#ifndef SHOAL_RPC_CONSOLE_CONSOLE_API_FIXTURE_H_
#define SHOAL_RPC_CONSOLE_CONSOLE_API_FIXTURE_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rpc/api_keys.h"
#include "rpc/console/console_api.h"
#include "rpc/metrics.h"
#include "rpc/rate_limiter.h"

namespace shoal::rpc::console {

constexpr char kAdminKey[] = "admin-key-0123456789abcdef";
constexpr char kReadOnlyKey[] = "reader-key-0123456789abcdef";
constexpr char kWriterKey[] = "writer-key-0123456789abcdef";
// Bound to tenant "acme" (read-only and read-write).
constexpr char kAcmeKey[] = "acme-reader-key-0123456789";
constexpr char kAcmeWriterKey[] = "acme-writer-key-0123456789";

class ConsoleApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "console_api_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    absl::StatusOr<std::unique_ptr<DbHost>> host = DbHost::Open(dir_ + "/data", Options{});
    ASSERT_TRUE(host.ok()) << host.status();
    host_ = *std::move(host);
    absl::StatusOr<ApiKeys> keys = ApiKeys::Parse(absl::StrCat(
        "admin ", kAdminKey, " ops\nread-only ", kReadOnlyKey, " dashboards\n", "read-write ",
        kWriterKey, " ingest\n", "read-only ", kAcmeKey, " acme-dash tenant=acme\n", "read-write ",
        kAcmeWriterKey, " acme-app tenant=acme\n"));
    ASSERT_TRUE(keys.ok()) << keys.status();
    keys_ = std::make_unique<ApiKeys>(*std::move(keys));
    gate_ = std::make_unique<CallGate>(keys_.get(), &limiter_, &metrics_, host_.get(),
                                       /*max_message_bytes=*/1 << 20);
    shelf_ = std::make_unique<SnapshotShelf>(dir_ + "/snapshots");
    builds_ = std::make_unique<IndexBuilds>(gate_.get());
    api_ = std::make_unique<ConsoleApi>(gate_.get(), shelf_.get(), builds_.get());
  }

  void TearDown() override {
    api_.reset();
    builds_.reset();
    host_.reset();
    std::filesystem::remove_all(dir_);
  }

  HttpResponse Call(const std::string& method, const std::string& path, const Json& body,
                    const std::string& key = kAdminKey) {
    return api_->Handle({.method = method,
                         .path = path,
                         .body = body.is_null() ? "" : body.dump(),
                         .authorization = key.empty() ? "" : "Bearer " + key,
                         .host = "127.0.0.1:8080",
                         .content_type = "application/json"});
  }
  Json CallJson(const std::string& method, const std::string& path, const Json& body,
                int want_status = 200, const std::string& key = kAdminKey) {
    HttpResponse response = Call(method, path, body, key);
    EXPECT_EQ(response.status, want_status) << method << " " << path << ": " << response.body;
    return Json::parse(response.body);
  }

  // "fashion"-like: 8-dimensional vectors, key i = (i, i/2, ...), attribute label = i % 3.
  void Fill(int n) {
    ASSERT_TRUE(host_->Acquire()->CreateCollection({.name = "c", .dimension = 8}).ok());
    std::vector<Record> records;
    for (int i = 0; i < n; ++i) {
      Record record{.key = uint64_t(i)};
      for (int d = 0; d < 8; ++d) record.vector.push_back(float((i * (d + 3)) % 17));
      record.attributes["label"] = int64_t{i % 3};
      records.push_back(record);
    }
    ASSERT_TRUE(host_->Acquire()->Upsert("c", records, {}).ok());
  }

  std::string dir_;
  std::unique_ptr<DbHost> host_;
  std::unique_ptr<ApiKeys> keys_;
  RateLimiter limiter_{0, 0};
  ServerMetrics metrics_;
  std::unique_ptr<CallGate> gate_;
  std::unique_ptr<SnapshotShelf> shelf_;
  std::unique_ptr<IndexBuilds> builds_;
  std::unique_ptr<ConsoleApi> api_;
};

}  // namespace shoal::rpc::console

#endif  // SHOAL_RPC_CONSOLE_CONSOLE_API_FIXTURE_H_

// In-process tests of the gRPC layer over a real DB in a temporary directory: request shape
// checks, status codes, health.
// The real shoald process is exercised in tests/e2e.
#include "rpc/server.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "shoal/v1/collection_service.grpc.pb.h"
#include "shoal/v1/search_service.grpc.pb.h"
#include "shoal/v1/vector_service.grpc.pb.h"

namespace shoal::rpc {
namespace {

using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;

// A DB in a fresh temporary directory, removed with it.
class TempDB {
 public:
  TempDB() {
    std::string tmpl = ::testing::TempDir() + "rpc_server_test_XXXXXX";
    EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto db = DB::Open(dir_, Options{});
    EXPECT_TRUE(db.ok()) << db.status();
    if (db.ok()) db_ = *std::move(db);
  }
  ~TempDB() {
    db_.reset();
    std::filesystem::remove_all(dir_);
  }
  DB* get() { return db_.get(); }

 private:
  std::string dir_;
  std::unique_ptr<DB> db_;
};

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(db_.get(), options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_GT(server_->port(), 0);
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    collections_ = v1::CollectionService::NewStub(channel_);
    vectors_ = v1::VectorService::NewStub(channel_);
    search_ = v1::SearchService::NewStub(channel_);
    health_ = grpc::health::v1::Health::NewStub(channel_);
  }

  grpc::Status Create(const std::string& name, uint32_t dimension) {
    grpc::ClientContext context;
    v1::CreateCollectionRequest request;
    request.mutable_spec()->set_name(name);
    request.mutable_spec()->set_dimension(dimension);
    request.mutable_spec()->set_metric(v1::METRIC_L2);
    v1::CreateCollectionResponse response;
    return collections_->CreateCollection(&context, request, &response);
  }

  // Creates a 1-d collection `name` holding keys 0..n-1, key i at the point i.
  void CreateLine(const std::string& name, int n) {
    ASSERT_TRUE(Create(name, 1).ok());
    v1::UpsertRequest upsert;
    upsert.set_collection(name);
    for (int i = 0; i < n; ++i) {
      v1::Record* r = upsert.add_records();
      r->mutable_key()->set_id(i);
      r->add_vector(static_cast<float>(i));
    }
    grpc::ClientContext context;
    v1::UpsertResponse upserted;
    ASSERT_TRUE(vectors_->Upsert(&context, upsert, &upserted).ok());
    ASSERT_EQ(upserted.upserted(), static_cast<uint64_t>(n));
  }

  HealthCheckResponse::ServingStatus Health(const std::string& service) {
    grpc::ClientContext context;
    HealthCheckRequest request;
    request.set_service(service);
    HealthCheckResponse response;
    grpc::Status status = health_->Check(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.status();
  }

  TempDB db_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::CollectionService::Stub> collections_;
  std::unique_ptr<v1::VectorService::Stub> vectors_;
  std::unique_ptr<v1::SearchService::Stub> search_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

TEST_F(ServerTest, HealthIsServingForServerAndEachService) {
  EXPECT_EQ(Health(""), HealthCheckResponse::SERVING);
  EXPECT_EQ(Health("shoal.v1.SearchService"), HealthCheckResponse::SERVING);
  EXPECT_EQ(Health("shoal.v1.VectorService"), HealthCheckResponse::SERVING);
  EXPECT_EQ(Health("shoal.v1.CollectionService"), HealthCheckResponse::SERVING);
}

TEST_F(ServerTest, SetNotServingIsVisibleWhileRpcsStillWork) {
  ASSERT_TRUE(Create("docs", 2).ok());
  server_->SetNotServing();
  EXPECT_EQ(Health(""), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(Health("shoal.v1.SearchService"), HealthCheckResponse::NOT_SERVING);
  grpc::ClientContext context;
  v1::ListCollectionsResponse response;
  ASSERT_TRUE(collections_->ListCollections(&context, {}, &response).ok());
  EXPECT_EQ(response.collections_size(), 1);
}

TEST_F(ServerTest, DbErrorsKeepTheirCanonicalCode) {
  ASSERT_TRUE(Create("docs", 2).ok());
  EXPECT_EQ(Create("docs", 2).error_code(), grpc::ALREADY_EXISTS);
  grpc::ClientContext context;
  v1::DescribeCollectionRequest request;
  request.set_name("missing");
  v1::DescribeCollectionResponse response;
  EXPECT_EQ(collections_->DescribeCollection(&context, request, &response).error_code(),
            grpc::NOT_FOUND);
}

TEST_F(ServerTest, CreateWithoutMetricNamesTheField) {
  grpc::ClientContext context;
  v1::CreateCollectionRequest request;
  request.mutable_spec()->set_name("docs");
  request.mutable_spec()->set_dimension(4);
  v1::CreateCollectionResponse response;
  grpc::Status status = collections_->CreateCollection(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("spec.metric"), std::string::npos)
      << status.error_message();
}

TEST_F(ServerTest, UpsertShapeErrorsNameTheField) {
  ASSERT_TRUE(Create("docs", 2).ok());
  grpc::ClientContext context;
  v1::UpsertRequest request;
  request.set_collection("docs");
  v1::UpsertResponse response;
  grpc::Status status = vectors_->Upsert(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "records: empty");

  grpc::ClientContext context2;
  request.add_records()->mutable_key()->set_id(1);
  request.mutable_records(0)->add_vector(1);
  request.add_records();  // no key
  status = vectors_->Upsert(&context2, request, &response);
  EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("records[1].key"), std::string::npos);
}

TEST_F(ServerTest, SearchChecksDeclaredDimension) {
  ASSERT_TRUE(Create("docs", 4).ok());
  v1::SearchRequest request;
  request.set_collection("docs");
  request.set_k(1);
  request.set_dimension(4);
  for (int i = 0; i < 10; ++i) request.add_queries(0);
  grpc::ClientContext context;
  v1::SearchResponse response;
  grpc::Status status = search_->Search(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "queries: length 10 is not a multiple of dimension 4");

  request.set_dimension(2);  // 10 is a multiple of 2, but the collection has 4
  grpc::ClientContext context2;
  status = search_->Search(&context2, request, &response);
  EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("dimension: 2"), std::string::npos)
      << status.error_message();
}

TEST_F(ServerTest, SearchReturnsOneResultPerQuery) {
  ASSERT_NO_FATAL_FAILURE(CreateLine("docs", 5));

  v1::SearchRequest request;
  request.set_collection("docs");
  request.set_k(2);
  request.add_queries(0.1f);
  request.add_queries(3.9f);
  grpc::ClientContext context;
  v1::SearchResponse response;
  ASSERT_TRUE(search_->Search(&context, request, &response).ok());
  ASSERT_EQ(response.results_size(), 2);
  EXPECT_EQ(response.results(0).hits(0).key().id(), 0u);
  EXPECT_EQ(response.results(1).hits(0).key().id(), 4u);
  EXPECT_EQ(response.results(1).hits_size(), 2);
}

// A call of 5,000 queries gets the same answers as single ones, and the small calls after it are
// served too.
TEST_F(ServerTest, ABigSearchIsAnsweredLikeASmallOne) {
  ASSERT_NO_FATAL_FAILURE(CreateLine("docs", 5));

  for (int queries : {1, 5000, 1}) {
    v1::SearchRequest request;
    request.set_collection("docs");
    request.set_k(1);
    for (int q = 0; q < queries; ++q) request.add_queries(static_cast<float>(q % 5) + 0.1f);
    grpc::ClientContext search_context;
    v1::SearchResponse response;
    grpc::Status status = search_->Search(&search_context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.results_size(), queries);
    for (int q = 0; q < queries; ++q) {
      ASSERT_EQ(response.results(q).hits(0).key().id(), static_cast<uint64_t>(q % 5)) << q;
    }
  }
}

// A stream left open (the SDK's SearchSession between searches) is ended by Shutdown, which
// returns once the grace has passed.
TEST_F(ServerTest, ShutdownEndsAnOpenSearchStream) {
  ASSERT_TRUE(Create("docs", 1).ok());
  grpc::ClientContext context;
  auto stream = search_->SearchStream(&context);
  v1::SearchStreamRequest request;
  request.set_sequence(7);
  request.mutable_search()->set_collection("docs");
  request.mutable_search()->set_k(1);
  request.mutable_search()->add_queries(0.5f);
  ASSERT_TRUE(stream->Write(request));
  v1::SearchStreamResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.sequence(), 7u);
  EXPECT_EQ(response.code(), 0);
  server_->Shutdown(absl::Milliseconds(100));
  EXPECT_FALSE(stream->Read(&response));
  EXPECT_FALSE(stream->Finish().ok());
}

TEST_F(ServerTest, ShutdownIsIdempotent) {
  server_->Shutdown(absl::Milliseconds(100));
  server_->Shutdown(absl::Milliseconds(100));
}

TEST(ServerStartTest, RefusesNonLoopbackWithoutAllowRemote) {
  TempDB db;
  ServerOptions options;
  options.listen_address = "0.0.0.0:0";
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(db.get(), options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(server.status().message().find("--insecure-allow-remote"), std::string::npos);
}

// Issue 20: --metrics-listen 0.0.0.0:P was accepted without keys; /metrics names every
// collection.
TEST(ServerStartTest, RefusesNonLoopbackMetricsWithoutAllowRemote) {
  TempDB db;
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.metrics_listen = "0.0.0.0:0";
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(db.get(), options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kPermissionDenied) << server.status();
  EXPECT_NE(server.status().message().find("metrics_listen"), std::string::npos);
  options.metrics_listen = "127.0.0.1:0";
  server = Server::Start(db.get(), options);
  EXPECT_TRUE(server.ok()) << server.status();
}

// Issue 23: the web console shows every collection and can write: the same rule again.
TEST(ServerStartTest, ConsoleFollowsTheLoopbackRule) {
  TempDB db;
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.console_listen = "0.0.0.0:0";
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(db.get(), options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kPermissionDenied) << server.status();
  EXPECT_EQ(server.status().message().rfind("console_listen: ", 0), 0u) << server.status();

  const std::string keys = ::testing::TempDir() + "server_test_console_keys";
  std::ofstream(keys) << "admin 0123456789abcdef0123 ops\n";
  options.key_file = keys;
  server = Server::Start(db.get(), options);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_GT((*server)->console_port(), 0);
  server->reset();

  options.key_file.clear();
  options.console_listen = "127.0.0.1:0";
  server = Server::Start(db.get(), options);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->console_port();
  EXPECT_GT(port, 0);
  // A taken console port fails the start, naming the option.
  options.console_listen = absl::StrCat("127.0.0.1:", port);
  absl::StatusOr<std::unique_ptr<Server>> second = Server::Start(db.get(), options);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
  EXPECT_NE(second.status().message().find("console_listen"), std::string::npos);
  std::filesystem::remove(keys);
}

TEST(ServerStartTest, BindFailureIsUnavailable) {
  TempDB db;
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<Server>> first = Server::Start(db.get(), options);
  ASSERT_TRUE(first.ok()) << first.status();
  options.listen_address = (*first)->address();
  absl::StatusOr<std::unique_ptr<Server>> second = Server::Start(db.get(), options);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
}

}  // namespace
}  // namespace shoal::rpc

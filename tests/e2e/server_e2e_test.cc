// End-to-end: a real `shoald` child process over a fresh data directory, driven through the
// generated gRPC clients. Only loopback addresses are ever bound.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/test_seed.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "shoal/v1/collection_service.grpc.pb.h"
#include "shoal/v1/search_service.grpc.pb.h"
#include "shoal/v1/vector_service.grpc.pb.h"
#include "tests/e2e/shoald_process.h"

namespace shoal::e2e {
namespace {

using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;

// Every RPC gets a deadline so that a wedged server fails the test instead of hanging it.
std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return context;
}

class ServerE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_dir_ = MakeTempDir();
    ASSERT_FALSE(data_dir_.empty());
    StartServer();
  }

  void TearDown() override {
    shoald_.reset();  // SIGKILLs a child still running
    std::filesystem::remove_all(data_dir_);
  }

  void StartServer(const std::vector<std::string>& extra_args = {}) {
    shoald_ = std::make_unique<ShoaldProcess>();
    absl::Status started = shoald_->Start(data_dir_, extra_args);
    ASSERT_TRUE(started.ok()) << started;
    channel_ = grpc::CreateChannel(shoald_->address(), grpc::InsecureChannelCredentials());
    collections_ = v1::CollectionService::NewStub(channel_);
    vectors_ = v1::VectorService::NewStub(channel_);
    search_ = v1::SearchService::NewStub(channel_);
    health_ = grpc::health::v1::Health::NewStub(channel_);
  }

  // Drops the client connection. gRPC's server shutdown waits (up to the grace period) for
  // connections to close, and an idle synchronous client never notices the server's GOAWAY.
  void Disconnect() {
    collections_.reset();
    vectors_.reset();
    search_.reset();
    health_.reset();
    channel_.reset();
  }

  grpc::Status Create(const std::string& name, uint32_t dimension,
                      v1::Metric metric = v1::METRIC_L2) {
    v1::CreateCollectionRequest request;
    request.mutable_spec()->set_name(name);
    request.mutable_spec()->set_dimension(dimension);
    request.mutable_spec()->set_metric(metric);
    v1::CreateCollectionResponse response;
    return collections_->CreateCollection(Context().get(), request, &response);
  }

  grpc::Status Describe(const std::string& name, v1::CollectionInfo* info) {
    v1::DescribeCollectionRequest request;
    request.set_name(name);
    v1::DescribeCollectionResponse response;
    grpc::Status status = collections_->DescribeCollection(Context().get(), request, &response);
    *info = response.collection();
    return status;
  }

  // Upserts `vectors` (row-major, `dimension` floats each) under ids first_id, first_id+1, ...
  grpc::Status UpsertIds(const std::string& collection, uint32_t dimension,
                         const std::vector<float>& vectors, uint64_t first_id = 0,
                         bool sync = false) {
    v1::UpsertRequest request;
    request.set_collection(collection);
    request.set_sync(sync);
    for (size_t i = 0; i * dimension < vectors.size(); ++i) {
      v1::Record* record = request.add_records();
      record->mutable_key()->set_id(first_id + i);
      record->mutable_vector()->Add(vectors.begin() + i * dimension,
                                    vectors.begin() + (i + 1) * dimension);
    }
    v1::UpsertResponse response;
    return vectors_->Upsert(Context().get(), request, &response);
  }

  grpc::Status Search(const std::string& collection, const std::vector<float>& queries, uint32_t k,
                      v1::SearchResponse* response) {
    v1::SearchRequest request;
    request.set_collection(collection);
    request.mutable_queries()->Add(queries.begin(), queries.end());
    request.set_k(k);
    return search_->Search(Context().get(), request, response);
  }

  HealthCheckResponse::ServingStatus Health(const std::string& service = "") {
    HealthCheckRequest request;
    request.set_service(service);
    HealthCheckResponse response;
    grpc::Status status = health_->Check(Context().get(), request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.status();
  }

  std::string data_dir_;
  std::unique_ptr<ShoaldProcess> shoald_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::CollectionService::Stub> collections_;
  std::unique_ptr<v1::VectorService::Stub> vectors_;
  std::unique_ptr<v1::SearchService::Stub> search_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

TEST_F(ServerE2eTest, HealthIsServing) {
  EXPECT_EQ(Health(), HealthCheckResponse::SERVING);
  EXPECT_EQ(Health("shoal.v1.SearchService"), HealthCheckResponse::SERVING);
}

TEST_F(ServerE2eTest, CreateListDescribeDropCollection) {
  ASSERT_TRUE(Create("docs", 4).ok());
  ASSERT_TRUE(Create("images", 8, v1::METRIC_COSINE).ok());

  v1::ListCollectionsResponse list;
  ASSERT_TRUE(collections_->ListCollections(Context().get(), {}, &list).ok());
  ASSERT_EQ(list.collections_size(), 2);
  EXPECT_EQ(list.collections(0).spec().name(), "docs");
  EXPECT_EQ(list.collections(1).spec().name(), "images");

  v1::CollectionInfo info;
  ASSERT_TRUE(Describe("images", &info).ok());
  EXPECT_EQ(info.spec().dimension(), 8u);
  EXPECT_EQ(info.spec().metric(), v1::METRIC_COSINE);
  EXPECT_EQ(info.num_vectors(), 0u);

  v1::DropCollectionRequest drop;
  drop.set_name("docs");
  v1::DropCollectionResponse dropped;
  ASSERT_TRUE(collections_->DropCollection(Context().get(), drop, &dropped).ok());
  EXPECT_EQ(Describe("docs", &info).error_code(), grpc::NOT_FOUND);
  EXPECT_EQ(collections_->DropCollection(Context().get(), drop, &dropped).error_code(),
            grpc::NOT_FOUND);
}

TEST_F(ServerE2eTest, UpsertGetDelete) {
  ASSERT_TRUE(Create("docs", 2).ok());
  v1::UpsertRequest upsert;
  upsert.set_collection("docs");
  upsert.set_sync(true);
  v1::Record* record = upsert.add_records();
  record->mutable_key()->set_name("doc-1");
  record->add_vector(1.0f);
  record->add_vector(2.0f);
  (*record->mutable_attributes())["year"].set_int_value(2024);
  (*record->mutable_attributes())["lang"].set_string_value("en");
  record->add_tags("draft");
  record = upsert.add_records();
  record->mutable_key()->set_id(7);
  record->add_vector(3.0f);
  record->add_vector(4.0f);
  v1::UpsertResponse upserted;
  ASSERT_TRUE(vectors_->Upsert(Context().get(), upsert, &upserted).ok());
  EXPECT_EQ(upserted.upserted(), 2u);

  v1::GetRequest get;
  get.set_collection("docs");
  get.add_keys()->set_name("doc-1");
  get.add_keys()->set_name("7");  // string "7" is not id 7
  get.add_keys()->set_id(7);
  v1::GetResponse got;
  ASSERT_TRUE(vectors_->Get(Context().get(), get, &got).ok());
  ASSERT_EQ(got.results_size(), 3);
  ASSERT_TRUE(got.results(0).found());
  const v1::Record& doc = got.results(0).record();
  EXPECT_EQ(doc.key().name(), "doc-1");
  EXPECT_EQ(std::vector<float>(doc.vector().begin(), doc.vector().end()),
            (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(doc.attributes().at("year").int_value(), 2024);
  EXPECT_EQ(doc.attributes().at("lang").string_value(), "en");
  ASSERT_EQ(doc.tags_size(), 1);
  EXPECT_EQ(doc.tags(0), "draft");
  EXPECT_FALSE(got.results(1).found());
  EXPECT_TRUE(got.results(2).found());

  v1::DeleteRequest del;
  del.set_collection("docs");
  del.add_keys()->set_id(7);
  del.add_keys()->set_id(8);  // absent: ignored
  v1::DeleteResponse deleted;
  ASSERT_TRUE(vectors_->Delete(Context().get(), del, &deleted).ok());
  EXPECT_EQ(deleted.deleted(), 1u);
  ASSERT_TRUE(vectors_->Get(Context().get(), get, &got).ok());
  EXPECT_TRUE(got.results(0).found());
  EXPECT_FALSE(got.results(2).found());
}

TEST_F(ServerE2eTest, SearchReturnsTheNearestKeys) {
  constexpr uint32_t kDim = 8;
  constexpr int kCount = 200;
  constexpr uint32_t kK = 5;
  const uint32_t seed = base::TestSeed();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> data(kCount * kDim);
  for (float& x : data) x = uniform(rng);
  ASSERT_TRUE(Create("points", kDim).ok());
  ASSERT_TRUE(UpsertIds("points", kDim, data).ok());

  // Three queries in one request, checked against brute force.
  constexpr int kQueries = 3;
  std::vector<float> queries(kQueries * kDim);
  for (float& x : queries) x = uniform(rng);
  v1::SearchResponse response;
  grpc::Status status = Search("points", queries, kK, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.results_size(), kQueries);
  for (int q = 0; q < kQueries; ++q) {
    std::vector<std::pair<float, uint64_t>> expected;
    for (int i = 0; i < kCount; ++i) {
      float d = 0;
      for (uint32_t j = 0; j < kDim; ++j) {
        const float diff = queries[q * kDim + j] - data[i * kDim + j];
        d += diff * diff;
      }
      expected.emplace_back(d, i);
    }
    std::sort(expected.begin(), expected.end());
    const v1::QueryResult& result = response.results(q);
    ASSERT_EQ(result.hits_size(), static_cast<int>(kK));
    for (uint32_t h = 0; h < kK; ++h) {
      EXPECT_EQ(result.hits(h).key().id(), expected[h].second) << "query " << q << " hit " << h;
      EXPECT_NEAR(result.hits(h).distance(), expected[h].first, 1e-4);
    }
  }
}

TEST_F(ServerE2eTest, ErrorsCarryCanonicalCodesAndFieldNames) {
  ASSERT_TRUE(Create("docs", 4).ok());
  EXPECT_EQ(Create("docs", 4).error_code(), grpc::ALREADY_EXISTS);

  v1::CollectionInfo info;
  EXPECT_EQ(Describe("nope", &info).error_code(), grpc::NOT_FOUND);
  EXPECT_EQ(UpsertIds("nope", 4, {1, 2, 3, 4}).error_code(), grpc::NOT_FOUND);
  v1::SearchResponse response;
  EXPECT_EQ(Search("nope", {1, 2, 3, 4}, 1, &response).error_code(), grpc::NOT_FOUND);

  // Second record has 3 floats in a 4-dimensional collection.
  v1::UpsertRequest upsert;
  upsert.set_collection("docs");
  for (int i = 0; i < 2; ++i) {
    v1::Record* record = upsert.add_records();
    record->mutable_key()->set_id(i);
    for (int j = 0; j < 4 - i; ++j) record->add_vector(1.0f);
  }
  v1::UpsertResponse upserted;
  grpc::Status status = vectors_->Upsert(Context().get(), upsert, &upserted);
  EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("records[1].vector"), std::string::npos)
      << status.error_message();

  status = Search("docs", {1, 2, 3}, 1, &response);
  EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("queries"), std::string::npos) << status.error_message();

  status = Create("", 4);
  EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("spec.name"), std::string::npos) << status.error_message();
}

TEST_F(ServerE2eTest, SigtermReportsNotServingThenExitsZero) {
  // The drain period keeps the server answering (health NOT_SERVING) before it stops.
  Disconnect();
  ASSERT_EQ(shoald_->Terminate(), 0) << shoald_->Stderr();
  // An open Watch stream holds gRPC's shutdown for the whole grace period; keep it short.
  StartServer({"--shutdown-drain-ms", "1000", "--shutdown-grace-ms", "500"});

  grpc::ClientContext watch_context;
  watch_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  HealthCheckRequest request;
  std::unique_ptr<grpc::ClientReader<HealthCheckResponse>> watch =
      health_->Watch(&watch_context, request);
  HealthCheckResponse update;
  ASSERT_TRUE(watch->Read(&update));
  EXPECT_EQ(update.status(), HealthCheckResponse::SERVING);

  shoald_->Signal(SIGTERM);
  ASSERT_TRUE(watch->Read(&update));
  EXPECT_EQ(update.status(), HealthCheckResponse::NOT_SERVING);
  // The stream ends when the grace period is over and the server cancels it.
  while (watch->Read(&update)) {
  }
  watch->Finish().IgnoreError();
  watch.reset();
  Disconnect();

  absl::StatusOr<int> exit_status = shoald_->Wait();
  ASSERT_TRUE(exit_status.ok()) << exit_status.status();
  EXPECT_EQ(*exit_status, 0) << shoald_->Stderr();
}

TEST_F(ServerE2eTest, RestartOnTheSameDirectoryKeepsTheData) {
  ASSERT_TRUE(Create("docs", 2).ok());
  ASSERT_TRUE(UpsertIds("docs", 2, {0, 0, 10, 10, 20, 20}, /*first_id=*/100, /*sync=*/true).ok());
  Disconnect();
  ASSERT_EQ(shoald_->Terminate(), 0) << shoald_->Stderr();
  StartServer();
  v1::CollectionInfo info;
  ASSERT_TRUE(Describe("docs", &info).ok());
  EXPECT_EQ(info.spec().dimension(), 2u);
  EXPECT_EQ(info.num_vectors(), 3u);
  v1::GetRequest get;
  get.set_collection("docs");
  get.add_keys()->set_id(101);
  v1::GetResponse got;
  ASSERT_TRUE(vectors_->Get(Context().get(), get, &got).ok());
  ASSERT_TRUE(got.results(0).found());
  EXPECT_EQ(got.results(0).record().vector(0), 10.0f);
  v1::SearchResponse response;
  ASSERT_TRUE(Search("docs", {19, 19}, 1, &response).ok());
  EXPECT_EQ(response.results(0).hits(0).key().id(), 102u);
}

TEST_F(ServerE2eTest, SecondServerOnTheSameDirectoryFailsToStart) {
  ShoaldProcess second;
  absl::StatusOr<int> exit_status =
      second.RunToExit({"--listen", "127.0.0.1:0", "--data", data_dir_});
  ASSERT_TRUE(exit_status.ok()) << exit_status.status();
  EXPECT_EQ(*exit_status, 1) << second.Stderr();
  EXPECT_EQ(Health(), HealthCheckResponse::SERVING);  // the first one is unaffected
}

TEST_F(ServerE2eTest, MessagesAboveTheLimitAreResourceExhausted) {
  Disconnect();
  ASSERT_EQ(shoald_->Terminate(), 0) << shoald_->Stderr();
  StartServer({"--max-message-bytes", "65536"});
  ASSERT_TRUE(Create("docs", 1024).ok());
  // 32 records of 1024 floats: about 128 KiB on the wire.
  std::vector<float> vectors(32 * 1024, 0.5f);
  grpc::Status status = UpsertIds("docs", 1024, vectors);
  EXPECT_EQ(status.error_code(), grpc::RESOURCE_EXHAUSTED) << status.error_message();
  // A request under the limit still works on the same server.
  EXPECT_TRUE(UpsertIds("docs", 1024, std::vector<float>(1024, 0.5f)).ok());
}

TEST(ShoaldStartTest, RefusesNonLoopbackAddressWithoutInsecureFlag) {
  const std::string data_dir = MakeTempDir();
  ShoaldProcess shoald;
  // Refused before binding: nothing ever listens on a non-loopback address.
  absl::StatusOr<int> exit_status = shoald.RunToExit({"--listen", "0.0.0.0:0", "--data", data_dir});
  ASSERT_TRUE(exit_status.ok()) << exit_status.status();
  EXPECT_NE(*exit_status, 0);
  EXPECT_NE(shoald.Stderr().find("--insecure-allow-remote"), std::string::npos) << shoald.Stderr();
  std::filesystem::remove_all(data_dir);
}

TEST(ShoaldStartTest, RejectsUnknownFlagWithUsage) {
  ShoaldProcess shoald;
  absl::StatusOr<int> exit_status = shoald.RunToExit({"--no-such-flag"});
  ASSERT_TRUE(exit_status.ok()) << exit_status.status();
  EXPECT_EQ(*exit_status, 2);
  EXPECT_NE(shoald.Stderr().find("usage: shoald"), std::string::npos) << shoald.Stderr();
}

}  // namespace
}  // namespace shoal::e2e

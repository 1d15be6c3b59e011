// End-to-end: SearchService.SearchStream and the SDK's SearchSession through a real `shoald`
// (with API keys and a rate limit), and shoald's Unix-domain-socket listener. Responses come in
// request order, each with its own status; keys are checked when the stream opens and each
// search is rate-limited; a cancelled or broken stream is replaced by the next search. Tenant
// isolation over the stream is in tenant_e2e_test.cc.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/test_seed.h"
#include "rpc/client/shoal_client.h"
#include "shoal/v1/search_service.grpc.pb.h"
#include "tests/e2e/shoald_process.h"

namespace shoal::e2e {
namespace {

using client::Client;
using client::SearchSession;

constexpr char kAdminKey[] = "admin-key-0123456789abcdef";
constexpr char kReaderKey[] = "reader-key-0123456789abcdef";
constexpr char kLimitedKey[] = "limited-key-0123456789abcdef";
constexpr uint32_t kDimension = 4;

using Hits = std::vector<std::vector<Hit>>;

class SearchStreamE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    ASSERT_FALSE(dir_.empty());
    std::ofstream(dir_ + "/keys") << "admin " << kAdminKey << " ops\n"
                                  << "read-only " << kReaderKey << " reader\n";
    Start();
    admin_ = Connect(kAdminKey);
    ASSERT_TRUE(admin_->CreateCollection({.name = "docs", .dimension = kDimension}).ok());
    std::mt19937 rng(base::TestSeed());
    std::uniform_real_distribution<float> uniform(-1, 1);
    std::vector<Record> records(60);
    for (size_t i = 0; i < records.size(); ++i) {
      records[i].key = uint64_t{i};
      for (uint32_t d = 0; d < kDimension; ++d) records[i].vector.push_back(uniform(rng));
    }
    ASSERT_TRUE(admin_->Upsert("docs", records).ok());
    for (int q = 0; q < 20; ++q) {
      std::vector<float> query;
      for (uint32_t d = 0; d < kDimension; ++d) query.push_back(uniform(rng));
      queries_.push_back(query);
    }
  }
  void TearDown() override {
    admin_.reset();
    shoald_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Start() {
    shoald_ = std::make_unique<ShoaldProcess>();
    absl::Status started = shoald_->Start(
        dir_ + "/data", {"--key-file", dir_ + "/keys", "--listen", "unix:" + Socket()});
    ASSERT_TRUE(started.ok()) << started;
  }
  std::string Socket() const { return dir_ + "/shoald.sock"; }
  std::unique_ptr<Client> Connect(const std::string& key, const std::string& address = "") {
    absl::StatusOr<std::unique_ptr<Client>> c =
        Client::Connect(address.empty() ? shoald_->address() : address, {.api_key = key});
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  v1::SearchStreamRequest RawRequest(uint64_t sequence, uint32_t k,
                                     const std::string& collection = "docs") const {
    v1::SearchStreamRequest request;
    request.set_sequence(sequence);
    request.mutable_search()->set_collection(collection);
    request.mutable_search()->set_k(k);
    for (float x : queries_[sequence % queries_.size()]) request.mutable_search()->add_queries(x);
    return request;
  }

  std::string dir_;
  std::unique_ptr<ShoaldProcess> shoald_;
  std::unique_ptr<Client> admin_;
  std::vector<std::vector<float>> queries_;
};

TEST_F(SearchStreamE2eTest, SessionAnswersEachSearchAsSearchDoes) {
  std::unique_ptr<Client> reader = Connect(kReaderKey);
  std::unique_ptr<SearchSession> session = reader->NewSearchSession();
  for (size_t i = 0; i < queries_.size(); ++i) {
    const SearchParams params{.k = static_cast<uint32_t>(1 + i % 10)};
    absl::StatusOr<Hits> unary = reader->Search("docs", queries_[i], params);
    absl::StatusOr<Hits> streamed = session->Search("docs", queries_[i], params);
    ASSERT_TRUE(unary.ok()) << unary.status();
    ASSERT_TRUE(streamed.ok()) << streamed.status();
    ASSERT_EQ(streamed->size(), 1u);
    EXPECT_EQ(streamed->front().size(), params.k);
    EXPECT_EQ(*streamed, *unary) << "query " << i;
  }
  // Several queries in one search, and statistics.
  std::vector<float> two = queries_[0];
  two.insert(two.end(), queries_[1].begin(), queries_[1].end());
  SearchStats stats, unary_stats;
  absl::StatusOr<Hits> streamed = session->Search("docs", two, {.k = 3, .stats = &stats});
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  EXPECT_EQ(streamed->size(), 2u);
  ASSERT_TRUE(reader->Search("docs", two, {.k = 3, .stats = &unary_stats}).ok());
  EXPECT_EQ(stats.postings_read, unary_stats.postings_read);
  EXPECT_EQ(stats.vectors_scored, unary_stats.vectors_scored);
}

TEST_F(SearchStreamE2eTest, PipelinedRequestsAreAnsweredInOrderEachWithItsOwnStatus) {
  auto channel = grpc::CreateChannel(shoald_->address(), grpc::InsecureChannelCredentials());
  std::unique_ptr<v1::SearchService::Stub> stub = v1::SearchService::NewStub(channel);
  grpc::ClientContext context;
  context.AddMetadata("authorization", std::string("Bearer ") + kReaderKey);
  auto stream = stub->SearchStream(&context);
  std::vector<v1::SearchStreamRequest> requests = {RawRequest(1, 3), RawRequest(2, 0),
                                                   RawRequest(3, 2, "nope"), RawRequest(4, 2),
                                                   RawRequest(5, 5)};
  requests[3].mutable_search()->set_dimension(kDimension / 2);
  // All written before any is read: the server answers them one by one, in order.
  for (const v1::SearchStreamRequest& request : requests) ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->WritesDone());
  std::vector<v1::SearchStreamResponse> responses;
  for (v1::SearchStreamResponse response; stream->Read(&response);) responses.push_back(response);
  grpc::Status finished = stream->Finish();
  EXPECT_TRUE(finished.ok()) << finished.error_message();
  ASSERT_EQ(responses.size(), requests.size());
  for (size_t i = 0; i < responses.size(); ++i) EXPECT_EQ(responses[i].sequence(), i + 1);
  EXPECT_EQ(responses[0].code(), grpc::StatusCode::OK);
  ASSERT_EQ(responses[0].response().results_size(), 1);
  EXPECT_EQ(responses[0].response().results(0).hits_size(), 3);
  EXPECT_EQ(responses[1].code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(responses[1].message().rfind("k:", 0), 0u) << responses[1].message();
  EXPECT_FALSE(responses[1].has_response());
  EXPECT_EQ(responses[2].code(), grpc::StatusCode::NOT_FOUND) << responses[2].message();
  EXPECT_EQ(responses[3].code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(responses[3].message().rfind("dimension:", 0), 0u) << responses[3].message();
  EXPECT_EQ(responses[4].code(), grpc::StatusCode::OK);
  EXPECT_EQ(responses[4].response().results(0).hits_size(), 5);
}

TEST_F(SearchStreamE2eTest, ABadSearchFailsAloneWithSearchsCodeAndMessage) {
  std::unique_ptr<Client> reader = Connect(kReaderKey);
  std::unique_ptr<SearchSession> session = reader->NewSearchSession();
  ASSERT_TRUE(session->Search("docs", queries_[0], {.k = 1}).ok());
  for (const SearchParams& bad : {SearchParams{.k = 0}, SearchParams{.k = 1, .tenant = "t"}}) {
    absl::Status unary = reader->Search("docs", queries_[0], bad).status();
    absl::Status streamed = session->Search("docs", queries_[0], bad).status();
    EXPECT_FALSE(streamed.ok());
    EXPECT_EQ(streamed, unary);
  }
  EXPECT_TRUE(absl::IsNotFound(session->Search("nope", queries_[0], {.k = 1}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      session->Search("docs", std::vector<float>(kDimension - 1, 0.5f), {.k = 1}).status()));
  EXPECT_TRUE(session->Search("docs", queries_[1], {.k = 2}).ok());
}

TEST_F(SearchStreamE2eTest, KeysAreCheckedWhenTheStreamOpens) {
  for (const std::string& key : {std::string(), std::string("wrong-key-0123456789abcdef")}) {
    std::unique_ptr<Client> stranger = Connect(key);
    std::unique_ptr<SearchSession> session = stranger->NewSearchSession();
    absl::Status status = session->Search("docs", queries_[0], {.k = 1}).status();
    EXPECT_TRUE(absl::IsUnauthenticated(status)) << status;
    EXPECT_EQ(status, stranger->Search("docs", queries_[0], {.k = 1}).status());
  }
}

TEST_F(SearchStreamE2eTest, EachSearchTakesARateLimitToken) {
  std::ofstream(dir_ + "/keys", std::ios::app) << "read-only " << kLimitedKey << " limited\n";
  ASSERT_EQ(shoald_->Terminate(), 0);
  shoald_ = std::make_unique<ShoaldProcess>();
  // Three tokens, one more per second: the stream's opening takes one, two searches the rest.
  absl::Status started = shoald_->Start(
      dir_ + "/data",
      {"--key-file", dir_ + "/keys", "--rate-limit-rps", "1", "--rate-limit-burst", "3"});
  ASSERT_TRUE(started.ok()) << started;
  std::unique_ptr<SearchSession> session = Connect(kLimitedKey)->NewSearchSession();
  EXPECT_TRUE(session->Search("docs", queries_[0], {.k = 1}).ok());
  EXPECT_TRUE(session->Search("docs", queries_[1], {.k = 1}).ok());
  // Ten more at once outrun the refill; each refusal fails that search only.
  int limited = 0;
  for (int i = 0; i < 10; ++i) {
    absl::Status status = session->Search("docs", queries_[i], {.k = 1}).status();
    if (status.ok()) continue;
    EXPECT_TRUE(absl::IsResourceExhausted(status)) << status;
    ++limited;
  }
  EXPECT_GT(limited, 0);
}

TEST_F(SearchStreamE2eTest, CancelEndsTheStreamAndTheNextSearchOpensANewOne) {
  std::unique_ptr<Client> reader = Connect(kReaderKey);
  std::unique_ptr<SearchSession> session = reader->NewSearchSession();
  ASSERT_TRUE(session->Search("docs", queries_[0], {.k = 1}).ok());
  session->Cancel();
  ASSERT_TRUE(session->Search("docs", queries_[1], {.k = 1}).ok());
  // Cancels racing searches: each search answers or is cancelled, nothing else.
  std::atomic<bool> done{false};
  std::thread canceller([&] {
    while (!done) {
      session->Cancel();
      std::this_thread::yield();
    }
  });
  int answered = 0, cancelled = 0;
  for (int i = 0; i < 100; ++i) {
    absl::Status status = session->Search("docs", queries_[i % queries_.size()], {.k = 2}).status();
    if (status.ok()) {
      ++answered;
    } else {
      EXPECT_TRUE(absl::IsCancelled(status)) << status;
      ++cancelled;
    }
  }
  done = true;
  canceller.join();
  EXPECT_EQ(answered + cancelled, 100);
  EXPECT_TRUE(session->Search("docs", queries_[2], {.k = 1}).ok());
  // A stream the client cancels mid-way ends CANCELLED on the server too.
  auto channel = grpc::CreateChannel(shoald_->address(), grpc::InsecureChannelCredentials());
  std::unique_ptr<v1::SearchService::Stub> stub = v1::SearchService::NewStub(channel);
  grpc::ClientContext context;
  context.AddMetadata("authorization", std::string("Bearer ") + kReaderKey);
  auto stream = stub->SearchStream(&context);
  ASSERT_TRUE(stream->Write(RawRequest(1, 1)));
  context.TryCancel();
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(session->Search("docs", queries_[3], {.k = 1}).ok());
}

TEST_F(SearchStreamE2eTest, ASessionReopensItsStreamAfterTheServerRestarts) {
  // Over the Unix socket, which keeps its address across the restart.
  std::unique_ptr<Client> reader = Connect(kReaderKey, "unix:" + Socket());
  std::unique_ptr<SearchSession> session = reader->NewSearchSession();
  absl::StatusOr<Hits> before = session->Search("docs", queries_[0], {.k = 3});
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_EQ(shoald_->Terminate(), 0);
  Start();
  absl::StatusOr<Hits> after = session->Search("docs", queries_[0], {.k = 3});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, *before);
  // With no server the search says so, and the next one after a restart is answered.
  ASSERT_EQ(shoald_->Terminate(), 0);
  absl::Status down = session->Search("docs", queries_[0], {.k = 3}).status();
  EXPECT_TRUE(absl::IsUnavailable(down)) << down;
  EXPECT_NE(down.message().find("search stream"), std::string::npos) << down;
  Start();
  // As for a unary call, the channel reconnects with back-off: searches fail fast (UNAVAILABLE)
  // until it has.
  absl::Status again;
  for (const absl::Time give_up = absl::Now() + absl::Seconds(60); absl::Now() < give_up;) {
    again = session->Search("docs", queries_[0], {.k = 3}).status();
    if (!absl::IsUnavailable(again)) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(again.ok()) << again;
}

TEST_F(SearchStreamE2eTest, ServesAUnixSocketBesideTcpAndRemovesItOnShutdown) {
  struct stat info;
  ASSERT_EQ(stat(Socket().c_str(), &info), 0);
  EXPECT_TRUE(S_ISSOCK(info.st_mode));
  std::unique_ptr<Client> local = Connect(kReaderKey, "unix:" + Socket());
  absl::StatusOr<Hits> over_unix = local->Search("docs", queries_[0], {.k = 4});
  absl::StatusOr<Hits> over_tcp = Connect(kReaderKey)->Search("docs", queries_[0], {.k = 4});
  ASSERT_TRUE(over_unix.ok()) << over_unix.status();
  ASSERT_TRUE(over_tcp.ok()) << over_tcp.status();
  EXPECT_EQ(*over_unix, *over_tcp);
  // A second server may not take the socket over.
  ShoaldProcess second;
  absl::StatusOr<int> refused = second.RunToExit(
      {"--listen", "unix:" + Socket(), "--data", dir_ + "/other", "--key-file", dir_ + "/keys"});
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(*refused, 1);
  EXPECT_NE(second.Stderr().find("already listens on unix:"), std::string::npos) << second.Stderr();
  EXPECT_TRUE(local->Search("docs", queries_[0], {.k = 4}).ok());
  ASSERT_EQ(shoald_->Terminate(), 0);
  EXPECT_FALSE(std::filesystem::exists(Socket()));
}

}  // namespace
}  // namespace shoal::e2e

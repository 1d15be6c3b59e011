// Client::Ingest against an in-process server that misbehaves: the SDK returns a result only
// when every batch it sent was acknowledged, whatever status the stream ends with (issue 20,
// MEDIUM 7: a server older than the end marker ends OK after a message it could not parse).
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/client/shoal_client.h"
#include "shoal/v1/vector_service.grpc.pb.h"

namespace shoal::client {
namespace {

using ::testing::HasSubstr;
namespace v1 = ::shoal::v1;

// Acknowledges the first batch, then ends the stream with OK; with `wrong_sequence` the one
// answer names another batch.
class CutShortIngest final : public v1::VectorService::Service {
 public:
  explicit CutShortIngest(bool wrong_sequence) : wrong_sequence_(wrong_sequence) {}

  grpc::Status Ingest(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::IngestResponse, v1::IngestRequest>* stream) override {
    v1::IngestRequest request;
    if (!stream->Read(&request)) return grpc::Status::OK;
    v1::IngestResponse ack;
    ack.set_sequence(request.sequence() + (wrong_sequence_ ? 7 : 0));
    ack.set_upserted(request.records_size());
    ack.set_total_upserted(request.records_size());
    stream->Write(ack);
    return grpc::Status::OK;
  }

 private:
  const bool wrong_sequence_;
};

class ClientIngestTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    service_ = std::make_unique<CutShortIngest>(GetParam());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    auto client = Client::Connect("127.0.0.1:" + std::to_string(port));
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  void TearDown() override {
    client_.reset();
    server_->Shutdown();
  }

  // 30 records of dimension 2 in batches of 10: three batches.
  absl::StatusOr<IngestResult> IngestThreeBatches() {
    std::vector<Record> records(30);
    for (size_t i = 0; i < records.size(); ++i) {
      records[i].key = Key(static_cast<uint64_t>(i));
      records[i].vector = {static_cast<float>(i), 0.0f};
    }
    return client_->Ingest("c", records, {.batch_records = 10, .max_in_flight = 1});
  }

  std::unique_ptr<CutShortIngest> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Client> client_;
};

TEST_P(ClientIngestTest, NeverAResultForBatchesNotAcknowledged) {
  absl::StatusOr<IngestResult> result = IngestThreeBatches();
  ASSERT_FALSE(result.ok()) << "a result for " << result->batches << " of 3 batches";
  if (GetParam()) {
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal) << result.status();
    EXPECT_THAT(result.status().message(), HasSubstr("batch 7 out of order"));
  } else {
    EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << result.status();
    EXPECT_THAT(result.status().message(),
                HasSubstr("1 of 3 batches (10 records) were acknowledged"));
  }
}

INSTANTIATE_TEST_SUITE_P(EndedOkOrOutOfOrder, ClientIngestTest, ::testing::Bool());

}  // namespace
}  // namespace shoal::client

#include "cli/ingest_sender.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace shoal::cli {
namespace {

namespace v1 = ::shoal::v1;

class UpsertSender final : public BatchSender {
 public:
  explicit UpsertSender(const Connection& c) : c_(c) {}
  absl::Status Send(v1::UpsertRequest& batch) override {
    v1::UpsertResponse response;
    return FromGrpc(c_.vectors().Upsert(c_.Context().get(), batch, &response));
  }

 private:
  const Connection& c_;
};

// One Ingest stream, one batch in flight: write it, read its answer, resend after the server's
// back-off. Sequences count batches on this stream.
class StreamSender final : public BatchSender {
 public:
  explicit StreamSender(const Connection& c) : c_(c) {}

  absl::Status Send(v1::UpsertRequest& batch) override {
    if (unary_ != nullptr) return unary_->Send(batch);
    if (stream_ == nullptr) {
      // A stream lives as long as the ingest: no per-call deadline (each batch is bounded by
      // the server's answer; a dead server breaks the stream).
      context_ = c_.Context(std::chrono::hours(24 * 365));
      stream_ = c_.vectors().Ingest(context_.get());
    }
    v1::IngestRequest request;
    request.set_collection(batch.collection());
    request.set_sync(batch.sync());
    request.mutable_records()->Swap(batch.mutable_records());
    while (true) {
      request.set_sequence(next_sequence_++);
      v1::IngestResponse response;
      if (!stream_->Write(request) || !stream_->Read(&response)) {
        absl::Status broken = Broken();
        if (absl::IsUnimplemented(broken) && !acked_) {
          // A server without the Ingest RPC: plain Upserts do the same, one batch per call.
          unary_ = std::make_unique<UpsertSender>(c_);
          batch.mutable_records()->Swap(request.mutable_records());
          return unary_->Send(batch);
        }
        return broken;
      }
      if (response.sequence() != request.sequence()) {
        return absl::InternalError(absl::StrCat("Ingest: answer for batch ", response.sequence(),
                                                ", expected ", request.sequence()));
      }
      if (response.retry_after_ms() == 0) {
        acked_ = true;
        return absl::OkStatus();
      }
      ++backoffs_;
      absl::SleepFor(absl::Milliseconds(response.retry_after_ms()));
    }
  }

  absl::Status Finish() override {
    if (stream_ == nullptr) return absl::OkStatus();
    stream_->WritesDone();
    absl::Status status = FromGrpc(stream_->Finish());
    stream_.reset();
    return status;
  }

 private:
  // The stream ended early: its status says why.
  absl::Status Broken() {
    absl::Status status = FromGrpc(stream_->Finish());
    stream_.reset();
    if (status.ok()) return absl::UnavailableError("Ingest: the server closed the stream early");
    return status;
  }

  const Connection& c_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::IngestRequest, v1::IngestResponse>> stream_;
  uint64_t next_sequence_ = 0;
  bool acked_ = false;
  std::unique_ptr<BatchSender> unary_;  // set when the server lacks Ingest
};

}  // namespace

std::unique_ptr<BatchSender> NewUpsertSender(const Connection& connection) {
  return std::make_unique<UpsertSender>(connection);
}

std::unique_ptr<BatchSender> NewStreamSender(const Connection& connection) {
  return std::make_unique<StreamSender>(connection);
}

}  // namespace shoal::cli

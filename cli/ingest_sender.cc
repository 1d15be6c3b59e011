#include "cli/ingest_sender.h"

#include <deque>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace shoal::cli {
namespace {

namespace v1 = ::shoal::v1;

class UpsertSender final : public BatchSender {
 public:
  explicit UpsertSender(const Connection& c) : c_(c) {}

  absl::Status Send(Batch& batch) {
    v1::UpsertResponse response;
    return FromGrpc(c_.vectors().Upsert(c_.Context().get(), batch.request, &response));
  }

  absl::Status Run(Pipeline& pipeline, const AckFn& on_ack, uint64_t* failed_first) override {
    bool done = false;
    while (std::optional<Batch> batch = pipeline.Pop(/*wait=*/true, &done)) {
      const uint64_t rows = batch->request.records_size();
      if (absl::Status s = Send(*batch); !s.ok()) {
        *failed_first = batch->first;
        return s;
      }
      on_ack(batch->first, rows);
    }
    return absl::OkStatus();
  }

 private:
  const Connection& c_;
};

// One Ingest stream. Batches are written while fewer than `window` are unanswered; answers come
// in order, so the oldest in-flight batch is the one answered. Sequences number the messages
// written on this stream (a resent batch gets a new one).
class StreamSender final : public BatchSender {
 public:
  StreamSender(const Connection& c, int window) : c_(c), window_(window) {}

  absl::Status Run(Pipeline& pipeline, const AckFn& on_ack, uint64_t* failed_first) override {
    // The stream lives as long as the ingest: no per-call deadline (a dead server breaks it).
    auto context = c_.Context(std::chrono::hours(24 * 365));
    context->AddMetadata("shoal-ingest-end-marker", "1");
    auto stream = c_.vectors().Ingest(context.get());
    std::deque<InFlight> in_flight;
    bool drained = false;
    bool answered = false;
    while (true) {
      // Fill the window; block for a batch only when nothing is in flight.
      while (!drained && in_flight.size() < static_cast<size_t>(window_)) {
        std::optional<Batch> batch = pipeline.Pop(/*wait=*/in_flight.empty(), &drained);
        if (!batch.has_value()) break;
        InFlight& f = in_flight.emplace_back(InFlight{batch->first, {}});
        f.request.set_collection(batch->request.collection());
        f.request.set_sync(batch->request.sync());
        f.request.set_tenant(batch->request.tenant());
        f.request.mutable_records()->Swap(batch->request.mutable_records());
        f.request.set_sequence(next_sequence_++);
        if (!stream->Write(f.request)) break;
      }
      if (in_flight.empty()) break;
      v1::IngestResponse response;
      if (!stream->Read(&response)) {
        absl::Status broken = FromGrpc(stream->Finish());
        if (absl::IsUnimplemented(broken) && !answered) {
          return FallBack(in_flight, pipeline, on_ack, failed_first);
        }
        *failed_first = in_flight.front().first;
        return broken.ok() ? absl::UnavailableError("Ingest: the server closed the stream early")
                           : broken;
      }
      answered = true;
      InFlight f = std::move(in_flight.front());
      in_flight.pop_front();
      if (response.sequence() != f.request.sequence()) {
        *failed_first = f.first;
        return absl::InternalError(absl::StrCat("Ingest: answer for message ", response.sequence(),
                                                ", expected ", f.request.sequence()));
      }
      if (response.retry_after_ms() == 0) {
        on_ack(f.first, f.request.records_size());
        continue;
      }
      ++backoffs_;
      absl::SleepFor(absl::Milliseconds(response.retry_after_ms()));
      f.request.set_sequence(next_sequence_++);
      in_flight.push_back(std::move(f));
      if (!stream->Write(in_flight.back().request)) continue;  // Read() reports why
    }
    v1::IngestRequest end;
    end.set_end_of_stream(true);
    stream->WriteLast(end, grpc::WriteOptions());
    absl::Status finished = FromGrpc(stream->Finish());
    if (!finished.ok()) *failed_first = UINT64_MAX;  // no particular batch
    return finished;
  }

 private:
  struct InFlight {
    uint64_t first;
    v1::IngestRequest request;
  };

  // The server has no Ingest RPC: send what was in flight, and the rest, as unary Upserts.
  absl::Status FallBack(std::deque<InFlight>& in_flight, Pipeline& pipeline, const AckFn& on_ack,
                        uint64_t* failed_first) {
    UpsertSender unary(c_);
    for (InFlight& f : in_flight) {
      Batch batch{.first = f.first};
      batch.request.set_collection(f.request.collection());
      batch.request.set_sync(f.request.sync());
      batch.request.set_tenant(f.request.tenant());
      batch.request.mutable_records()->Swap(f.request.mutable_records());
      const uint64_t rows = batch.request.records_size();
      if (absl::Status s = unary.Send(batch); !s.ok()) {
        *failed_first = f.first;
        return s;
      }
      on_ack(f.first, rows);
    }
    return unary.Run(pipeline, on_ack, failed_first);
  }

  const Connection& c_;
  const int window_;
  uint64_t next_sequence_ = 0;
};

}  // namespace

std::unique_ptr<BatchSender> NewUpsertSender(const Connection& connection) {
  return std::make_unique<UpsertSender>(connection);
}

std::unique_ptr<BatchSender> NewStreamSender(const Connection& connection, int window) {
  return std::make_unique<StreamSender>(connection, window);
}

}  // namespace shoal::cli

// Client::NewSearchSession and SearchSession: searches over one SearchService.SearchStream. The
// stream is driven through gRPC's async API on a completion queue of the session's own, waited on
// by the calling thread: that gives each search a deadline (AsyncNext's) without a thread of the
// session's own.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "rpc/client/client_internal.h"
#include "rpc/client/shoal_client.h"

namespace shoal::client {
namespace {

using StreamRequest = v1::SearchStreamRequest;
using StreamResponse = v1::SearchStreamResponse;

// Operations of a stream that may be in flight, as completion-queue tags (bit flags).
// kStart never completes: the call starts with its metadata corked (see Stream's constructor).
enum Op : unsigned { kStart = 1, kWrite = 2, kRead = 4, kWritesDone = 8, kFinish = 16 };

void* TagOf(Op op) { return reinterpret_cast<void*>(static_cast<uintptr_t>(op)); }

// How long closing a healthy stream waits for the server's end before cancelling it.
constexpr absl::Duration kCloseGrace = absl::Seconds(1);

}  // namespace

// One open stream. Exchange and Close are called by the session's one searching thread;
// TryCancel from any thread.
class SearchSession::Stream {
 public:
  enum class Outcome { kAnswered, kBroken, kTimedOut };

  Stream(v1::SearchService::Stub& stub, const ConnectOptions& options) {
    if (!options.api_key.empty()) {
      context_.AddMetadata("authorization", absl::StrCat("Bearer ", options.api_key));
    }
    // The call's metadata goes out with the first search (one write fewer, and StartCall then
    // takes no operation of its own: the writes share its operation set).
    context_.set_initial_metadata_corked(true);
    stream_ = stub.PrepareAsyncSearchStream(&context_, &cq_);
    stream_->StartCall(TagOf(kStart));
  }

  ~Stream() {
    if (pending_ != 0 || !finished_) Close(/*cancel=*/true);
    cq_.Shutdown();
    void* tag;
    bool ok;
    while (cq_.Next(&tag, &ok)) {
    }
  }

  // Sends `request` and waits until `deadline` for the answer.
  Outcome Exchange(const StreamRequest& request, StreamResponse& response, absl::Time deadline) {
    if (broken_) return Outcome::kBroken;
    stream_->Write(request, TagOf(kWrite));
    stream_->Read(&response, TagOf(kRead));
    pending_ |= kWrite | kRead;
    if (!WaitFor(kWrite | kRead, deadline)) return Outcome::kTimedOut;
    if (broken_) return Outcome::kBroken;
    ++answered_;
    return Outcome::kAnswered;
  }

  // Ends the stream and returns its status: after closing our side (waiting at most
  // kCloseGrace for the server's end), or at once with `cancel`.
  grpc::Status Close(bool cancel) {
    if (finished_) return status_;
    if (!cancel && !broken_ && (pending_ & kWrite) == 0) {
      stream_->WritesDone(TagOf(kWritesDone));
      pending_ |= kWritesDone;
    }
    if (cancel) context_.TryCancel();
    stream_->Finish(&status_, TagOf(kFinish));
    pending_ |= kFinish;
    if (!WaitFor(~0u, absl::Now() + kCloseGrace)) {
      context_.TryCancel();
      WaitFor(~0u, absl::InfiniteFuture());
    }
    finished_ = true;
    return status_;
  }

  void TryCancel() {
    cancelled_ = true;
    context_.TryCancel();
  }
  bool cancelled() const { return cancelled_; }
  uint64_t answered() const { return answered_; }

 private:
  // Waits until none of `ops` is in flight; false when `deadline` came first. An operation
  // that completes without success marks the stream broken (the call is over; the others then
  // complete too).
  bool WaitFor(unsigned ops, absl::Time deadline) {
    const auto until = absl::ToChronoTime(deadline);
    while ((pending_ & ops) != 0) {
      void* tag;
      bool ok;
      grpc::CompletionQueue::NextStatus next = cq_.AsyncNext(&tag, &ok, until);
      if (next == grpc::CompletionQueue::TIMEOUT) return false;
      if (next == grpc::CompletionQueue::SHUTDOWN) return true;
      pending_ &= ~static_cast<unsigned>(reinterpret_cast<uintptr_t>(tag));
      if (!ok) broken_ = true;
    }
    return true;
  }

  grpc::ClientContext context_;
  grpc::CompletionQueue cq_;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<StreamRequest, StreamResponse>> stream_;
  unsigned pending_ = 0;
  bool broken_ = false;
  bool finished_ = false;
  std::atomic<bool> cancelled_{false};
  uint64_t answered_ = 0;
  grpc::Status status_;
};

struct SearchSession::Shared {
  std::unique_ptr<v1::SearchService::Stub> stub;
  ConnectOptions options;
  uint64_t sequence = 0;
  absl::Mutex mu;  // guards `stream` against Cancel; the searching thread alone replaces it
  std::unique_ptr<Stream> stream ABSL_GUARDED_BY(mu);
};

std::unique_ptr<SearchSession> Client::NewSearchSession() {
  auto shared = std::make_unique<SearchSession::Shared>();
  shared->stub = v1::SearchService::NewStub(stubs_->channel);
  shared->options = options_;
  return std::unique_ptr<SearchSession>(new SearchSession(std::move(shared)));
}

SearchSession::SearchSession(std::unique_ptr<Shared> shared) : shared_(std::move(shared)) {}

SearchSession::~SearchSession() { DropStream(/*cancel=*/false); }

void SearchSession::Cancel() {
  absl::MutexLock lock(&shared_->mu);
  if (shared_->stream != nullptr) shared_->stream->TryCancel();
}

SearchSession::Stream* SearchSession::CurrentStream() {
  Stream* stream;
  {
    absl::MutexLock lock(&shared_->mu);
    stream = shared_->stream.get();
  }
  // A stream cancelled between searches served no search of this one's: start afresh.
  if (stream != nullptr && stream->cancelled()) {
    DropStream(/*cancel=*/true);
    stream = nullptr;
  }
  if (stream == nullptr) {
    auto fresh = std::make_unique<Stream>(*shared_->stub, shared_->options);
    stream = fresh.get();
    absl::MutexLock lock(&shared_->mu);
    shared_->stream = std::move(fresh);
  }
  return stream;
}

void SearchSession::DropStream(bool cancel) {
  std::unique_ptr<Stream> stream;
  {
    absl::MutexLock lock(&shared_->mu);
    stream = std::move(shared_->stream);
  }
  if (stream != nullptr) stream->Close(cancel);
}

absl::StatusOr<std::vector<std::vector<Hit>>> SearchSession::Search(const std::string& collection,
                                                                    std::span<const float> queries,
                                                                    const SearchParams& params) {
  StreamRequest request;
  internal::SearchToProto(collection, queries, params, *request.mutable_search());
  const absl::Time deadline = absl::Now() + shared_->options.timeout;
  for (int attempt = 0;; ++attempt) {
    Stream* stream = CurrentStream();
    const bool served_before = stream->answered() > 0;
    request.set_sequence(++shared_->sequence);
    StreamResponse response;
    const Stream::Outcome outcome = stream->Exchange(request, response, deadline);
    if (outcome == Stream::Outcome::kAnswered) {
      if (response.sequence() != request.sequence()) {
        DropStream(/*cancel=*/true);
        return absl::InternalError(absl::StrCat("search stream: answer ", response.sequence(),
                                                " to request ", request.sequence()));
      }
      if (response.code() != 0) {
        return absl::Status(static_cast<absl::StatusCode>(response.code()), response.message());
      }
      return internal::HitsFromProto(response.response(), params.stats);
    }
    const bool cancelled = stream->cancelled();
    if (outcome == Stream::Outcome::kTimedOut) {
      DropStream(/*cancel=*/true);
      if (cancelled) return absl::CancelledError("search stream: cancelled");
      return absl::DeadlineExceededError(absl::StrCat(
          "search stream: no answer within ", absl::FormatDuration(shared_->options.timeout)));
    }
    const grpc::Status status = stream->Close(/*cancel=*/false);
    DropStream(/*cancel=*/false);
    if (cancelled) return absl::CancelledError("search stream: cancelled");
    // A stream that had answered may have lost its connection since: one new stream.
    if (served_before && attempt == 0) continue;
    if (status.ok()) {
      return absl::UnavailableError("search stream: the server ended the stream unanswered");
    }
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
        status.error_code() == grpc::StatusCode::CANCELLED) {
      return absl::UnavailableError(absl::StrCat("search stream: ", status.error_message()));
    }
    return internal::FromGrpc(status);
  }
}

}  // namespace shoal::client

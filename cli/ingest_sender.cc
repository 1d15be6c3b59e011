#include "cli/ingest_sender.h"

#include "absl/strings/str_cat.h"

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

}  // namespace

std::unique_ptr<BatchSender> NewUpsertSender(const Connection& connection) {
  return std::make_unique<UpsertSender>(connection);
}

std::unique_ptr<BatchSender> NewStreamSender(const Connection& connection) {
  // The streaming Ingest RPC is not in the wire API yet.
  return std::make_unique<UpsertSender>(connection);
}

}  // namespace shoal::cli

// BatchSender: how `shoal ingest` delivers one batch of records and waits for its
// acknowledgement. One sender per sender thread (not thread-safe); Finish() ends a stream.
//   - UpsertSender: one unary Upsert per batch.
//   - StreamSender: one long-lived streaming Ingest RPC; a batch the server answers with
//     retry_after_ms is resent after that delay.
#ifndef SHOAL_CLI_INGEST_SENDER_H_
#define SHOAL_CLI_INGEST_SENDER_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "cli/connection.h"
#include "shoal/v1/vector_service.pb.h"

namespace shoal::cli {

class BatchSender {
 public:
  virtual ~BatchSender() = default;
  // Delivers `batch` (collection, records, sync set); OK once the server acknowledged it.
  virtual absl::Status Send(::shoal::v1::UpsertRequest& batch) = 0;
  virtual absl::Status Finish() { return absl::OkStatus(); }
  // Batches the server asked to resend later.
  uint64_t backoffs() const { return backoffs_; }

 protected:
  uint64_t backoffs_ = 0;
};

std::unique_ptr<BatchSender> NewUpsertSender(const Connection& connection);
std::unique_ptr<BatchSender> NewStreamSender(const Connection& connection);

}  // namespace shoal::cli

#endif  // SHOAL_CLI_INGEST_SENDER_H_

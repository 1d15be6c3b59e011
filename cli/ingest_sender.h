// BatchSender: how one `shoal ingest` sender thread delivers batches from the Pipeline and
// learns which were acknowledged. Not thread-safe: one per sender thread.
//   - UpsertSender: one unary Upsert per batch.
//   - StreamSender: one streaming Ingest RPC with up to `window` batches in flight (the server
//     answers in order); a batch answered with retry_after_ms is resent after that delay. A
//     server without Ingest (UNIMPLEMENTED before any answer) gets unary Upserts instead.
#ifndef SHOAL_CLI_INGEST_SENDER_H_
#define SHOAL_CLI_INGEST_SENDER_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "cli/connection.h"
#include "cli/ingest_pipeline.h"

namespace shoal::cli {

class BatchSender {
 public:
  using AckFn = std::function<void(uint64_t first_row, uint64_t rows)>;
  virtual ~BatchSender() = default;
  // Sends batches until the pipeline is drained (OK) or a batch fails: then returns the error
  // and sets *failed_first to that batch's first row.
  virtual absl::Status Run(Pipeline& pipeline, const AckFn& on_ack, uint64_t* failed_first) = 0;
  // Batches the server asked to resend later.
  uint64_t backoffs() const { return backoffs_; }

 protected:
  uint64_t backoffs_ = 0;
};

std::unique_ptr<BatchSender> NewUpsertSender(const Connection& connection);
std::unique_ptr<BatchSender> NewStreamSender(const Connection& connection, int window);

}  // namespace shoal::cli

#endif  // SHOAL_CLI_INGEST_SENDER_H_

// ShardLog: each shard's write-ahead log, a NATS JetStream stream (stream
// "shoal_<collection>_<shard>", subject "shoal.<collection>.<shard>", file storage). A write is
// acknowledged once JetStream acknowledges the publish: it is then stored (and, with stream
// replicas > 1, replicated) by NATS, and every replica of the shard will apply it in stream
// order (shard_replica.h).
//
//   SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<ShardLog> log, ShardLog::Connect("nats://..."));
//   SHOAL_ASSIGN_OR_RETURN(uint32_t copies, log->EnsureStream("docs", 0, /*replicas=*/2));
//   SHOAL_ASSIGN_OR_RETURN(uint64_t seq, log->Publish("docs", 0, entry_bytes));
//
// Errors: UNAVAILABLE when NATS or JetStream does not answer (the message says which call and
// what the NATS client said); NOT_FOUND for a stream that does not exist.
//
// Thread safety: every method is thread-safe (the NATS client's connection and JetStream
// context are).
#ifndef SHOAL_CLUSTER_SHARD_LOG_H_
#define SHOAL_CLUSTER_SHARD_LOG_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

// The NATS C client's handles (nats/nats.h), kept out of this header.
struct __natsConnection;
struct __jsCtx;

namespace shoal::cluster {

class ShardLog {
 public:
  // Connects to `url` ("nats://HOST:PORT", or several, comma-separated); the client reconnects
  // by itself for as long as the process lives. Each request waits at most `timeout`.
  static absl::StatusOr<std::unique_ptr<ShardLog>> Connect(const std::string& url,
                                                           absl::Duration timeout);
  ~ShardLog();
  ShardLog(const ShardLog&) = delete;
  ShardLog& operator=(const ShardLog&) = delete;

  // Creates the shard's stream if absent, asking for `replicas` copies and settling for one
  // when JetStream runs on fewer servers. Returns the copies the stream has.
  absl::StatusOr<uint32_t> EnsureStream(const std::string& collection, uint32_t shard,
                                        uint32_t replicas);
  // Appends `payload`; returns its stream sequence once JetStream has stored it.
  absl::StatusOr<uint64_t> Publish(const std::string& collection, uint32_t shard,
                                   const std::string& payload);
  // Appends each (shard, payload) to its shard's stream, all of them in flight at once (one
  // round trip to JetStream, not one per shard); returns their sequences, in order, once
  // JetStream has stored every one. On error (the first, naming the shard) some may be stored.
  absl::StatusOr<std::vector<uint64_t>> PublishAll(
      const std::string& collection, std::span<const std::pair<uint32_t, std::string>> payloads);
  // The sequence of the shard's last entry (0 when empty).
  absl::StatusOr<uint64_t> LastSequence(const std::string& collection, uint32_t shard);
  // The sequence of the shard's first entry still kept (last + 1 when every entry is purged).
  absl::StatusOr<uint64_t> FirstSequence(const std::string& collection, uint32_t shard);
  // Removes the shard's entries before `keep_from` (retention once every replica has applied
  // them; a replica that needs older ones copies the shard from another: shard_replica.h).
  absl::Status Purge(const std::string& collection, uint32_t shard, uint64_t keep_from);
  // Deletes the shard's stream and every entry in it (a dropped collection). NOT_FOUND when
  // it does not exist.
  absl::Status DeleteStream(const std::string& collection, uint32_t shard);

  __jsCtx* jetstream() const { return js_; }
  absl::Duration timeout() const { return timeout_; }

 private:
  struct StreamState {
    uint64_t first = 0;  // the oldest message kept (last + 1 when none is)
    uint64_t last = 0;   // the newest message ever written (0: none)
  };
  absl::StatusOr<StreamState> State(const std::string& collection, uint32_t shard);
  struct AckTable;  // PublishAll's messages in flight (shard_log.cc)
  ShardLog(__natsConnection* connection, __jsCtx* js, std::unique_ptr<AckTable> acks,
           absl::Duration timeout);

  __natsConnection* const connection_;
  __jsCtx* const js_;
  std::unique_ptr<AckTable> acks_;  // PublishAll's acknowledgments (reset first on destruction)
  const absl::Duration timeout_;
};

// An UNAVAILABLE (or NOT_FOUND for a missing stream / consumer) status for a NATS client error.
absl::Status NatsStatus(const std::string& what, int nats_status, int js_error_code);

}  // namespace shoal::cluster

#endif  // SHOAL_CLUSTER_SHARD_LOG_H_

// ShardReplica: one node's copy of one shard. It consumes the shard's JetStream stream in order
// through a durable pull consumer named after the node ("node_<id>"), applies each entry to the
// local collection "<collection>@<shard>", and records the last applied stream sequence
// durably in "<state_dir>/<collection>@<shard>.applied" (written after the batch is synced in
// the local DB; written to a temporary file, fsynced, renamed). A restart resumes after that
// sequence: the consumer is re-created to start there. Upserts and deletes are idempotent, so
// re-applying a tail a crash left unrecorded is safe.
//
//   ShardReplica replica(local_db, log, "n1", spec, /*shard=*/2, "/data/cluster");
//   SHOAL_RETURN_IF_ERROR(replica.Start());
//   SHOAL_RETURN_IF_ERROR(replica.WaitApplied(seq, absl::Seconds(5)));
//
// While NATS is away the thread retries every half second; the replica serves reads of what
// it has applied throughout.
//
// Thread safety: all methods are thread-safe; the consumer runs on the replica's own thread.
#ifndef SHOAL_CLUSTER_SHARD_REPLICA_H_
#define SHOAL_CLUSTER_SHARD_REPLICA_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cluster/shard_log.h"
#include "shoal/db.h"

struct __natsSubscription;  // nats/nats.h

namespace shoal::cluster {

class ShardReplica {
 public:
  // `local` and `log` are not owned and must outlive the replica. `spec` is the sharded
  // collection's (its name without the shard suffix).
  ShardReplica(DB* local, ShardLog* log, std::string node_id, CollectionSpec spec, uint32_t shard,
               std::string state_dir);
  ~ShardReplica();  // Stop()
  ShardReplica(const ShardReplica&) = delete;
  ShardReplica& operator=(const ShardReplica&) = delete;

  // Creates the local collection when absent, reads the applied sequence and starts consuming.
  // Errors: the local DB's (creating the collection), INTERNAL / DATA_LOSS for an unreadable
  // sequence file.
  absl::Status Start();
  void Stop();

  uint64_t applied() const;
  // Waits until the replica has applied `sequence`. UNAVAILABLE after `timeout` (naming both
  // sequences), so the caller may try another replica.
  absl::Status WaitApplied(uint64_t sequence, absl::Duration timeout) const;

  const std::string& local_name() const { return local_name_; }
  uint32_t shard() const { return shard_; }

 private:
  void Run();
  // One fetch-apply-record round; false when the subscription must be made again.
  bool ConsumeOnce(::__natsSubscription* sub);
  absl::Status Apply(const std::string& payload, bool sync);
  absl::Status RecordApplied(uint64_t sequence);
  ::__natsSubscription* Subscribe();

  DB* const local_;
  ShardLog* const log_;
  const std::string node_id_;
  const CollectionSpec spec_;
  const uint32_t shard_;
  const std::string local_name_;
  const std::string state_path_;
  std::atomic<bool> stop_{false};
  std::thread thread_;

  mutable absl::Mutex mu_;
  uint64_t applied_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shoal::cluster

#endif  // SHOAL_CLUSTER_SHARD_REPLICA_H_

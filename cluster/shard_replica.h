// ShardReplica: one node's copy of one shard. It consumes the shard's JetStream stream in order
// through a durable pull consumer named after the node ("node_<id>"), applies each entry to the
// local collection "<collection>@<shard>" (unsynced; each fetch's entries merged into as few
// DB calls as their order allows: shard_apply.h), and records the last applied stream sequence
// durably in "<state_dir>/<collection>@<shard>.applied" at most every kRecordInterval and when
// the stream goes idle (after DB::SyncWrites; written to a temporary file, fsynced, renamed).
// A restart resumes after that sequence: the consumer is re-created to start there. Upserts and
// deletes are idempotent, so re-applying a tail a crash left unrecorded is safe. applied()
// (what reads see) runs ahead of durable_applied() (what the file says; what stream retention
// may purge up to) by at most that interval.
//
//   ShardReplica replica(local_db, log, "n1", spec, /*shard=*/2, "/data/cluster");
//   SHOAL_RETURN_IF_ERROR(replica.Start());
//   SHOAL_RETURN_IF_ERROR(replica.WaitApplied(seq, absl::Seconds(5)));
//
// While NATS is away the thread retries every half second; the replica serves reads of what
// it has applied throughout.
//
// Streams are purged once every replica has applied their entries (ShardLog::Purge). A
// replica whose next sequence is no longer in the stream (it is new, or it comes back to a
// shard it kept long ago) first copies the shard from another replica (`seed`, a logical
// snapshot: that replica's applied sequence X, then every page of its copy), then consumes
// the stream from X + 1. The pages may reflect entries after X as well: re-applying them in
// stream order is idempotent, so the copy ends exact. Its old local data is dropped first.
//
// Thread safety: all methods are thread-safe; the consumer runs on the replica's own thread.
#ifndef SHOAL_CLUSTER_SHARD_REPLICA_H_
#define SHOAL_CLUSTER_SHARD_REPLICA_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cluster/shard_log.h"
#include "shoal/db.h"

struct __natsSubscription;  // nats/nats.h
struct __natsMsg;

namespace shoal::cluster {

// Another replica a shard can be copied from: its applied sequence (its copy reflects at least
// that much), a reader of its copy's pages (ScrollOptions::page_token; with vectors), of its
// tenants (ListTenants pages) and of one record's owner and grantees.
struct SeedSource {
  std::string node_id;
  uint64_t applied = 0;
  std::function<absl::StatusOr<ScrollPage>(const std::string& page_token)> scroll;
  std::function<absl::StatusOr<TenantPage>(const std::string& page_token)> tenants;
  std::function<absl::StatusOr<KeyTenants>(const Key& key)> key_tenants;
};
// Finds a replica of `shard` whose applied sequence is at least `first_kept` - 1 (UNAVAILABLE
// when none is reachable).
using SeedFinder = std::function<absl::StatusOr<SeedSource>(uint32_t shard, uint64_t first_kept)>;

struct ApplyGroup;

class ShardReplica {
 public:
  // How often, at most, the applied sequence is synced and recorded while entries flow.
  static constexpr absl::Duration kRecordInterval = absl::Milliseconds(100);

  // `local` and `log` are not owned and must outlive the replica. `spec` is the sharded
  // collection's (its name without the shard suffix). `seed` may be empty (then a replica
  // behind the stream's retention retries until one is given; tests).
  // `incarnation` is the shard map's (ShardMap::incarnation): a copy whose file recorded
  // another one belongs to an earlier collection of the same name and starts afresh.
  ShardReplica(DB* local, ShardLog* log, std::string node_id, CollectionSpec spec, uint32_t shard,
               std::string state_dir, SeedFinder seed = {}, uint64_t incarnation = 0);
  ~ShardReplica();  // Stop()
  ShardReplica(const ShardReplica&) = delete;
  ShardReplica& operator=(const ShardReplica&) = delete;

  // Creates the local collection when absent, reads the applied sequence and starts consuming.
  // Errors: the local DB's (creating the collection), INTERNAL / DATA_LOSS for an unreadable
  // sequence file.
  absl::Status Start();
  void Stop();

  // The last sequence applied to the local collection (visible to reads).
  uint64_t applied() const;
  // The last sequence recorded durably (<= applied()): a restart resumes after it.
  uint64_t durable_applied() const;
  // Entries of the stream after the last one fetched, as JetStream counted when it delivered
  // it (0 once the stream is idle): how far the copy lags (metrics).
  uint64_t pending() const { return pending_; }
  // Whether the copy has caught up once since Start (applied the stream as far as it reached
  // when the replica first subscribed): until then reads go to other replicas.
  bool ready() const { return ready_; }
  // Waits until the replica has applied `sequence`. UNAVAILABLE after `timeout` (naming both
  // sequences), so the caller may try another replica.
  absl::Status WaitApplied(uint64_t sequence, absl::Duration timeout) const;

  const std::string& local_name() const { return local_name_; }
  // Where the copy named `local_name` keeps its applied sequence under `state_dir`.
  static std::string StatePath(const std::string& state_dir, const std::string& local_name);
  uint32_t shard() const { return shard_; }
  uint64_t incarnation() const { return incarnation_; }

 private:
  void Run();
  // One fetch-apply-record round; false when the subscription must be made again.
  bool ConsumeOnce(::__natsSubscription* sub);
  // Applies a fetch's entries; returns the last sequence applied (entries that are invalid
  // for the DB count as applied: they can never apply) and whether all were.
  std::pair<uint64_t, bool> ApplyFetched(const std::vector<std::pair<uint64_t, ::__natsMsg*>>& msgs,
                                         uint64_t last);
  absl::Status ApplyOne(ApplyGroup& group);
  // Syncs the local DB and records applied() when `force` or kRecordInterval has passed.
  void MaybeRecord(bool force);
  absl::Status RecordApplied(uint64_t sequence);
  // Reads the applied sequence; 0 (and the local copy dropped) when the file is absent or was
  // written for another incarnation.
  absl::StatusOr<uint64_t> ReadApplied();
  ::__natsSubscription* Subscribe();
  // When the stream no longer holds the next sequence: copies the shard from another replica.
  // Copying (shard_copy.cc): the records, and the tenants with each record's owner and
  // grants when the source has tenants.
  absl::Status SeedIfBehind();
  absl::StatusOr<uint64_t> CopyFrom(const SeedSource& source);
  // Creates the source's tenants here; the states to set once the records are in.
  absl::StatusOr<std::vector<std::pair<std::string, TenantState>>> CopyTenants(
      const SeedSource& source);
  absl::Status CopyPageWithTenants(const SeedSource& source, std::vector<Record>& records);

  DB* const local_;
  ShardLog* const log_;
  const std::string node_id_;
  const CollectionSpec spec_;
  const uint32_t shard_;
  const std::string local_name_;
  const std::string state_path_;
  const SeedFinder seed_;
  const uint64_t incarnation_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> ready_{false};
  std::atomic<uint64_t> pending_{0};
  // The stream's last sequence when the replica started (or first could ask): ready_ once
  // applied. Start, then only the thread.
  std::optional<uint64_t> ready_at_;
  std::thread thread_;
  absl::Time last_record_ = absl::InfinitePast();  // the thread's (and Stop's, after it)

  mutable absl::Mutex mu_;
  uint64_t applied_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t durable_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shoal::cluster

#endif  // SHOAL_CLUSTER_SHARD_REPLICA_H_

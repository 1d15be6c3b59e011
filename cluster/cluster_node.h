// ClusterNode: one shoald's membership of a cluster (shoald --cluster-etcd URL --cluster-nats
// URL --node-id ID): registration and the coordinator election (membership.h), the shards this
// node keeps (shard_replica.h, one per shard the shard maps give it, started and stopped as the
// maps change), the shard logs (shard_log.h), and gRPC clients of the other nodes.
//
//   ClusterNodeOptions options{.etcd_url = ..., .nats_url = ..., .node_id = "n1", ...};
//   SHOAL_ASSIGN_OR_RETURN(auto node, ClusterNode::Create(local_db, options));
//   // ... once the gRPC server listens:
//   SHOAL_RETURN_IF_ERROR(node->Start("10.0.0.5:50051"));
//
// The coordinator (the node elected through etcd) writes shard maps: it answers
// CreateShardedCollection, which other nodes forward to it; when a node's lease expires it
// gives that node's shards to live nodes (Rereplicate in shard_map.h), which catch up from the
// shard's stream (or, past its retention, copy the shard from another replica first:
// retention.cc); when a node joins (or comes back after its shards went elsewhere) it moves
// replicas to it one at a time (PlanMove): the target starts its copy and catches up while
// reads keep using the other replicas, then completes the move itself (the one map write not
// made by the coordinator; the source leaves the shard). Every map write is a txn on the map's
// mod_revision, so a write over a newer map fails and is planned again from the new view.
//
// Thread safety: all methods are thread-safe.
#ifndef SHOAL_CLUSTER_CLUSTER_NODE_H_
#define SHOAL_CLUSTER_CLUSTER_NODE_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cluster/etcd_client.h"
#include "cluster/membership.h"
#include "cluster/shard_log.h"
#include "cluster/shard_map.h"
#include "cluster/shard_replica.h"
#include "rpc/client/shoal_client.h"
#include "shoal/db.h"

namespace shoal::cluster {

// Where nodes publish their shard copies' applied sequences (retention.cc).
inline constexpr char kAppliedPrefix[] = "/shoal-applied/";

struct ClusterNodeOptions {
  std::string etcd_url;   // "http://HOST:PORT"
  std::string nats_url;   // "nats://HOST:PORT"
  std::string node_id;    // [A-Za-z0-9_-]{1,64}
  std::string state_dir;  // where applied sequences are kept (created if absent)
  std::string api_key;    // sent to other nodes; "" = none
  absl::Duration lease_ttl = absl::Seconds(5);
  absl::Duration peer_timeout = absl::Seconds(5);  // each node-to-node call
};

// A node that keeps a shard, as reads choose one.
struct Replica {
  std::string node_id;
  std::string address;
  bool local = false;
};

class ClusterNode {
 public:
  // Checks the options (INVALID_ARGUMENT naming the flag) and connects to NATS (UNAVAILABLE).
  // `local` is not owned and must outlive the node.
  static absl::StatusOr<std::unique_ptr<ClusterNode>> Create(DB* local,
                                                             const ClusterNodeOptions& options);
  ~ClusterNode();  // Stop()
  ClusterNode(const ClusterNode&) = delete;
  ClusterNode& operator=(const ClusterNode&) = delete;

  // Registers in etcd as reachable at `advertise` (HOST:PORT of this node's gRPC server) and
  // starts following the cluster. INVALID_ARGUMENT for a bad address, UNAVAILABLE when etcd
  // is away. Before Start the node sees no cluster (no sharded collections).
  absl::Status Start(const std::string& advertise);
  void Stop();

  ClusterView View() const;
  const std::string& node_id() const { return options_.node_id; }
  // The shard map of a sharded collection, by name or by an alias of it (nullopt: neither).
  // The view follows etcd's watch, so a collection another node created a moment ago may be
  // missing from it: on a miss for a name that is not one of this node's own collections (a
  // plain one, or a shard copy "c@s"), the view is read from etcd once more. `fresh` reads it
  // first whatever this node's view holds (admin reads: a collection dropped elsewhere a moment
  // ago is gone).
  std::optional<ShardMap> FindShardMap(std::string_view collection, bool fresh = false) const;
  // Aliases of sharded collections (cluster_aliases.cc): /shoal/aliases/<alias> in etcd, seen
  // by every node's view. Writes `alias` -> `collection` (create: only if absent, else
  // ALREADY_EXISTS; otherwise only if present, else NOT_FOUND) and waits for this node's view.
  // UNAVAILABLE when etcd is away.
  absl::Status PutAlias(const std::string& alias, const std::string& collection, bool create);
  // NOT_FOUND when absent.
  absl::Status DeleteAlias(const std::string& alias);
  // A tenant's cluster-wide quotas (cluster_quotas.cc): writes them to etcd
  // (/shoal/tenant-quotas/<collection>/<tenant>; deleted when both are 0) and waits for this
  // node's view; other nodes see them through their watch. UNAVAILABLE when etcd is away.
  absl::Status PutTenantQuotas(const std::string& collection, const std::string& tenant,
                               const ShardedTenantQuotas& quotas);

  // Creates a sharded collection: on the coordinator, assigns shards to the live nodes, makes
  // the shard streams and writes the shard map; elsewhere, asks the coordinator. Then waits
  // until this node's view has the map. ALREADY_EXISTS, FAILED_PRECONDITION (fewer live nodes
  // than spec.replication), UNAVAILABLE (no coordinator, etcd or NATS away).
  absl::Status CreateShardedCollection(const CollectionSpec& spec);
  // Drops a sharded collection (cluster_drop.cc): on the coordinator, deletes its shard map,
  // then its streams and published applied sequences; elsewhere, asks the coordinator. Then
  // waits until this node's view lacks the map; every node drops its copies as it sees that.
  // NOT_FOUND, UNAVAILABLE (no coordinator, etcd away).
  absl::Status DropShardedCollection(const std::string& name);
  // Moves a replica of the shard from node `from` to node `to` (shoal cluster move): on the
  // coordinator, writes the move into the shard map (ShardMap::move; `to` catches up, then
  // completes it as for a planned move); elsewhere, asks the coordinator. Returns the map's
  // version with the move. NOT_FOUND (no such sharded collection), INVALID_ARGUMENT and
  // FAILED_PRECONDITION as RequestMove (shard_map.h), UNAVAILABLE (no coordinator, etcd away),
  // ABORTED when the map changed meanwhile (retry).
  absl::StatusOr<int64_t> MoveShard(const std::string& collection, uint32_t shard,
                                    const std::string& from, const std::string& to);
  // This node's running shard copies (metrics, tools).
  std::vector<std::shared_ptr<ShardReplica>> LocalReplicas() const;

  // The live replicas of a shard, in the map's order, this node first when it is one.
  std::vector<Replica> Replicas(const ShardMap& map, uint32_t shard) const;
  // This node's running copy of the shard, or nullptr.
  std::shared_ptr<ShardReplica> LocalReplica(const std::string& collection, uint32_t shard) const;
  // A client of the node at `address` (made once, then shared).
  absl::StatusOr<std::shared_ptr<client::Client>> Peer(const std::string& address);
  // A client of its own whose calls may each take up to `timeout` (index builds).
  absl::StatusOr<std::unique_ptr<client::Client>> ConnectPeer(const std::string& address,
                                                              absl::Duration timeout) const;

  // Whether etcd answered the last read (false before Start).
  bool etcd_reachable() const { return View().etcd_reachable; }
  ShardLog& log() { return *log_; }
  DB& local() { return *local_; }

 private:
  ClusterNode(DB* local, ClusterNodeOptions options, std::unique_ptr<ShardLog> log);
  Membership* membership() const;
  // Starts replicas for the shards the view gives this node and stops the others.
  void Reconcile(const ClusterView& view);
  // A change planned on a shard map given the live nodes; true when it changed the map.
  using ShardMapPlan = bool (*)(const std::vector<std::string>& live, ShardMap& map);
  void RewriteShardMaps(const ClusterView& view, ShardMapPlan plan,
                        std::string (*describe)(const ShardMap&));
  void Rereplicate(const ClusterView& view);
  void PlanMoves(const ClusterView& view);
  // Completes the moves whose target is this node and has caught up (every 200 ms).
  void CompleteMoves();
  // Moves, retention: every 200 ms CompleteMoves, every second PublishApplied, every 2 s
  // PurgeStreams.
  void MoveLoop();
  // retention.cc: publishes the applied sequences of this node's copies that changed.
  void PublishApplied();
  absl::StatusOr<uint64_t> PublishedApplied(const std::string& collection, uint32_t shard,
                                            const std::string& node);
  // On the coordinator: purges each shard's stream up to its replicas' lowest applied sequence.
  void PurgeStreams();
  // Another readable replica of the shard that applied at least first_kept - 1.
  absl::StatusOr<SeedSource> FindSeed(const std::string& collection, uint32_t shard,
                                      uint64_t first_kept);
  absl::Status CreateAsCoordinator(const CollectionSpec& spec);
  absl::Status DropAsCoordinator(const std::string& name);
  absl::StatusOr<int64_t> MoveAsCoordinator(const std::string& collection, uint32_t shard,
                                            const std::string& from, const std::string& to);
  // Runs `local` when this node is the coordinator, else `remote` on the coordinator; then waits
  // (up to peer_timeout) until this node's view holds `name` (present_after) or not.
  absl::Status AtCoordinator(const std::string& name, bool present_after,
                             const std::function<absl::Status()>& local,
                             const std::function<absl::Status(client::Client&)>& remote);
  // Drops local shard copies of collections no map names any more, with their files.
  void SweepDropped(const ClusterView& view);

  DB* const local_;
  const ClusterNodeOptions options_;
  EtcdClient etcd_;
  std::unique_ptr<ShardLog> log_;

  // Serializes this coordinator's creates and drops (a create must not make streams anew
  // while a drop of the same name deletes them).
  absl::Mutex admin_mu_;
  mutable absl::Mutex mu_;
  std::string advertise_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Membership> membership_ ABSL_GUARDED_BY(mu_);  // set once, by Start
  // "<collection>@<shard>" -> this node's copy.
  std::map<std::string, std::shared_ptr<ShardReplica>> replicas_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<client::Client>> peers_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stop_moves_{false};
  std::thread mover_;  // MoveLoop, from Start to Stop
  // Only MoveLoop's thread uses these: "<collection>@<shard>" -> published applied sequence;
  // stream -> the sequence it was purged through.
  std::map<std::string, uint64_t> published_;
  std::map<std::string, uint64_t> purged_;
};

}  // namespace shoal::cluster

#endif  // SHOAL_CLUSTER_CLUSTER_NODE_H_

// Membership: this node's place in the cluster, kept in etcd.
//
//   /shoal/nodes/<id>           {"address": "HOST:PORT"}  under this node's lease
//   /shoal/coordinator          "<id>"                    under the coordinator's lease
//   /shoal/collections/<name>   a ShardMap (shard_map.h)  written by the coordinator
//   /shoal/aliases/<alias>      "<collection>"            an alias of a sharded collection
//   /shoal/tenant-quotas/<collection>/<tenant>  {"incarnation", "max_vectors", "max_bytes"}
//                               a tenant's cluster-wide quotas (cluster_quotas.cc)
//
// Start() grants a lease (ttl), registers the node and campaigns for coordinator: an etcd txn
// that writes /shoal/coordinator only if it does not exist (create_revision == 0), on the
// node's lease, so the coordinator's death frees the key when its lease expires and the next
// campaign (every ttl/3, by every node) elects another. A keep-alive thread refreshes the
// lease every ttl/3; when the lease has expired (etcd was away longer than ttl) it grants a new
// one and registers again. A watch thread reads everything under /shoal/ and then follows
// etcd's watch, re-reading on every change; the result is the View, handed to `on_change`.
//
// Thread safety: all methods are thread-safe. `on_change` runs on the watch thread, never
// concurrently with itself.
#ifndef SHOAL_CLUSTER_MEMBERSHIP_H_
#define SHOAL_CLUSTER_MEMBERSHIP_H_

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cluster/etcd_client.h"
#include "cluster/shard_map.h"

namespace shoal::cluster {

inline constexpr char kNodesPrefix[] = "/shoal/nodes/";
inline constexpr char kCoordinatorKey[] = "/shoal/coordinator";
inline constexpr char kCollectionsPrefix[] = "/shoal/collections/";
inline constexpr char kAliasesPrefix[] = "/shoal/aliases/";
inline constexpr char kTenantQuotasPrefix[] = "/shoal/tenant-quotas/";

// A tenant's vector and byte quotas over every shard of a sharded collection (0 = none), for
// the collection's incarnation they were set in (ShardMap::incarnation).
struct ShardedTenantQuotas {
  uint64_t incarnation = 0;
  uint64_t max_vectors = 0;
  uint64_t max_bytes = 0;
};

// What this node last read from etcd.
struct ClusterView {
  std::map<std::string, std::string> nodes;  // live node id -> gRPC address
  std::string coordinator;                   // node id; "" while none is elected
  std::map<std::string, ShardMap> collections;
  std::map<std::string, int64_t> collection_revisions;  // etcd mod_revision of each map
  std::map<std::string, std::string> aliases;  // alias -> sharded collection (cluster_aliases.cc)
  // (collection, tenant) -> its quotas (cluster_quotas.cc)
  std::map<std::pair<std::string, std::string>, ShardedTenantQuotas> tenant_quotas;
  int64_t revision = 0;         // etcd revision of the read
  bool etcd_reachable = false;  // the last read succeeded
};

class Membership {
 public:
  // `etcd` is not owned and must outlive this object.
  Membership(EtcdClient* etcd, std::string node_id, std::string address, absl::Duration ttl);
  ~Membership();  // Stop()
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  // Registers (taking over a key this id left behind), campaigns, reads the view once and
  // starts both threads. UNAVAILABLE when etcd cannot be reached.
  absl::Status Start(std::function<void(const ClusterView&)> on_change);
  // Stops the threads and revokes the lease (the node leaves at once; no-op when not started).
  void Stop();

  ClusterView View() const;
  const std::string& node_id() const { return node_id_; }
  bool IsCoordinator() const;
  // Reads etcd now (instead of waiting for the watch) and returns the new view; called from
  // inside the on-change callback, returns the view being handed to it.
  ClusterView Refresh();

 private:
  absl::Status Register();  // new lease, node key, campaign
  void Campaign();
  void KeepAliveLoop();
  void WatchLoop();

  EtcdClient* const etcd_;
  const std::string node_id_;
  const std::string address_;
  const absl::Duration ttl_;
  std::function<void(const ClusterView&)> on_change_;
  std::atomic<bool> stop_{false};
  std::thread keepalive_;
  std::thread watcher_;

  mutable absl::Mutex mu_;
  int64_t lease_ ABSL_GUARDED_BY(mu_) = 0;
  ClusterView view_ ABSL_GUARDED_BY(mu_);
  absl::Mutex refresh_mu_;  // one Refresh at a time, so views are handed out in order
};

}  // namespace shoal::cluster

#endif  // SHOAL_CLUSTER_MEMBERSHIP_H_

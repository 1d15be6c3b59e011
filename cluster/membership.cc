#include "cluster/membership.h"

#include <iostream>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace shoal::cluster {
namespace {

using Json = nlohmann::json;

// Sleeps up to `duration` in short steps, returning early once `stop` is set.
void SleepUnlessStopped(const std::atomic<bool>& stop, absl::Duration duration) {
  const absl::Time until = absl::Now() + duration;
  while (!stop && absl::Now() < until) absl::SleepFor(absl::Milliseconds(50));
}

}  // namespace

Membership::Membership(EtcdClient* etcd, std::string node_id, std::string address,
                       absl::Duration ttl)
    : etcd_(etcd), node_id_(std::move(node_id)), address_(std::move(address)), ttl_(ttl) {}

Membership::~Membership() { Stop(); }

absl::Status Membership::Register() {
  // A key left by this node's previous life is simply taken over (its old lease expires).
  absl::StatusOr<int64_t> lease = etcd_->GrantLease(ttl_);
  if (!lease.ok()) return lease.status();
  const std::string value = Json{{"address", address_}}.dump();
  if (absl::Status s = etcd_->Put(kNodesPrefix + node_id_, value, *lease); !s.ok()) return s;
  {
    absl::MutexLock lock(&mu_);
    lease_ = *lease;
  }
  Campaign();
  return absl::OkStatus();
}

void Membership::Campaign() {
  int64_t lease;
  {
    absl::MutexLock lock(&mu_);
    lease = lease_;
  }
  if (lease == 0) return;
  // The txn writes only if no coordinator key exists; losing is the normal outcome.
  absl::StatusOr<bool> won = etcd_->CreateIfAbsent(kCoordinatorKey, node_id_, lease);
  if (won.ok() && *won) std::cerr << "shoald: cluster: " << node_id_ << " is coordinator\n";
}

absl::Status Membership::Start(std::function<void(const ClusterView&)> on_change) {
  on_change_ = std::move(on_change);
  if (absl::Status s = Register(); !s.ok()) return s;
  Refresh();
  keepalive_ = std::thread([this] { KeepAliveLoop(); });
  watcher_ = std::thread([this] { WatchLoop(); });
  return absl::OkStatus();
}

void Membership::Stop() {
  if (stop_.exchange(true)) return;
  if (keepalive_.joinable()) keepalive_.join();
  if (watcher_.joinable()) watcher_.join();
  int64_t lease;
  {
    absl::MutexLock lock(&mu_);
    lease = lease_;
    lease_ = 0;
  }
  if (lease != 0) (void)etcd_->RevokeLease(lease);  // best effort: it expires anyway
}

void Membership::KeepAliveLoop() {
  while (!stop_) {
    SleepUnlessStopped(stop_, ttl_ / 3);
    if (stop_) break;
    int64_t lease;
    {
      absl::MutexLock lock(&mu_);
      lease = lease_;
    }
    absl::Status alive = lease == 0 ? absl::NotFoundError("no lease") : etcd_->KeepAlive(lease);
    if (absl::IsNotFound(alive)) {
      std::cerr << "shoald: cluster: lease lost, registering again\n";
      if (absl::Status s = Register(); !s.ok()) {
        std::cerr << "shoald: cluster: " << s << "\n";
        continue;
      }
    } else if (!alive.ok()) {
      continue;  // etcd away: try again; the lease outlives a short outage
    }
    if (View().coordinator.empty()) Campaign();
  }
}

ClusterView Membership::Refresh() {
  // on_change_ runs inside Refresh; a lookup it makes that refreshes again gets the view it is
  // being given (refresh_mu_ is not reentrant).
  thread_local bool refreshing = false;
  if (refreshing) return View();
  absl::MutexLock one_at_a_time(&refresh_mu_);
  refreshing = true;
  absl::Cleanup done = [] { refreshing = false; };
  ClusterView view;
  absl::StatusOr<RangeResult> all = etcd_->RangePrefix("/shoal/");
  if (!all.ok()) {
    absl::MutexLock lock(&mu_);
    view_.etcd_reachable = false;
    return view_;
  }
  view.etcd_reachable = true;
  view.revision = all->revision;
  for (const KeyValue& kv : all->kvs) {
    if (absl::StartsWith(kv.key, kNodesPrefix)) {
      Json node = Json::parse(kv.value, nullptr, false);
      if (node.is_discarded()) continue;
      view.nodes[kv.key.substr(sizeof(kNodesPrefix) - 1)] = node.value("address", "");
    } else if (kv.key == kCoordinatorKey) {
      view.coordinator = kv.value;
    } else if (absl::StartsWith(kv.key, kAliasesPrefix)) {
      view.aliases[kv.key.substr(sizeof(kAliasesPrefix) - 1)] = kv.value;
    } else if (absl::StartsWith(kv.key, kTenantQuotasPrefix)) {
      const std::string rest = kv.key.substr(sizeof(kTenantQuotasPrefix) - 1);
      const size_t slash = rest.find('/');
      Json quotas = Json::parse(kv.value, nullptr, false);
      if (slash == std::string::npos || !quotas.is_object()) continue;
      view.tenant_quotas[{rest.substr(0, slash), rest.substr(slash + 1)}] = {
          .incarnation = quotas.value("incarnation", uint64_t{0}),
          .max_vectors = quotas.value("max_vectors", uint64_t{0}),
          .max_bytes = quotas.value("max_bytes", uint64_t{0})};
    } else if (absl::StartsWith(kv.key, kCollectionsPrefix)) {
      absl::StatusOr<ShardMap> map = DecodeShardMap(kv.value);
      if (!map.ok()) {
        std::cerr << "shoald: cluster: " << map.status() << "\n";
        continue;
      }
      view.collection_revisions[map->spec.name] = kv.mod_revision;
      view.collections[map->spec.name] = *std::move(map);
    }
  }
  {
    absl::MutexLock lock(&mu_);
    view_ = view;
  }
  if (on_change_) on_change_(view);
  return view;
}

void Membership::WatchLoop() {
  while (!stop_) {
    const ClusterView view = Refresh();
    if (!view.etcd_reachable) {
      SleepUnlessStopped(stop_, absl::Milliseconds(500));
      continue;
    }
    // Returns when the stream breaks (etcd restarted) or on Stop; then read everything again.
    (void)etcd_->Watch(
        "/shoal/", view.revision + 1, [this] { Refresh(); }, [this] { return stop_.load(); });
    SleepUnlessStopped(stop_, absl::Milliseconds(200));
  }
}

ClusterView Membership::View() const {
  absl::MutexLock lock(&mu_);
  return view_;
}

bool Membership::IsCoordinator() const {
  absl::MutexLock lock(&mu_);
  return view_.coordinator == node_id_;
}

}  // namespace shoal::cluster

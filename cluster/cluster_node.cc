#include "cluster/cluster_node.h"

#include <filesystem>
#include <iostream>
#include <set>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace shoal::cluster {
namespace {

absl::Status ValidateOptions(const ClusterNodeOptions& o) {
  if (o.etcd_url.empty()) return absl::InvalidArgumentError("--cluster-etcd: required");
  if (o.nats_url.empty()) return absl::InvalidArgumentError("--cluster-nats: required");
  if (o.node_id.empty() || o.node_id.size() > 64 ||
      o.node_id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  "0123456789_-") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node-id: '", o.node_id, "' must match [A-Za-z0-9_-]{1,64}"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ClusterNode>> ClusterNode::Create(
    DB* local, const ClusterNodeOptions& options) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  std::error_code error;
  std::filesystem::create_directories(options.state_dir, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cluster state dir ", options.state_dir, ": ", error.message()));
  }
  absl::StatusOr<std::unique_ptr<ShardLog>> log =
      ShardLog::Connect(options.nats_url, options.peer_timeout);
  if (!log.ok()) return log.status();
  return std::unique_ptr<ClusterNode>(new ClusterNode(local, options, *std::move(log)));
}

ClusterNode::ClusterNode(DB* local, ClusterNodeOptions options, std::unique_ptr<ShardLog> log)
    : local_(local), options_(std::move(options)), etcd_(options_.etcd_url), log_(std::move(log)) {}

ClusterNode::~ClusterNode() { Stop(); }

absl::Status ClusterNode::Start(const std::string& advertise) {
  if (advertise.empty() || advertise.find(':') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--advertise: '", advertise, "' is not HOST:PORT"));
  }
  Membership* membership;
  {
    absl::MutexLock lock(&mu_);
    if (membership_ != nullptr) return absl::FailedPreconditionError("cluster: started twice");
    advertise_ = advertise;
    membership_ =
        std::make_unique<Membership>(&etcd_, options_.node_id, advertise, options_.lease_ttl);
    membership = membership_.get();
  }
  SHOAL_RETURN_IF_ERROR(membership->Start([this](const ClusterView& view) { Reconcile(view); }));
  mover_ = std::thread([this] { MoveLoop(); });
  return absl::OkStatus();
}

Membership* ClusterNode::membership() const {
  absl::MutexLock lock(&mu_);
  return membership_.get();
}

ClusterView ClusterNode::View() const {
  Membership* membership = this->membership();
  return membership == nullptr ? ClusterView{} : membership->View();
}

void ClusterNode::Stop() {
  stop_moves_ = true;
  if (mover_.joinable()) mover_.join();
  if (Membership* membership = this->membership()) membership->Stop();
  std::map<std::string, std::shared_ptr<ShardReplica>> replicas;
  {
    absl::MutexLock lock(&mu_);
    replicas.swap(replicas_);
  }
  for (auto& [name, replica] : replicas) replica->Stop();
}

// On the coordinator: `plan` (shard_map.h: Rereplicate, PlanMove) changes each collection's
// shard map given the live nodes; a changed map is written with a txn on its mod_revision, so
// a stale coordinator's write fails and the next view change tries again.
void ClusterNode::RewriteShardMaps(const ClusterView& view, ShardMapPlan plan,
                                   std::string (*describe)(const ShardMap&)) {
  if (view.coordinator != options_.node_id || !view.etcd_reachable) return;
  std::vector<std::string> live;
  for (const auto& [id, address] : view.nodes) live.push_back(id);
  for (const auto& [name, current] : view.collections) {
    ShardMap map = current;
    if (!plan(live, map)) continue;
    auto revision = view.collection_revisions.find(name);
    if (revision == view.collection_revisions.end()) continue;
    absl::StatusOr<bool> written =
        etcd_.CompareAndPut(kCollectionsPrefix + name, EncodeShardMap(map), revision->second);
    if (written.ok() && *written) {
      std::cerr << "shoald: cluster: " << name << " shard map version " << map.version << ": "
                << describe(map) << "\n";
    }
  }
}

// A shard that lost replicas (their node's lease expired) gets live ones, which catch up from
// the shard's stream.
void ClusterNode::Rereplicate(const ClusterView& view) {
  RewriteShardMaps(view, &cluster::Rereplicate,
                   [](const ShardMap&) -> std::string { return "replicas moved to live nodes"; });
}

// A node that keeps too few shards (it joined, or came back after its shards were
// re-replicated) gets one replica moved to it; the next view change (the target completing the
// move) plans the next one.
void ClusterNode::PlanMoves(const ClusterView& view) {
  RewriteShardMaps(view, &cluster::PlanMove, [](const ShardMap& map) -> std::string {
    return absl::StrCat("moving shard ", map.move->shard, " from ", map.move->from, " to ",
                        map.move->to);
  });
}

// On a move's target: once its copy is ready and has applied the shard's stream as far as it
// reached a moment ago, the move completes (the source leaves the shard). The txn on the map's
// mod_revision makes a write over a newer map fail; the next round reads it again.
void ClusterNode::CompleteMoves() {
  const ClusterView view = View();
  for (const auto& [name, current] : view.collections) {
    if (!current.move || current.move->to != options_.node_id) continue;
    std::shared_ptr<ShardReplica> replica = LocalReplica(name, current.move->shard);
    // Ready, not only caught up: once the source leaves, reads of the shard find this copy
    // only if it serves them (Replicas skips a local copy that is not ready).
    if (replica == nullptr || !replica->ready()) continue;
    absl::StatusOr<uint64_t> last = log_->LastSequence(name, current.move->shard);
    if (!last.ok() || replica->applied() < *last) continue;
    ShardMap map = current;
    CompleteMove(map);
    auto revision = view.collection_revisions.find(name);
    if (revision == view.collection_revisions.end()) continue;
    absl::StatusOr<bool> written =
        etcd_.CompareAndPut(kCollectionsPrefix + name, EncodeShardMap(map), revision->second);
    if (written.ok() && *written) {
      std::cerr << "shoald: cluster: " << name << " shard map version " << map.version
                << ": moved shard " << current.move->shard << " to " << options_.node_id
                << " (applied " << replica->applied() << ")\n";
    }
  }
}

void ClusterNode::MoveLoop() {
  for (uint64_t round = 1; !stop_moves_; ++round) {
    CompleteMoves();
    if (round % 5 == 0) PublishApplied();
    if (round % 10 == 0) PurgeStreams();
    for (int i = 0; i < 4 && !stop_moves_; ++i) absl::SleepFor(absl::Milliseconds(50));
  }
}

void ClusterNode::Reconcile(const ClusterView& view) {
  Rereplicate(view);
  PlanMoves(view);
  std::set<std::string> mine;
  for (const auto& [name, map] : view.collections) {
    for (uint32_t shard = 0; shard < map.replicas.size(); ++shard) {
      const std::vector<std::string>& nodes = map.replicas[shard];
      if (std::find(nodes.begin(), nodes.end(), options_.node_id) == nodes.end()) continue;
      const std::string local_name = ShardCollectionName(name, shard);
      mine.insert(local_name);
      {
        absl::MutexLock lock(&mu_);
        auto running = replicas_.find(local_name);
        if (running != replicas_.end() && running->second->incarnation() == map.incarnation) {
          continue;
        }
        if (running != replicas_.end()) continue;  // of a dropped collection: stopped below
      }
      const std::string collection = name;
      auto replica = std::make_shared<ShardReplica>(
          local_, log_.get(), options_.node_id, map.spec, shard, options_.state_dir,
          [this, collection](uint32_t shard, uint64_t first_kept) {
            return FindSeed(collection, shard, first_kept);
          },
          map.incarnation);
      if (absl::Status s = replica->Start(); !s.ok()) {
        std::cerr << "shoald: cluster: cannot open " << local_name << ": " << s << "\n";
        continue;
      }
      absl::MutexLock lock(&mu_);
      replicas_[local_name] = std::move(replica);
    }
  }
  std::vector<std::shared_ptr<ShardReplica>> dropped;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = replicas_.begin(); it != replicas_.end();) {
      std::optional<std::pair<std::string, uint32_t>> shard = ParseShardCollectionName(it->first);
      auto map = shard ? view.collections.find(shard->first) : view.collections.end();
      const bool current =
          map != view.collections.end() && map->second.incarnation == it->second->incarnation();
      if (mine.contains(it->first) && current) {
        ++it;
        continue;
      }
      dropped.push_back(it->second);
      it = replicas_.erase(it);
    }
  }
  for (auto& replica : dropped) replica->Stop();  // its local data stays until dropped
  SweepDropped(view);
  // A copy stopped for a newer incarnation starts again with it at the next view change;
  // start it now rather than wait for one.
  bool restart = false;
  for (auto& replica : dropped) {
    std::optional<std::pair<std::string, uint32_t>> shard =
        ParseShardCollectionName(replica->local_name());
    restart |= shard && view.collections.contains(shard->first);
  }
  if (restart) Reconcile(view);
}

namespace {

std::optional<ShardMap> MapIn(const ClusterView& view, std::string_view collection) {
  auto it = view.collections.find(std::string(collection));
  if (it != view.collections.end()) return it->second;
  auto alias = view.aliases.find(std::string(collection));
  if (alias == view.aliases.end()) return std::nullopt;
  it = view.collections.find(alias->second);
  if (it == view.collections.end()) return std::nullopt;
  return it->second;
}

}  // namespace

std::optional<ShardMap> ClusterNode::FindShardMap(std::string_view collection, bool fresh) const {
  Membership* membership = this->membership();
  if (membership == nullptr) return std::nullopt;
  if (!fresh) {
    if (std::optional<ShardMap> map = MapIn(membership->View(), collection)) return map;
    if (collection.find('@') != std::string_view::npos) return std::nullopt;  // a shard copy
    if (local_->HasCollection(collection)) return std::nullopt;               // a plain one
  }
  return MapIn(membership->Refresh(), collection);
}

absl::Status ClusterNode::CreateShardedCollection(const CollectionSpec& spec) {
  if (absl::Status s = ValidateShardedSpec(spec); !s.ok()) return s;
  return AtCoordinator(
      spec.name, /*present_after=*/true, [&] { return CreateAsCoordinator(spec); },
      [&](client::Client& coordinator) { return coordinator.CreateCollection(spec).status(); });
}

absl::Status ClusterNode::AtCoordinator(
    const std::string& name, bool present_after, const std::function<absl::Status()>& local,
    const std::function<absl::Status(client::Client&)>& remote) {
  Membership* membership = this->membership();
  if (membership == nullptr) return absl::UnavailableError("cluster: not started yet");
  ClusterView view = membership->View();
  if (view.coordinator.empty()) {
    return absl::UnavailableError("cluster: no coordinator is elected yet; retry");
  }
  if (view.coordinator == options_.node_id) {
    if (absl::Status s = local(); !s.ok()) return s;
  } else {
    auto address = view.nodes.find(view.coordinator);
    if (address == view.nodes.end()) {
      return absl::UnavailableError("cluster: coordinator " + view.coordinator + " is not live");
    }
    absl::StatusOr<std::shared_ptr<client::Client>> peer = Peer(address->second);
    if (!peer.ok()) return peer.status();
    if (absl::Status s = remote(**peer); !s.ok()) return s;
  }
  // Return only once this node routes accordingly.
  const absl::Time deadline = absl::Now() + options_.peer_timeout;
  while (membership->Refresh().collections.contains(name) != present_after) {
    if (absl::Now() > deadline) {
      return absl::UnavailableError(absl::StrCat("cluster: the shard map of ", name, " is not ",
                                                 present_after ? "visible" : "gone", " yet"));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::OkStatus();
}

absl::Status ClusterNode::CreateAsCoordinator(const CollectionSpec& spec) {
  absl::MutexLock admin(&admin_mu_);
  ClusterView view = membership()->Refresh();
  if (!view.etcd_reachable) return absl::UnavailableError("cluster: etcd is not reachable");
  if (view.collections.contains(spec.name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("spec.name: collection '", spec.name, "' already exists"));
  }
  std::vector<std::string> nodes;
  for (const auto& [id, address] : view.nodes) nodes.push_back(id);
  ShardMap map{.spec = spec,
               .version = 1,
               .incarnation = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()))};
  absl::StatusOr<std::vector<std::vector<std::string>>> replicas =
      AssignShards(nodes, spec.shards, spec.replication);
  if (!replicas.ok()) return replicas.status();
  map.replicas = *std::move(replicas);
  map.stream_replicas = spec.replication;
  for (uint32_t shard = 0; shard < spec.shards; ++shard) {
    // A stream left by a drop that failed midway holds an earlier collection's entries.
    if (absl::Status s = log_->DeleteStream(spec.name, shard); !s.ok() && !absl::IsNotFound(s)) {
      return s;
    }
    absl::StatusOr<uint32_t> kept = log_->EnsureStream(spec.name, shard, spec.replication);
    if (!kept.ok()) return kept.status();
    map.stream_replicas = std::min(map.stream_replicas, *kept);
  }
  absl::StatusOr<bool> written =
      etcd_.CompareAndPut(kCollectionsPrefix + spec.name, EncodeShardMap(map), 0);
  if (!written.ok()) return written.status();
  if (!*written) {
    return absl::AlreadyExistsError(
        absl::StrCat("spec.name: collection '", spec.name, "' already exists"));
  }
  return absl::OkStatus();
}

std::vector<Replica> ClusterNode::Replicas(const ShardMap& map, uint32_t shard) const {
  ClusterView view = View();
  std::vector<Replica> out;
  if (shard >= map.replicas.size()) return out;
  for (const std::string& id : map.replicas[shard]) {
    if (!ReadableReplica(map, shard, id)) continue;  // still catching up
    if (id == options_.node_id) {
      if (std::shared_ptr<ShardReplica> mine = LocalReplica(map.spec.name, shard);
          mine != nullptr && mine->ready()) {
        out.insert(out.begin(), Replica{.node_id = id, .local = true});
      }
      continue;
    }
    auto it = view.nodes.find(id);
    if (it != view.nodes.end()) out.push_back({.node_id = id, .address = it->second});
  }
  return out;
}

std::vector<std::shared_ptr<ShardReplica>> ClusterNode::LocalReplicas() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<ShardReplica>> out;
  for (const auto& [name, replica] : replicas_) out.push_back(replica);
  return out;
}

std::shared_ptr<ShardReplica> ClusterNode::LocalReplica(const std::string& collection,
                                                        uint32_t shard) const {
  absl::MutexLock lock(&mu_);
  auto it = replicas_.find(ShardCollectionName(collection, shard));
  return it == replicas_.end() ? nullptr : it->second;
}

absl::StatusOr<std::shared_ptr<client::Client>> ClusterNode::Peer(const std::string& address) {
  absl::MutexLock lock(&mu_);
  if (auto it = peers_.find(address); it != peers_.end()) return it->second;
  client::ConnectOptions options{.api_key = options_.api_key, .timeout = options_.peer_timeout};
  absl::StatusOr<std::unique_ptr<client::Client>> peer = client::Client::Connect(address, options);
  if (!peer.ok()) return peer.status();
  std::shared_ptr<client::Client> shared = *std::move(peer);
  peers_[address] = shared;
  return shared;
}

absl::StatusOr<std::unique_ptr<client::Client>> ClusterNode::ConnectPeer(
    const std::string& address, absl::Duration timeout) const {
  return client::Client::Connect(address, {.api_key = options_.api_key, .timeout = timeout});
}

}  // namespace shoal::cluster

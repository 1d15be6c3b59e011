// ClusterDB's read path: a search fans out to one replica per shard (this node's own copy
// first, the next live replica when one fails) and merges the top k; a get routes each key to
// its shard. With read_your_writes each shard's replica first applies the stream's last entry.
// A shard no replica answered is read again with etcd's map when it is newer.
#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cluster/cluster_db.h"

namespace shoal::cluster {

absl::Status ClusterDB::WaitLocalApplied(std::string_view local_name, uint64_t sequence) const {
  std::optional<std::pair<std::string, uint32_t>> shard = ParseShardCollectionName(local_name);
  std::shared_ptr<ShardReplica> replica =
      shard ? node_->LocalReplica(shard->first, shard->second) : nullptr;
  if (replica != nullptr && !replica->ready()) {
    return absl::UnavailableError(absl::StrCat("collection: '", std::string(local_name),
                                               "' is still catching up on this node"));
  }
  if (sequence == 0) return absl::OkStatus();
  if (replica == nullptr) {
    return absl::UnavailableError(absl::StrCat("collection: '", std::string(local_name),
                                               "' is not a shard copy this node keeps"));
  }
  return replica->WaitApplied(sequence, kApplyWait);
}

absl::Status ClusterDB::WaitShardCopy(std::string_view name,
                                      const ReadConsistency& consistency) const {
  uint64_t sequence = consistency.min_applied_sequence;
  std::optional<std::pair<std::string, uint32_t>> shard = ParseShardCollectionName(name);
  if (consistency.read_your_writes && shard) {
    absl::StatusOr<uint64_t> last = node_->log().LastSequence(shard->first, shard->second);
    if (!last.ok()) return last.status();
    sequence = std::max(sequence, *last);
  }
  return WaitLocalApplied(name, sequence);
}

absl::StatusOr<uint64_t> ClusterDB::ReadSequence(const ShardMap& map, uint32_t shard,
                                                 const ReadConsistency& consistency) const {
  if (!consistency.read_your_writes) return 0;
  return node_->log().LastSequence(map.spec.name, shard);
}

std::optional<ShardMap> ClusterDB::NewerShardMap(const ShardMap& map) const {
  std::optional<ShardMap> fresh = node_->FindShardMap(map.spec.name, /*fresh=*/true);
  if (!fresh || fresh->version <= map.version || fresh->incarnation != map.incarnation) {
    return std::nullopt;
  }
  return fresh;
}

absl::StatusOr<std::vector<std::vector<Hit>>> ClusterDB::SearchShard(
    const ShardMap& map, uint32_t shard, std::span<const float> queries,
    const SearchParams& params) const {
  absl::StatusOr<uint64_t> sequence = ReadSequence(map, shard, params.consistency);
  if (!sequence.ok()) return sequence.status();
  const std::string local_name = ShardCollectionName(map.spec.name, shard);
  SearchParams forwarded = params;
  forwarded.stats = nullptr;
  forwarded.consistency = {.min_applied_sequence = *sequence};
  absl::Status last = absl::UnavailableError("no live replica");
  for (const Replica& replica : node_->Replicas(map, shard)) {
    absl::StatusOr<std::vector<std::vector<Hit>>> hits = absl::UnavailableError("");
    if (replica.local) {
      last = WaitLocalApplied(local_name, *sequence);
      if (last.ok()) hits = local_->Search(local_name, queries, forwarded);
    } else {
      absl::StatusOr<std::shared_ptr<client::Client>> peer = node_->Peer(replica.address);
      hits = peer.ok() ? (*peer)->Search(local_name, queries, forwarded) : peer.status();
    }
    if (hits.ok() || !TryAnotherReplica(hits.status())) return hits;
    last = hits.status();
  }
  if (std::optional<ShardMap> newer = NewerShardMap(map)) {
    return SearchShard(*newer, shard, queries, params);
  }
  return NoReplica(map, shard, last);
}

absl::StatusOr<std::vector<std::vector<Hit>>> ClusterDB::Search(std::string_view collection,
                                                                std::span<const float> queries,
                                                                const SearchParams& params) {
  std::optional<ShardMap> map = node_->FindShardMap(collection);
  if (!map) {
    if (absl::Status s = WaitShardCopy(collection, params.consistency); !s.ok()) return s;
    return local_->Search(collection, queries, params);
  }
  const uint32_t shards = map->spec.shards;
  std::vector<absl::StatusOr<std::vector<std::vector<Hit>>>> parts(
      shards, absl::UnavailableError("not searched"));
  std::vector<std::thread> threads;
  for (uint32_t shard = 0; shard < shards; ++shard) {
    threads.emplace_back([&, shard] { parts[shard] = SearchShard(*map, shard, queries, params); });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<std::vector<Hit>> merged;
  for (uint32_t shard = 0; shard < shards; ++shard) {
    if (!parts[shard].ok()) return parts[shard].status();
    if (merged.empty()) merged.resize(parts[shard]->size());
    for (size_t q = 0; q < parts[shard]->size() && q < merged.size(); ++q) {
      std::vector<Hit>& hits = (*parts[shard])[q];
      merged[q].insert(merged[q].end(), hits.begin(), hits.end());
    }
  }
  for (std::vector<Hit>& hits : merged) {
    std::stable_sort(hits.begin(), hits.end(),
                     [](const Hit& a, const Hit& b) { return a.distance < b.distance; });
    if (hits.size() > params.k) hits.resize(params.k);
  }
  return merged;
}

absl::StatusOr<std::vector<std::optional<Record>>> ClusterDB::GetShard(
    const ShardMap& map, uint32_t shard, std::span<const Key> keys,
    const ReadOptions& options) const {
  absl::StatusOr<uint64_t> sequence = ReadSequence(map, shard, options.consistency);
  if (!sequence.ok()) return sequence.status();
  const std::string local_name = ShardCollectionName(map.spec.name, shard);
  ReadOptions forwarded{.tenant = options.tenant,
                        .consistency = {.min_applied_sequence = *sequence}};
  absl::Status last = absl::UnavailableError("no live replica");
  for (const Replica& replica : node_->Replicas(map, shard)) {
    absl::StatusOr<std::vector<std::optional<Record>>> records = absl::UnavailableError("");
    if (replica.local) {
      last = WaitLocalApplied(local_name, *sequence);
      if (last.ok()) records = local_->Get(local_name, keys, forwarded);
    } else {
      absl::StatusOr<std::shared_ptr<client::Client>> peer = node_->Peer(replica.address);
      records = peer.ok() ? (*peer)->Get(local_name, keys, forwarded) : peer.status();
    }
    if (records.ok() || !TryAnotherReplica(records.status())) return records;
    last = records.status();
  }
  if (std::optional<ShardMap> newer = NewerShardMap(map)) {
    return GetShard(*newer, shard, keys, options);
  }
  return NoReplica(map, shard, last);
}

absl::StatusOr<std::vector<std::optional<Record>>> ClusterDB::Get(std::string_view collection,
                                                                  std::span<const Key> keys,
                                                                  const ReadOptions& options) {
  std::optional<ShardMap> map = node_->FindShardMap(collection);
  if (!map) {
    if (absl::Status s = WaitShardCopy(collection, options.consistency); !s.ok()) return s;
    return local_->Get(collection, keys, options);
  }
  if (keys.empty()) return absl::InvalidArgumentError("keys: empty");
  // Keys grouped by shard, remembering where each answer goes.
  std::map<uint32_t, std::pair<std::vector<Key>, std::vector<size_t>>> groups;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto& group = groups[ShardOfKey(keys[i], map->spec.shards)];
    group.first.push_back(keys[i]);
    group.second.push_back(i);
  }
  std::vector<std::optional<Record>> out(keys.size());
  for (auto& [shard, group] : groups) {
    absl::StatusOr<std::vector<std::optional<Record>>> records =
        GetShard(*map, shard, group.first, options);
    if (!records.ok()) return records.status();
    for (size_t j = 0; j < records->size() && j < group.second.size(); ++j) {
      out[group.second[j]] = std::move((*records)[j]);
    }
  }
  return out;
}

}  // namespace shoal::cluster

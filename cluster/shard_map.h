// ShardMap: which nodes keep which shard of a sharded collection, as the coordinator writes it
// to etcd (/shoal/collections/<name>, JSON) and every node reads it. Plus the pure functions
// every node must agree on: a key's shard (a hash stable across processes and builds), the
// first assignment of shards to nodes, and the names a shard goes by locally and in NATS.
//
//   ShardMap map = {.spec = spec, .version = 1};
//   SHOAL_ASSIGN_OR_RETURN(map.replicas, AssignShards(node_ids, spec.shards, spec.replication));
//   uint32_t shard = ShardOfKey(record.key, map.spec.shards);
//
// Value type; no thread-safety concerns of its own.
#ifndef SHOAL_CLUSTER_SHARD_MAP_H_
#define SHOAL_CLUSTER_SHARD_MAP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "shoal/types.h"

namespace shoal::cluster {

inline constexpr uint32_t kMaxShards = 1024;
inline constexpr uint32_t kMaxReplication = 7;

struct ShardMap {
  CollectionSpec spec;  // spec.shards, spec.replication > 0
  // Raised by every change of `replicas`; nodes act on the highest version they have seen.
  int64_t version = 0;
  // replicas[s]: the node ids that keep shard s, the preferred reader first.
  std::vector<std::vector<std::string>> replicas;
  // Copies JetStream keeps of each shard's stream (min(R, NATS servers)).
  uint32_t stream_replicas = 1;
  // A shard replica moving to a node that keeps fewer shards than its share (PlanMove): `to`
  // is already in replicas[shard] (last) and catches up; reads do not use it until the move
  // completes (CompleteMove), which drops `from`. At most one move per map.
  struct Move {
    uint32_t shard = 0;
    std::string from;
    std::string to;
    bool operator==(const Move&) const = default;
  };
  std::optional<Move> move;
  // Tells this collection from an earlier one of the same name (dropped, then created anew):
  // set once at creation (0 in maps made before it existed). A shard copy records it beside
  // its applied sequence and starts afresh when they differ.
  uint64_t incarnation = 0;
};

std::string EncodeShardMap(const ShardMap& map);
// DATA_LOSS when `json` is not a shard map this code wrote.
absl::StatusOr<ShardMap> DecodeShardMap(const std::string& json);

// Checks spec.name (as a collection name), spec.dimension, spec.shards (1..kMaxShards) and
// spec.replication (1..kMaxReplication): INVALID_ARGUMENT naming the field.
absl::Status ValidateShardedSpec(const CollectionSpec& spec);

// Shard s goes to the R nodes after s in the sorted node list (round robin), so each node
// keeps about S*R/N shards. FAILED_PRECONDITION when there are fewer than R nodes.
absl::StatusOr<std::vector<std::vector<std::string>>> AssignShards(std::vector<std::string> nodes,
                                                                   uint32_t shards,
                                                                   uint32_t replication);

// The replicas after `live` nodes are what is left: each shard keeps its live replicas in order
// and gains the least-loaded live nodes it lacks (ties by id) until it has
// map.spec.replication, or every live node. True (and `map` changed, version + 1) when any
// shard changed.
bool Rereplicate(const std::vector<std::string>& live, ShardMap& map);

// When no move is under way and the most loaded live node keeps at least 2 shards more than
// the least loaded one (a node that just joined keeps none): starts moving one replica from
// the most loaded node (of a shard the least loaded lacks) to the least loaded (ties by id).
// True (and `map` changed, version + 1) when it did.
bool PlanMove(const std::vector<std::string>& live, ShardMap& map);
// Completes map.move: drops `from` from the shard's replicas (when still there) and clears the
// move; version + 1. False when there is no move.
bool CompleteMove(ShardMap& map);
// An operator's move (shoal cluster move): of one replica of `shard` from `from` to `to`, set
// as map.move with `to` added last, version + 1, as PlanMove would. FAILED_PRECONDITION while
// another move is under way; INVALID_ARGUMENT naming the field when `shard` is out of range,
// `from` does not keep it, or `to` is not live or keeps it already.
absl::Status RequestMove(const std::vector<std::string>& live, uint32_t shard,
                         const std::string& from, const std::string& to, ShardMap& map);
// Whether `node` keeps a readable replica of `shard`: listed and not the target of a move.
bool ReadableReplica(const ShardMap& map, uint32_t shard, const std::string& node);

// The shard of `key`: FNV-1a (64-bit) of a kind byte and the key's bytes (a uint64 as 8 bytes
// little-endian), modulo `shards`. Never changes: it decides where stored records live.
uint32_t ShardOfKey(const Key& key, uint32_t shards);

// "<collection>@<shard>": the local collection holding one node's copy of a shard.
std::string ShardCollectionName(const std::string& collection, uint32_t shard);
// The collection and shard of a "<collection>@<shard>" name; nullopt for any other name.
std::optional<std::pair<std::string, uint32_t>> ParseShardCollectionName(std::string_view name);
// JetStream names of the shard's write-ahead log: stream "shoal_<collection>_<shard>" on
// subject "shoal.<collection>.<shard>".
std::string StreamName(const std::string& collection, uint32_t shard);
std::string StreamSubject(const std::string& collection, uint32_t shard);

}  // namespace shoal::cluster

#endif  // SHOAL_CLUSTER_SHARD_MAP_H_

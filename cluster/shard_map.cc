#include "cluster/shard_map.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shoal::cluster {
namespace {

using Json = nlohmann::json;

absl::Status BadMap(const std::string& what) {
  return absl::DataLossError(absl::StrCat("shard map: ", what));
}

}  // namespace

std::string EncodeShardMap(const ShardMap& map) {
  Json json = {{"name", map.spec.name},
               {"dimension", map.spec.dimension},
               {"metric", MetricName(map.spec.metric)},
               {"shards", map.spec.shards},
               {"replication", map.spec.replication},
               {"version", map.version},
               {"stream_replicas", map.stream_replicas},
               {"replicas", map.replicas}};
  if (map.incarnation != 0) json["incarnation"] = map.incarnation;
  if (map.move) {
    json["move"] = {{"shard", map.move->shard}, {"from", map.move->from}, {"to", map.move->to}};
  }
  return json.dump();
}

absl::StatusOr<ShardMap> DecodeShardMap(const std::string& text) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) return BadMap("not a JSON object: " + text);
  ShardMap map;
  try {
    map.spec.name = json.at("name").get<std::string>();
    map.spec.dimension = json.at("dimension").get<uint32_t>();
    std::optional<Metric> metric = ParseMetric(json.at("metric").get<std::string>());
    if (!metric) return BadMap("unknown metric in " + text);
    map.spec.metric = *metric;
    map.spec.shards = json.at("shards").get<uint32_t>();
    map.spec.replication = json.at("replication").get<uint32_t>();
    map.version = json.at("version").get<int64_t>();
    map.stream_replicas = json.value("stream_replicas", 1u);
    map.incarnation = json.value("incarnation", uint64_t{0});
    map.replicas = json.at("replicas").get<std::vector<std::vector<std::string>>>();
    if (json.contains("move")) {
      const Json& move = json.at("move");
      map.move = ShardMap::Move{.shard = move.at("shard").get<uint32_t>(),
                                .from = move.at("from").get<std::string>(),
                                .to = move.at("to").get<std::string>()};
    }
  } catch (const Json::exception& error) {  // nlohmann throws on a missing or mistyped field
    return BadMap(absl::StrCat(error.what(), " in ", text));
  }
  if (map.spec.shards == 0 || map.replicas.size() != map.spec.shards) {
    return BadMap(absl::StrCat("shards ", map.spec.shards, " but ", map.replicas.size(),
                               " replica lists in ", text));
  }
  if (map.move && map.move->shard >= map.spec.shards) {
    return BadMap(absl::StrCat("move of shard ", map.move->shard, " in ", text));
  }
  return map;
}

absl::Status ValidateShardedSpec(const CollectionSpec& spec) {
  const std::string& name = spec.name;
  if (name.empty() || name.size() > kMaxNameBytes || std::isdigit(name[0]) || name[0] == '-' ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
          std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.name: '", name, "' must match [A-Za-z_][A-Za-z0-9_-]{0,63}"));
  }
  if (spec.dimension == 0 || spec.dimension > kMaxDimension) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.dimension: ", spec.dimension, " is not in 1..", kMaxDimension));
  }
  if (spec.shards == 0 || spec.shards > kMaxShards) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.shards: ", spec.shards, " is not in 1..", kMaxShards));
  }
  if (spec.replication == 0 || spec.replication > kMaxReplication) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.replication: ", spec.replication, " is not in 1..", kMaxReplication));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<std::string>>> AssignShards(std::vector<std::string> nodes,
                                                                   uint32_t shards,
                                                                   uint32_t replication) {
  std::sort(nodes.begin(), nodes.end());
  if (nodes.size() < replication) {
    return absl::FailedPreconditionError(absl::StrCat("spec.replication: ", replication,
                                                      " replicas need as many live nodes; ",
                                                      nodes.size(), " are registered"));
  }
  std::vector<std::vector<std::string>> replicas(shards);
  for (uint32_t s = 0; s < shards; ++s) {
    for (uint32_t r = 0; r < replication; ++r) {
      replicas[s].push_back(nodes[(s + r) % nodes.size()]);
    }
  }
  return replicas;
}

bool Rereplicate(const std::vector<std::string>& live, ShardMap& map) {
  std::map<std::string, int> load;
  for (const std::string& node : live) load[node] = 0;
  std::vector<std::vector<std::string>> next(map.replicas.size());
  for (size_t s = 0; s < map.replicas.size(); ++s) {
    for (const std::string& node : map.replicas[s]) {
      if (!load.contains(node)) continue;  // gone: its lease expired
      next[s].push_back(node);
      ++load[node];
    }
  }
  for (std::vector<std::string>& nodes : next) {
    while (nodes.size() < map.spec.replication) {
      const std::string* best = nullptr;
      for (const auto& [node, count] : load) {
        if (std::find(nodes.begin(), nodes.end(), node) != nodes.end()) continue;
        if (best == nullptr || count < load[*best]) best = &node;
      }
      if (best == nullptr) break;  // fewer live nodes than replicas
      nodes.push_back(*best);
      ++load[*best];
    }
  }
  std::optional<ShardMap::Move> move = map.move;
  if (move &&
      (!load.contains(move->to) || std::find(next[move->shard].begin(), next[move->shard].end(),
                                             move->to) == next[move->shard].end())) {
    move.reset();  // its target is gone: the shard keeps what it has
  }
  if (next == map.replicas && move == map.move) return false;
  map.replicas = std::move(next);
  map.move = std::move(move);
  ++map.version;
  return true;
}

bool PlanMove(const std::vector<std::string>& live, ShardMap& map) {
  if (map.move || live.empty()) return false;
  std::map<std::string, int> load;
  for (const std::string& node : live) load[node] = 0;
  for (const auto& nodes : map.replicas) {
    for (const std::string& node : nodes) {
      if (load.contains(node)) ++load[node];
    }
  }
  auto least = std::min_element(load.begin(), load.end(),
                                [](const auto& a, const auto& b) { return a.second < b.second; });
  auto most = std::max_element(load.begin(), load.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most->second - least->second < 2) return false;  // balanced as well as it can be
  for (uint32_t s = 0; s < map.replicas.size(); ++s) {
    std::vector<std::string>& nodes = map.replicas[s];
    if (std::find(nodes.begin(), nodes.end(), most->first) == nodes.end() ||
        std::find(nodes.begin(), nodes.end(), least->first) != nodes.end()) {
      continue;
    }
    nodes.push_back(least->first);
    map.move = ShardMap::Move{.shard = s, .from = most->first, .to = least->first};
    ++map.version;
    return true;
  }
  return false;
}

bool CompleteMove(ShardMap& map) {
  if (!map.move) return false;
  std::vector<std::string>& nodes = map.replicas[map.move->shard];
  nodes.erase(std::remove(nodes.begin(), nodes.end(), map.move->from), nodes.end());
  map.move.reset();
  ++map.version;
  return true;
}

absl::Status RequestMove(const std::vector<std::string>& live, uint32_t shard,
                         const std::string& from, const std::string& to, ShardMap& map) {
  if (map.move) {
    return absl::FailedPreconditionError(absl::StrCat(
        "collection '", map.spec.name, "': shard ", map.move->shard, " is moving from ",
        map.move->from, " to ", map.move->to, "; one move at a time"));
  }
  if (shard >= map.replicas.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard: ", shard, " is out of range (", map.replicas.size(), " shards)"));
  }
  std::vector<std::string>& nodes = map.replicas[shard];
  if (std::find(nodes.begin(), nodes.end(), from) == nodes.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("from: node '", from, "' does not keep shard ", shard));
  }
  if (std::find(live.begin(), live.end(), to) == live.end()) {
    return absl::InvalidArgumentError(absl::StrCat("to: node '", to, "' is not live"));
  }
  if (std::find(nodes.begin(), nodes.end(), to) != nodes.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("to: node '", to, "' keeps shard ", shard, " already"));
  }
  nodes.push_back(to);
  map.move = ShardMap::Move{.shard = shard, .from = from, .to = to};
  ++map.version;
  return absl::OkStatus();
}

bool ReadableReplica(const ShardMap& map, uint32_t shard, const std::string& node) {
  if (shard >= map.replicas.size()) return false;
  if (map.move && map.move->shard == shard && map.move->to == node) return false;
  const std::vector<std::string>& nodes = map.replicas[shard];
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

uint32_t ShardOfKey(const Key& key, uint32_t shards) {
  uint64_t hash = 14695981039346656037ull;
  auto mix = [&hash](unsigned char byte) {
    hash ^= byte;
    hash *= 1099511628211ull;
  };
  if (const uint64_t* number = std::get_if<uint64_t>(&key)) {
    mix('u');
    for (int i = 0; i < 8; ++i) mix(static_cast<unsigned char>(*number >> (8 * i)));
  } else {
    mix('s');
    for (char c : std::get<std::string>(key)) mix(static_cast<unsigned char>(c));
  }
  return static_cast<uint32_t>(hash % shards);
}

std::string ShardCollectionName(const std::string& collection, uint32_t shard) {
  return absl::StrCat(collection, "@", shard);
}

std::optional<std::pair<std::string, uint32_t>> ParseShardCollectionName(std::string_view name) {
  const size_t at = name.rfind('@');
  uint32_t shard = 0;
  if (at == std::string_view::npos || at == 0 ||
      !absl::SimpleAtoi(std::string(name.substr(at + 1)), &shard)) {
    return std::nullopt;
  }
  return std::make_pair(std::string(name.substr(0, at)), shard);
}

std::string StreamName(const std::string& collection, uint32_t shard) {
  return absl::StrCat("shoal_", collection, "_", shard);
}

std::string StreamSubject(const std::string& collection, uint32_t shard) {
  return absl::StrCat("shoal.", collection, ".", shard);
}

}  // namespace shoal::cluster

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
    map.replicas = json.at("replicas").get<std::vector<std::vector<std::string>>>();
  } catch (const Json::exception& error) {  // nlohmann throws on a missing or mistyped field
    return BadMap(absl::StrCat(error.what(), " in ", text));
  }
  if (map.spec.shards == 0 || map.replicas.size() != map.spec.shards) {
    return BadMap(absl::StrCat("shards ", map.spec.shards, " but ", map.replicas.size(),
                               " replica lists in ", text));
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
  if (next == map.replicas) return false;
  map.replicas = std::move(next);
  ++map.version;
  return true;
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

// ClusterDB's write path: records and keys grouped by shard, each group one entry appended to
// the shard's JetStream stream (the write is acknowledged once JetStream has it).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cluster/cluster_db.h"
#include "rpc/convert.h"
#include "shoal/cluster/v1/shard_log.pb.h"
#include "shoal/record_checks.h"

namespace shoal::cluster {
namespace {

absl::Status CheckKey(const Key& key, const std::string& field) {
  if (const std::string* text = std::get_if<std::string>(&key)) {
    if (text->empty() || text->size() > kMaxKeyBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": a string key must be 1..", kMaxKeyBytes, " bytes"));
    }
  }
  return absl::OkStatus();
}

// Appends each shard's entry, all in flight at once; the first failure is returned (other
// shards may be written).
absl::Status PublishEntries(ShardLog& log, const std::string& collection,
                            const std::map<uint32_t, cluster::v1::ShardLogEntry>& entries) {
  std::vector<std::pair<uint32_t, std::string>> payloads;
  payloads.reserve(entries.size());
  for (const auto& [shard, entry] : entries)
    payloads.emplace_back(shard, entry.SerializeAsString());
  absl::StatusOr<std::vector<uint64_t>> sequences = log.PublishAll(collection, payloads);
  if (!sequences.ok()) {
    return absl::Status(
        sequences.status().code(),
        absl::StrCat("collection '", collection, "': ", sequences.status().message()));
  }
  return absl::OkStatus();
}

}  // namespace

// Upsert's own checks (shoal/record_checks.h), made before the write is acknowledged: a
// replica skips an entry its DB refuses as invalid, so a bad batch must never reach the log.
absl::Status ClusterDB::CheckRecords(const ShardMap& map, std::span<const Record> records) const {
  CollectionSpec local = map.spec;
  local.shards = 0;
  local.replication = 0;
  return shoal::CheckRecords(local, records, Options{});
}

absl::Status ClusterDB::Upsert(std::string_view collection, std::span<const Record> records,
                               const WriteOptions& options) {
  std::optional<ShardMap> map = node_->FindShardMap(collection);
  if (!map) return local_->Upsert(collection, records, options);
  if (!options.tenant.empty()) return NotYetSharded("a write for a tenant", collection);
  if (absl::Status s = CheckRecords(*map, records); !s.ok()) return s;
  std::map<uint32_t, cluster::v1::ShardLogEntry> entries;
  for (const Record& record : records) {
    cluster::v1::ShardLogEntry& entry = entries[ShardOfKey(record.key, map->spec.shards)];
    entry.set_tenant(options.tenant);
    rpc::RecordToProto(record, entry.add_upserts());
  }
  return PublishEntries(node_->log(), map->spec.name, entries);
}

// Returns how many keys were given (a sharded delete is acknowledged before any replica
// applies it, so whether each key existed is not known then).
absl::StatusOr<uint64_t> ClusterDB::Delete(std::string_view collection, std::span<const Key> keys,
                                           const WriteOptions& options) {
  std::optional<ShardMap> map = node_->FindShardMap(collection);
  if (!map) return local_->Delete(collection, keys, options);
  if (!options.tenant.empty()) return NotYetSharded("a write for a tenant", collection);
  if (keys.empty()) return absl::InvalidArgumentError("keys: empty");
  std::map<uint32_t, cluster::v1::ShardLogEntry> entries;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (absl::Status s = CheckKey(keys[i], absl::StrCat("keys[", i, "]")); !s.ok()) return s;
    cluster::v1::ShardLogEntry& entry = entries[ShardOfKey(keys[i], map->spec.shards)];
    entry.set_tenant(options.tenant);
    rpc::KeyToProto(keys[i], entry.add_deletes());
  }
  if (absl::Status s = PublishEntries(node_->log(), map->spec.name, entries); !s.ok()) return s;
  return keys.size();
}

}  // namespace shoal::cluster

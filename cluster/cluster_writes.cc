// ClusterDB's write path: records and keys grouped by shard, each group one entry appended to
// the shard's JetStream stream (the write is acknowledged once JetStream has it).
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "cluster/cluster_db.h"
#include "rpc/convert.h"
#include "shoal/cluster/v1/shard_log.pb.h"

namespace shoal::cluster {
namespace {

std::string KeyText(const Key& key) {
  if (const uint64_t* number = std::get_if<uint64_t>(&key)) return absl::StrCat(*number);
  return absl::StrCat("\"", std::get<std::string>(key), "\"");
}

absl::Status CheckKey(const Key& key, const std::string& field) {
  if (const std::string* text = std::get_if<std::string>(&key)) {
    if (text->empty() || text->size() > kMaxKeyBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": a string key must be 1..", kMaxKeyBytes, " bytes"));
    }
  }
  return absl::OkStatus();
}

// Appends each shard's entry; the first failure is returned (earlier shards stay written).
absl::Status PublishEntries(ShardLog& log, const std::string& collection,
                            const std::map<uint32_t, cluster::v1::ShardLogEntry>& entries) {
  for (const auto& [shard, entry] : entries) {
    absl::StatusOr<uint64_t> sequence = log.Publish(collection, shard, entry.SerializeAsString());
    if (!sequence.ok()) {
      return absl::Status(sequence.status().code(),
                          absl::StrCat("collection '", collection, "' shard ", shard, ": ",
                                       sequence.status().message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

// The checks a replica's local DB would make and that must not fail after JetStream has
// acknowledged the write (a replica skips an entry its DB refuses as invalid).
absl::Status ClusterDB::CheckRecords(const ShardMap& map, std::span<const Record> records) const {
  if (records.empty()) return absl::InvalidArgumentError("records: empty batch");
  std::set<Key> seen;
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string field = absl::StrCat("records[", i, "]");
    const Record& record = records[i];
    if (absl::Status s = CheckKey(record.key, field + ".key"); !s.ok()) return s;
    if (!seen.insert(record.key).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".key: duplicate key ", KeyText(record.key), " in the batch"));
    }
    if (record.vector.size() != map.spec.dimension) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".vector: dimension ", record.vector.size(), " does not match collection '",
          map.spec.name, "' dimension ", map.spec.dimension));
    }
    double norm = 0;
    for (size_t j = 0; j < record.vector.size(); ++j) {
      const float x = record.vector[j];
      if (!std::isfinite(x)) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".vector[", j, "]: NaN or Inf is not allowed"));
      }
      norm += static_cast<double>(x) * x;
    }
    if (norm > 1e28 || (map.spec.metric == Metric::kCosine && norm < 1.2e-38)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".vector: squared norm ", norm, " is out of range"));
    }
  }
  return absl::OkStatus();
}

absl::Status ClusterDB::Upsert(std::string_view collection, std::span<const Record> records,
                               const WriteOptions& options) {
  std::optional<ShardMap> map = node_->FindShardMap(collection);
  if (!map) return local_->Upsert(collection, records, options);
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

// ClusterDB's write path: records and keys grouped by shard, each group one entry appended to
// the shard's JetStream stream (the write is acknowledged once JetStream has it).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cluster/cluster_db.h"
#include "cluster/shard_log_codec.h"
#include "shoal/record_checks.h"

namespace shoal::cluster {
namespace {

// keys[i]; the message names it.
absl::Status CheckKey(const Key& key, size_t i) {
  if (const std::string* text = std::get_if<std::string>(&key)) {
    if (text->empty() || text->size() > kMaxKeyBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("keys[", i, "]: a string key must be 1..", kMaxKeyBytes, " bytes"));
    }
  }
  return absl::OkStatus();
}

// Each shard's indexes into a write's records or keys, by shard (ShardOfKey).
template <typename Item, typename KeyOf>
std::map<uint32_t, std::vector<uint32_t>> ByShard(std::span<const Item> items, uint32_t shards,
                                                  KeyOf key_of) {
  std::map<uint32_t, std::vector<uint32_t>> out;
  for (size_t i = 0; i < items.size(); ++i) {
    out[ShardOfKey(key_of(items[i]), shards)].push_back(static_cast<uint32_t>(i));
  }
  return out;
}

// Appends each shard's entry, all in flight at once; the first failure is returned (other
// shards may be written).
absl::Status PublishEntries(ShardLog& log, const std::string& collection,
                            std::span<const std::pair<uint32_t, std::string>> payloads) {
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
  if (absl::Status s = CheckRecords(*map, records); !s.ok()) return s;
  if (options.tenant.empty()) return PublishUpserts(*map, records, options.tenant);
  std::vector<Key> keys;
  keys.reserve(records.size());
  for (const Record& record : records) keys.push_back(record.key);
  std::vector<std::optional<Record>> existing;
  if (absl::Status s = CheckTenantWrite(*map, options.tenant, keys, /*upsert=*/true, &existing);
      !s.ok()) {
    return s;
  }
  const ShardedTenantQuotas quotas = TenantQuotasOf(*map, options.tenant);
  if (quotas.max_vectors == 0 && quotas.max_bytes == 0) {
    return PublishUpserts(*map, records, options.tenant);
  }
  // Checked and published under the lock: the next quota'd write on this node counts this one.
  absl::MutexLock lock(&quota_mu_);
  if (absl::Status s = CheckShardedQuota(*map, options.tenant, quotas, records, existing);
      !s.ok()) {
    return s;
  }
  return PublishUpserts(*map, records, options.tenant);
}

absl::Status ClusterDB::PublishUpserts(const ShardMap& map, std::span<const Record> records,
                                       const std::string& tenant) {
  // Each shard's entry is encoded straight from the records (shard_log_codec.h).
  std::vector<std::pair<uint32_t, std::string>> payloads;
  for (const auto& [shard, which] :
       ByShard(records, map.spec.shards, [](const Record& r) -> const Key& { return r.key; })) {
    payloads.emplace_back(shard, EncodeUpserts(records, which, tenant));
  }
  return PublishEntries(node_->log(), map.spec.name, payloads);
}

// Returns how many keys were given (a sharded delete is acknowledged before any replica
// applies it, so whether each key existed is not known then).
absl::StatusOr<uint64_t> ClusterDB::Delete(std::string_view collection, std::span<const Key> keys,
                                           const WriteOptions& options) {
  std::optional<ShardMap> map = node_->FindShardMap(collection);
  if (!map) return local_->Delete(collection, keys, options);
  if (keys.empty()) return absl::InvalidArgumentError("keys: empty");
  for (size_t i = 0; i < keys.size(); ++i) {
    if (absl::Status s = CheckKey(keys[i], i); !s.ok()) return s;
  }
  if (!options.tenant.empty()) {
    if (absl::Status s = CheckTenantWrite(*map, options.tenant, keys, /*upsert=*/false); !s.ok()) {
      return s;
    }
  }
  std::vector<std::pair<uint32_t, std::string>> payloads;
  for (const auto& [shard, which] :
       ByShard(keys, map->spec.shards, [](const Key& k) -> const Key& { return k; })) {
    payloads.emplace_back(shard, EncodeDeletes(keys, which, options.tenant));
  }
  if (absl::Status s = PublishEntries(node_->log(), map->spec.name, payloads); !s.ok()) return s;
  return keys.size();
}

}  // namespace shoal::cluster

#include "cluster/shard_apply.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "rpc/convert.h"
#include "shoal/cluster/v1/shard_log.pb.h"

namespace shoal::cluster {

bool ApplyGrouper::Fits(bool upsert, const std::string& tenant) const {
  if (groups_.empty()) return false;
  const ApplyGroup& last = groups_.back();
  return last.tenant == tenant && (upsert ? !last.upserts.empty() : !last.deletes.empty());
}

absl::Status ApplyGrouper::Add(uint64_t sequence, const void* data, size_t size) {
  cluster::v1::ShardLogEntry entry;
  if (!entry.ParseFromArray(data, static_cast<int>(size))) {
    return absl::InvalidArgumentError(absl::StrCat("log entry ", sequence, ": does not decode"));
  }
  const bool upsert = entry.upserts_size() > 0;
  if (!upsert && entry.deletes_size() == 0) return absl::OkStatus();  // nothing to apply
  std::vector<Record> records;
  std::vector<Key> keys;
  const std::string field = absl::StrCat("log entry ", sequence);
  if (upsert) {
    records.reserve(entry.upserts_size());
    for (const shoal::v1::Record& proto : entry.upserts()) {
      absl::StatusOr<Record> record = rpc::RecordFromProto(proto, field);
      if (!record.ok()) return record.status();
      records.push_back(*std::move(record));
    }
  } else {
    keys.reserve(entry.deletes_size());
    for (const shoal::v1::Key& proto : entry.deletes()) {
      absl::StatusOr<Key> key = rpc::KeyFromProto(proto, field);
      if (!key.ok()) return key.status();
      keys.push_back(*std::move(key));
    }
  }
  bool fits = Fits(upsert, entry.tenant());
  for (size_t i = 0; fits && i < (upsert ? records.size() : keys.size()); ++i) {
    fits = !keys_.contains(upsert ? records[i].key : keys[i]);
  }
  if (!fits) {
    groups_.push_back(ApplyGroup{.tenant = entry.tenant()});
    keys_.clear();
  }
  ApplyGroup& group = groups_.back();
  group.last_sequence = sequence;
  if (upsert) {
    for (Record& record : records) {
      keys_.insert(record.key);
      group.upserts.push_back(std::move(record));
    }
  } else {
    for (Key& key : keys) {
      keys_.insert(key);
      group.deletes.push_back(std::move(key));
    }
  }
  return absl::OkStatus();
}

std::vector<ApplyGroup> ApplyGrouper::Take() {
  keys_.clear();
  return std::exchange(groups_, {});
}

}  // namespace shoal::cluster

// ShardApplier's input side: the entries of one fetch from a shard's stream
// (shoal.cluster.v1.ShardLogEntry, in stream order) turned into as few local DB calls as their
// order allows. Consecutive upserts for the same tenant become one Upsert, consecutive deletes
// one Delete, as long as no key repeats inside the group (a repeated key closes the group, so
// the later write still lands after the earlier one). One DB call per 500-record batch instead
// of one per entry: the replica's fixed cost per call (locks, one RocksDB batch) is shared.
//
//   ApplyGrouper grouper;
//   for (msg : fetched) SHOAL_RETURN_IF_ERROR(grouper.Add(sequence, data, size));
//   for (ApplyGroup& group : grouper.Take()) ... local->Upsert(name, group.upserts, ...)
//
// Thread safety: none (one replica thread uses one grouper).
#ifndef SHOAL_CLUSTER_SHARD_APPLY_H_
#define SHOAL_CLUSTER_SHARD_APPLY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "shoal/types.h"

namespace shoal::cluster {

// One local DB call: exactly one of `upserts` / `deletes` is non-empty.
struct ApplyGroup {
  std::string tenant;
  std::vector<Record> upserts;
  std::vector<Key> deletes;
  uint64_t last_sequence = 0;  // the stream sequence of the group's last entry
};

class ApplyGrouper {
 public:
  // Decodes the entry at `sequence` (sequences must increase) and adds it to the current
  // group or starts a new one. INVALID_ARGUMENT (naming the sequence) when the bytes do not
  // decode or a record / key is malformed; nothing of that entry is added.
  absl::Status Add(uint64_t sequence, const void* data, size_t size);
  // The groups so far, in stream order; the grouper is empty afterwards.
  std::vector<ApplyGroup> Take();

 private:
  bool Fits(bool upsert, const std::string& tenant) const;

  std::vector<ApplyGroup> groups_;
  absl::flat_hash_set<Key> keys_;  // of the last group
};

}  // namespace shoal::cluster

#endif  // SHOAL_CLUSTER_SHARD_APPLY_H_

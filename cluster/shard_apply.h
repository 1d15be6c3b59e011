// ShardApplier's input side: the entries of one fetch from a shard's stream
// (shoal.cluster.v1.ShardLogEntry, in stream order) turned into as few local DB calls as their
// order allows. Consecutive upserts for the same tenant become one Upsert, consecutive deletes
// one Delete, as long as no key repeats inside the group (a repeated key closes the group, so
// the later write still lands after the earlier one). One DB call per 500-record batch instead
// of one per entry: the replica's fixed cost per call (locks, one RocksDB batch) is shared.
// A tenant operation (create, drop, grant, ...) is a group of its own.
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
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "shoal/db.h"
#include "shoal/tenants.h"
#include "shoal/types.h"

namespace shoal::cluster {

// A tenant operation of the log (shard_log.proto's TenantOp): one entry, applied alone.
struct TenantOpCall {
  enum class Kind { kCreate, kDrop, kSetQuotas, kSetState, kGrant, kRevoke, kDeleteRecords };
  Kind kind = Kind::kCreate;
  TenantQuotas quotas;                       // kCreate, kSetQuotas
  TenantState state = TenantState::kActive;  // kSetState
  std::vector<Key> keys;                     // kGrant, kRevoke
};

// One local DB call: a tenant operation (`op`, for `tenant`), or else exactly one of
// `upserts` / `deletes` is non-empty.
struct ApplyGroup {
  std::string tenant;
  std::vector<Record> upserts;
  std::vector<Key> deletes;
  std::optional<TenantOpCall> op;
  uint64_t last_sequence = 0;  // the stream sequence of the group's last entry
};

// The bytes of a log entry carrying `op` for `tenant` (cluster_tenants.cc writes them).
std::string EncodeTenantOp(const std::string& tenant, const TenantOpCall& op);

// Applies `op` for `tenant` to the local collection `name` (a shard copy). An op the copy
// already reflects (a re-applied tail: ALREADY_EXISTS, NOT_FOUND) or can never apply (a grant
// of a key since deleted, a revoke from the owner) is done: OK, with a line on stderr. Other
// errors (the DB unable to write) are returned: the replica tries again.
absl::Status ApplyTenantOp(DB& db, const std::string& name, const std::string& tenant,
                           const TenantOpCall& op);

class ApplyGrouper {
 public:
  // A group grows no larger (one entry alone may be larger): a DB call over this many records
  // is well under Options::max_batch_records, and its write batch stays a few MB.
  static constexpr size_t kMaxGroupRecords = 8192;

  // Decodes the entry at `sequence` (sequences must increase) and adds it to the current
  // group or starts a new one. INVALID_ARGUMENT (naming the sequence) when the bytes do not
  // decode or a record / key is malformed; nothing of that entry is added.
  absl::Status Add(uint64_t sequence, const void* data, size_t size);
  // The groups so far, in stream order; the grouper is empty afterwards.
  std::vector<ApplyGroup> Take();

 private:
  bool Fits(bool upsert, const std::string& tenant, size_t count) const;

  std::vector<ApplyGroup> groups_;
  absl::flat_hash_set<Key> keys_;  // of the last group
};

}  // namespace shoal::cluster

#endif  // SHOAL_CLUSTER_SHARD_APPLY_H_

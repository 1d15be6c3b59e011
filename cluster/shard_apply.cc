#include "cluster/shard_apply.h"

#include <algorithm>
#include <iostream>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cluster/shard_log_codec.h"
#include "rpc/convert.h"
#include "shoal/cluster/v1/shard_log.pb.h"

namespace shoal::cluster {

namespace {

using Kind = TenantOpCall::Kind;
using ProtoKind = cluster::v1::TenantOp;

constexpr std::pair<ProtoKind::Kind, Kind> kKinds[] = {
    {ProtoKind::KIND_CREATE, Kind::kCreate},
    {ProtoKind::KIND_DROP, Kind::kDrop},
    {ProtoKind::KIND_SET_QUOTAS, Kind::kSetQuotas},
    {ProtoKind::KIND_SET_STATE, Kind::kSetState},
    {ProtoKind::KIND_GRANT, Kind::kGrant},
    {ProtoKind::KIND_REVOKE, Kind::kRevoke},
    {ProtoKind::KIND_DELETE_RECORDS, Kind::kDeleteRecords},
};

absl::StatusOr<TenantOpCall> DecodeTenantOp(const void* data, size_t size) {
  cluster::v1::ShardLogEntry entry;
  if (!entry.ParseFromArray(data, static_cast<int>(size))) {
    return absl::InvalidArgumentError("tenant_op: does not decode");
  }
  const cluster::v1::TenantOp& proto = entry.tenant_op();
  TenantOpCall op;
  const auto* kind = std::find_if(std::begin(kKinds), std::end(kKinds),
                                  [&](const auto& k) { return k.first == proto.kind(); });
  if (kind == std::end(kKinds)) {
    return absl::InvalidArgumentError(absl::StrCat("tenant_op.kind: unknown (", proto.kind(), ")"));
  }
  op.kind = kind->second;
  op.quotas = rpc::TenantQuotasFromProto(proto.quotas());
  if (op.kind == Kind::kSetState) {
    absl::StatusOr<TenantState> state = rpc::TenantStateFromProto(proto.state(), "tenant_op.state");
    if (!state.ok()) return state.status();
    op.state = *state;
  }
  absl::StatusOr<std::vector<Key>> keys = rpc::KeysFromProto(proto.keys(), "tenant_op.keys");
  if (!keys.ok()) return keys.status();
  op.keys = *std::move(keys);
  return op;
}

}  // namespace

std::string EncodeTenantOp(const std::string& tenant, const TenantOpCall& op) {
  cluster::v1::ShardLogEntry entry;
  entry.set_tenant(tenant);
  cluster::v1::TenantOp& proto = *entry.mutable_tenant_op();
  for (const auto& [proto_kind, kind] : kKinds) {
    if (kind == op.kind) proto.set_kind(proto_kind);
  }
  rpc::TenantQuotasToProto(op.quotas, proto.mutable_quotas());
  if (op.kind == Kind::kSetState) proto.set_state(rpc::TenantStateToProto(op.state));
  for (const Key& key : op.keys) rpc::KeyToProto(key, proto.add_keys());
  return entry.SerializeAsString();
}

bool ApplyGrouper::Fits(bool upsert, const std::string& tenant, size_t count) const {
  if (groups_.empty()) return false;
  const ApplyGroup& last = groups_.back();
  const size_t size = upsert ? last.upserts.size() : last.deletes.size();
  return last.tenant == tenant && size > 0 && size + count <= kMaxGroupRecords;
}

absl::Status ApplyGrouper::Add(uint64_t sequence, const void* data, size_t size) {
  absl::StatusOr<DecodedEntry> entry = DecodeShardLogEntry(data, size);
  if (!entry.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("log entry ", sequence, ": ", entry.status().message()));
  }
  if (entry->has_tenant_op && entry->upserts.empty() && entry->deletes.empty()) {
    absl::StatusOr<TenantOpCall> op = DecodeTenantOp(data, size);
    if (!op.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("log entry ", sequence, ": ", op.status().message()));
    }
    groups_.push_back(ApplyGroup{
        .tenant = std::move(entry->tenant), .op = *std::move(op), .last_sequence = sequence});
    keys_.clear();
    return absl::OkStatus();
  }
  const bool upsert = !entry->upserts.empty();
  if (!upsert && entry->deletes.empty()) return absl::OkStatus();  // nothing to apply
  std::vector<Record>& records = entry->upserts;
  std::vector<Key>& keys = entry->deletes;
  bool fits = Fits(upsert, entry->tenant, upsert ? records.size() : keys.size());
  for (size_t i = 0; fits && i < (upsert ? records.size() : keys.size()); ++i) {
    fits = !keys_.contains(upsert ? records[i].key : keys[i]);
  }
  if (!fits) {
    groups_.push_back(ApplyGroup{.tenant = std::move(entry->tenant)});
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

// A tenant operation on this copy. One this copy already reflects (a re-applied tail) or can
// never apply (a grant of a key since deleted) is done: OK.
absl::Status ApplyTenantOp(DB& db, const std::string& name, const std::string& tenant,
                           const TenantOpCall& op) {
  using Kind = TenantOpCall::Kind;
  const WriteOptions options{.sync = false};
  absl::Status s;
  switch (op.kind) {
    case Kind::kCreate:
      s = db.CreateTenant(name, {.name = tenant, .quotas = op.quotas});
      break;
    case Kind::kDrop:
      s = db.DropTenant(name, tenant, options).status();
      break;
    case Kind::kSetQuotas:
      s = db.SetTenantQuotas(name, tenant, op.quotas);
      break;
    case Kind::kSetState:
      s = db.SetTenantState(name, tenant, op.state);
      break;
    case Kind::kGrant:
      s = db.Grant(name, tenant, op.keys, options);
      break;
    case Kind::kRevoke:
      s = db.Revoke(name, tenant, op.keys, options);
      break;
    case Kind::kDeleteRecords:
      s = db.DeleteByTenant(name, tenant, options).status();
      break;
  }
  if (absl::IsAlreadyExists(s) || absl::IsNotFound(s) || absl::IsFailedPrecondition(s) ||
      absl::IsInvalidArgument(s)) {
    std::cerr << "shoald: cluster: " << name << ": tenant '" << tenant << "': " << s << " (done)\n";
    return absl::OkStatus();
  }
  return s;
}

std::vector<ApplyGroup> ApplyGrouper::Take() {
  keys_.clear();
  return std::exchange(groups_, {});
}

}  // namespace shoal::cluster

// ClusterDB's tenants of a sharded collection. Every copy of every shard keeps every tenant:
// creates, drops, quotas, states and delete-by-tenant are entries (shard_log.proto's TenantOp)
// appended to every shard's stream, grants and revokes to their keys' shards, so each copy
// applies them in order with the writes. A change answers once one replica of each shard (the
// one reads use first) has applied it. Reads of tenant metadata are summed over one replica
// per shard, each first applying its stream's last entry: a read sees every change and write
// acknowledged before it, whichever node took them. Quotas of vectors and bytes are cluster-wide
// (cluster_quotas.cc); max_searches_per_second applies on each copy (a search reaches every shard
// once).
#include <algorithm>
#include <iostream>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster/cluster_db.h"
#include "cluster/shard_apply.h"

namespace shoal::cluster {
namespace {

using Kind = TenantOpCall::Kind;

absl::Status CheckTenantName(std::string_view tenant, std::string_view field) {
  auto ok = [](char c, bool first) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
           (!first && ((c >= '0' && c <= '9') || c == '-'));
  };
  bool valid = !tenant.empty() && tenant.size() <= 64;
  for (size_t i = 0; valid && i < tenant.size(); ++i) valid = ok(tenant[i], i == 0);
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(field), ": '", std::string(tenant),
                   "' is not a tenant name ([A-Za-z_][A-Za-z0-9_-]{0,63})"));
}

std::vector<uint32_t> AllShards(const ShardMap& map) {
  std::vector<uint32_t> shards(map.spec.shards);
  for (uint32_t s = 0; s < map.spec.shards; ++s) shards[s] = s;
  return shards;
}

}  // namespace

absl::Status NoReplica(const ShardMap& map, uint32_t shard, const absl::Status& last) {
  return absl::UnavailableError(absl::StrCat("collection '", map.spec.name, "' shard ", shard,
                                             ": no replica answered (last: ", last.ToString(),
                                             ")"));
}

bool TryAnotherReplica(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
         absl::IsNotFound(status) || absl::IsAborted(status) || absl::IsInternal(status);
}

absl::Status ClusterDB::OnOneReplica(const ShardMap& map, uint32_t shard,
                                     const CopyCall& call) const {
  const std::string name = ShardCollectionName(map.spec.name, shard);
  absl::Status last = absl::UnavailableError("no live replica");
  for (const Replica& replica : node_->Replicas(map, shard)) {
    if (replica.local) {
      last = WaitLocalApplied(name, 0);
      if (last.ok()) last = call(name, nullptr);
    } else {
      absl::StatusOr<std::shared_ptr<client::Client>> peer = node_->Peer(replica.address);
      last = peer.ok() ? call(name, peer->get()) : peer.status();
    }
    // NOT_FOUND is a missing copy only when the copy itself is what was not found (DBImpl::Find:
    // "name: '<c>@<s>' not found", a dropped Collection: "collection: '<c>@<s>' not found");
    // NOT_FOUND of a tenant or key is the answer.
    const bool missing_copy =
        absl::IsNotFound(last) &&
        (absl::StrContains(last.message(), absl::StrCat("name: '", name, "' not found")) ||
         absl::StrContains(last.message(), absl::StrCat("collection: '", name, "' not found")));
    if (last.ok() || !TryAnotherReplica(last) || (absl::IsNotFound(last) && !missing_copy)) {
      return last;
    }
  }
  if (std::optional<ShardMap> newer = NewerShardMap(map)) return OnOneReplica(*newer, shard, call);
  return NoReplica(map, shard, last);
}

absl::Status ClusterDB::OnOneFreshReplica(const ShardMap& map, uint32_t shard,
                                          const CopyCall& call) const {
  absl::StatusOr<uint64_t> sequence = ReadSequence(map, shard, {.read_your_writes = true});
  if (!sequence.ok()) return sequence.status();
  return OnOneReplica(map, shard, [&](const std::string& name, client::Client* peer) {
    if (absl::Status applied = WaitCopyApplied(name, peer, *sequence); !applied.ok()) {
      return applied;
    }
    return call(name, peer);
  });
}

absl::Status ClusterDB::WaitCopyApplied(const std::string& name, client::Client* peer,
                                        uint64_t sequence) const {
  if (peer == nullptr) return WaitLocalApplied(name, sequence);
  if (sequence == 0) return absl::OkStatus();
  // A read of any key on the copy waits until it has applied `sequence`.
  ReadOptions wait;
  wait.consistency.min_applied_sequence = sequence;
  const std::vector<Key> any = {Key{uint64_t{0}}};
  return peer->Get(name, any, wait).status();
}

absl::Status ClusterDB::PublishTenantOp(const ShardMap& map, const std::string& tenant,
                                        const std::vector<std::pair<uint32_t, TenantOpCall>>& ops) {
  std::vector<std::pair<uint32_t, std::string>> payloads;
  for (const auto& [shard, op] : ops) payloads.emplace_back(shard, EncodeTenantOp(tenant, op));
  absl::StatusOr<std::vector<uint64_t>> sequences =
      node_->log().PublishAll(map.spec.name, payloads);
  if (!sequences.ok()) return sequences.status();
  for (size_t i = 0; i < ops.size(); ++i) {
    const uint64_t sequence = (*sequences)[i];
    absl::Status s =
        OnOneReplica(map, ops[i].first, [&](const std::string& name, client::Client* peer) {
          return WaitCopyApplied(name, peer, sequence);
        });
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ClusterDB::PublishToEveryShard(const ShardMap& map, const std::string& tenant,
                                            const TenantOpCall& op) {
  std::vector<std::pair<uint32_t, TenantOpCall>> ops;
  for (uint32_t shard : AllShards(map)) ops.emplace_back(shard, op);
  return PublishTenantOp(map, tenant, ops);
}

absl::StatusOr<TenantInfo> ClusterDB::DescribeShardedTenant(const ShardMap& map,
                                                            std::string_view tenant) const {
  TenantInfo sum;
  for (uint32_t shard = 0; shard < map.spec.shards; ++shard) {
    TenantInfo part;
    absl::Status s =
        OnOneFreshReplica(map, shard, [&](const std::string& name, client::Client* peer) {
          absl::StatusOr<TenantInfo> info = peer == nullptr
                                                ? local_->DescribeTenant(name, tenant)
                                                : peer->DescribeTenant(name, std::string(tenant));
          if (info.ok()) part = *std::move(info);
          return info.status();
        });
    if (!s.ok()) return s;
    if (shard == 0) {
      sum = part;
      continue;
    }
    sum.vectors_owned += part.vectors_owned;
    sum.vectors_visible += part.vectors_visible;
    sum.bytes_owned += part.bytes_owned;
    sum.buckets_scanned += part.buckets_scanned;
    // A search reaches every shard: the slowest shard's latency is the search's.
    sum.searches = std::max(sum.searches, part.searches);
    sum.search_p50_us = std::max(sum.search_p50_us, part.search_p50_us);
    sum.search_p99_us = std::max(sum.search_p99_us, part.search_p99_us);
  }
  OverlayQuotas(map, &sum);
  return sum;
}

absl::Status ClusterDB::CheckTenantExists(const ShardMap& map, std::string_view tenant) {
  const std::string key =
      absl::StrCat(map.spec.name, "/", map.incarnation, "/", std::string(tenant));
  {
    absl::MutexLock lock(&tenants_mu_);
    if (known_tenants_.contains(key)) return absl::OkStatus();
  }
  absl::Status s = OnOneFreshReplica(map, 0, [&](const std::string& name, client::Client* peer) {
    return peer == nullptr ? local_->DescribeTenant(name, tenant).status()
                           : peer->DescribeTenant(name, std::string(tenant)).status();
  });
  if (!s.ok()) return s;
  absl::MutexLock lock(&tenants_mu_);
  known_tenants_.insert(key);
  return absl::OkStatus();
}

void ClusterDB::ForgetTenant(const ShardMap& map, std::string_view tenant) {
  absl::MutexLock lock(&tenants_mu_);
  known_tenants_.erase(absl::StrCat(map.spec.name, "/", map.incarnation, "/", std::string(tenant)));
}

absl::Status ClusterDB::CreateShardedTenant(const ShardMap& map, const TenantSpec& spec) {
  if (absl::Status s = CheckTenantName(spec.name, "spec.name"); !s.ok()) return s;
  absl::Status exists = DescribeShardedTenant(map, spec.name).status();
  if (exists.ok()) {
    return absl::AlreadyExistsError(absl::StrCat("spec.name: tenant '", spec.name,
                                                 "' already exists in '", map.spec.name, "'"));
  }
  if (!absl::IsNotFound(exists)) return exists;
  // The cluster-wide quotas first (also 0s: quotas a dropped tenant of this name left).
  if (absl::Status s = PutShardedQuotas(map, spec.name, spec.quotas); !s.ok()) return s;
  return PublishToEveryShard(map, spec.name,
                             {.kind = Kind::kCreate, .quotas = CopyQuotas(spec.quotas)});
}

// Drop and delete-by-tenant: the records the tenant owned before (counted, then deleted).
absl::StatusOr<uint64_t> ClusterDB::DeleteShardedTenantRecords(const ShardMap& map,
                                                               std::string_view tenant, Kind kind) {
  absl::StatusOr<TenantInfo> info = DescribeShardedTenant(map, tenant);
  if (!info.ok()) return info.status();
  ForgetTenant(map, tenant);
  absl::Status s = PublishToEveryShard(map, std::string(tenant), {.kind = kind});
  if (!s.ok()) return s;
  if (kind == Kind::kDrop) {
    // Left behind on failure, it is replaced when a tenant of this name is created again.
    if (absl::Status q = PutShardedQuotas(map, tenant, {}); !q.ok()) {
      std::cerr << "shoald: cluster: dropping the quotas of tenant '" << tenant << "': " << q
                << "\n";
    }
  }
  return info->vectors_owned;
}

absl::Status ClusterDB::SetShardedTenant(const ShardMap& map, std::string_view tenant,
                                         const TenantOpCall& op) {
  if (absl::Status s = DescribeShardedTenant(map, tenant).status(); !s.ok()) return s;
  if (op.kind != Kind::kSetQuotas) return PublishToEveryShard(map, std::string(tenant), op);
  if (absl::Status s = PutShardedQuotas(map, tenant, op.quotas); !s.ok()) return s;
  TenantOpCall copy = op;
  copy.quotas = CopyQuotas(op.quotas);
  return PublishToEveryShard(map, std::string(tenant), copy);
}

// Every key must exist (NOT_FOUND names the first that does not); each shard's keys go to
// its own stream.
absl::Status ClusterDB::GrantSharded(const ShardMap& map, std::string_view tenant,
                                     std::span<const Key> keys, Kind kind) {
  if (keys.empty()) return absl::InvalidArgumentError("keys: empty");
  if (absl::Status s = DescribeShardedTenant(map, tenant).status(); !s.ok()) return s;
  ReadOptions fresh;
  fresh.consistency.read_your_writes = true;
  absl::StatusOr<std::vector<std::optional<Record>>> found = Get(map.spec.name, keys, fresh);
  if (!found.ok()) return found.status();
  std::map<uint32_t, TenantOpCall> by_shard;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!(*found)[i].has_value()) {
      return absl::NotFoundError(
          absl::StrCat("keys[", i, "]: no record with this key in '", map.spec.name, "'"));
    }
    TenantOpCall& op = by_shard[ShardOfKey(keys[i], map.spec.shards)];
    op.kind = kind;
    op.keys.push_back(keys[i]);
  }
  std::vector<std::pair<uint32_t, TenantOpCall>> ops(by_shard.begin(), by_shard.end());
  return PublishTenantOp(map, std::string(tenant), ops);
}

// A write for `tenant`: the tenant exists, and every key of `keys` that exists is the tenant's
// own (PERMISSION_DENIED otherwise, as the DB would answer; a record made by another tenant in
// between is refused by the replicas and skipped). Deletes check only keys the tenant sees.
absl::Status ClusterDB::CheckTenantWrite(const ShardMap& map, std::string_view tenant,
                                         std::span<const Key> keys, bool upsert,
                                         std::vector<std::optional<Record>>* found_out) {
  if (absl::Status s = CheckTenantExists(map, tenant); !s.ok()) return s;
  ReadOptions options{.tenant = upsert ? "" : std::string(tenant)};
  options.consistency.read_your_writes = true;
  absl::StatusOr<std::vector<std::optional<Record>>> found = Get(map.spec.name, keys, options);
  if (!found.ok()) return found.status();
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!(*found)[i].has_value()) continue;
    absl::StatusOr<std::vector<std::string>> tenants = ListShardedKeyTenants(map, keys[i]);
    if (absl::IsNotFound(tenants.status())) continue;  // deleted meanwhile
    if (!tenants.ok()) return tenants.status();
    if (tenants->empty() || tenants->front() != tenant) {
      return absl::PermissionDeniedError(
          absl::StrCat(upsert ? "records[" : "keys[", i,
                       "]: the key exists and is not owned by tenant '", std::string(tenant), "'"));
    }
  }
  if (found_out != nullptr) *found_out = *std::move(found);
  return absl::OkStatus();
}

absl::StatusOr<TenantPage> ClusterDB::ListShardedTenants(const ShardMap& map, uint32_t page_size,
                                                         std::string_view page_token) const {
  TenantPage page;
  std::map<std::string, size_t> at;  // tenant -> its index in page.tenants
  for (uint32_t shard = 0; shard < map.spec.shards; ++shard) {
    TenantPage part;
    absl::Status s =
        OnOneFreshReplica(map, shard, [&](const std::string& name, client::Client* peer) {
          absl::StatusOr<TenantPage> got =
              peer == nullptr ? local_->ListTenants(name, page_size, page_token)
                              : peer->ListTenants(name, page_size, std::string(page_token));
          if (got.ok()) part = *std::move(got);
          return got.status();
        });
    if (!s.ok()) return s;
    if (shard == 0) {
      page = part;
      for (size_t i = 0; i < page.tenants.size(); ++i) {
        at[page.tenants[i].name] = i;
        OverlayQuotas(map, &page.tenants[i]);
      }
      continue;
    }
    for (const TenantInfo& info : part.tenants) {
      auto it = at.find(info.name);
      if (it == at.end()) continue;  // every copy has every tenant once applied
      TenantInfo& sum = page.tenants[it->second];
      sum.vectors_owned += info.vectors_owned;
      sum.vectors_visible += info.vectors_visible;
      sum.bytes_owned += info.bytes_owned;
    }
  }
  return page;
}

absl::StatusOr<uint64_t> ClusterDB::CountShardedByTenant(const ShardMap& map,
                                                         std::string_view tenant,
                                                         bool owned_only) const {
  uint64_t total = 0;
  for (uint32_t shard = 0; shard < map.spec.shards; ++shard) {
    absl::Status s = OnOneReplica(map, shard, [&](const std::string& name, client::Client* peer) {
      absl::StatusOr<uint64_t> n = peer == nullptr
                                       ? local_->CountByTenant(name, tenant, owned_only)
                                       : peer->CountByTenant(name, std::string(tenant), owned_only);
      if (n.ok()) total += *n;
      return n.status();
    });
    if (!s.ok()) return s;
  }
  return total;
}

absl::StatusOr<std::vector<std::string>> ClusterDB::ListShardedKeyTenants(const ShardMap& map,
                                                                          const Key& key) const {
  std::vector<std::string> tenants;
  absl::Status s = OnOneReplica(
      map, ShardOfKey(key, map.spec.shards), [&](const std::string& name, client::Client* peer) {
        absl::StatusOr<std::vector<std::string>> got =
            peer == nullptr ? local_->ListKeyTenants(name, key) : peer->ListKeyTenants(name, key);
        if (got.ok()) tenants = *std::move(got);
        return got.status();
      });
  if (!s.ok()) return s;
  return tenants;
}

absl::StatusOr<KeyTenants> ClusterDB::DescribeShardedKeyTenants(const ShardMap& map,
                                                                const Key& key) const {
  KeyTenants tenants;
  absl::Status s = OnOneReplica(
      map, ShardOfKey(key, map.spec.shards), [&](const std::string& name, client::Client* peer) {
        absl::StatusOr<KeyTenants> got = peer == nullptr ? local_->DescribeKeyTenants(name, key)
                                                         : peer->DescribeKeyTenants(name, key);
        if (got.ok()) tenants = *std::move(got);
        return got.status();
      });
  if (!s.ok()) return s;
  return tenants;
}

}  // namespace shoal::cluster

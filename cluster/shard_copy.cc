// ShardReplica's copy of a shard from another replica (SeedIfBehind): used when the stream
// no longer holds the entries after this copy's applied sequence. The source's pages (Scroll
// with vectors) are a logical snapshot at its published applied sequence X; this copy then
// consumes the stream from X + 1 (what the pages already reflect re-applies idempotently).
// When the source has tenants, they are created here first (their copy quotas), each
// record is written for its owner and granted to its grantees as on the source
// (DescribeKeyTenants, one call per record), and their states are set at the end.
#include <iostream>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cluster/shard_replica.h"

namespace shoal::cluster {

absl::Status ShardReplica::SeedIfBehind() {
  absl::StatusOr<uint64_t> first = log_->FirstSequence(spec_.name, shard_);
  if (absl::IsNotFound(first.status())) return absl::OkStatus();  // Subscribe waits for it
  if (!first.ok()) return first.status();
  if (applied() + 1 >= *first) return absl::OkStatus();
  if (!seed_) {
    return absl::FailedPreconditionError(absl::StrCat("the stream starts at ", *first,
                                                      " past applied ", applied(),
                                                      " and no replica to copy from"));
  }
  absl::StatusOr<SeedSource> source = seed_(shard_, *first);
  if (!source.ok()) return source.status();
  if (source->applied + 1 < *first) {
    return absl::UnavailableError(absl::StrCat("replica on ", source->node_id, " applied ",
                                               source->applied, ", the stream starts at ", *first));
  }
  ready_ = false;  // until it has caught up again
  ready_at_.reset();
  absl::StatusOr<uint64_t> copied = CopyFrom(*source);
  if (!copied.ok()) return copied.status();
  if (absl::Status s = RecordApplied(source->applied); !s.ok()) return s;
  {
    absl::MutexLock lock(&mu_);
    applied_ = durable_ = source->applied;
  }
  std::cerr << "shoald: cluster: " << local_name_ << ": copied " << *copied << " records from node "
            << source->node_id << " at sequence " << source->applied << "\n";
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ShardReplica::CopyFrom(const SeedSource& source) {
  // The old copy may hold records deleted since: start from an empty collection.
  if (absl::Status s = local_->DropCollection(local_name_); !s.ok() && !absl::IsNotFound(s)) {
    return s;
  }
  CollectionSpec local{.name = local_name_, .dimension = spec_.dimension, .metric = spec_.metric};
  if (absl::Status s = local_->CreateCollection(local); !s.ok()) return s;
  std::vector<std::pair<std::string, TenantState>> states;
  if (source.tenants && source.key_tenants) {
    absl::StatusOr<std::vector<std::pair<std::string, TenantState>>> made = CopyTenants(source);
    if (!made.ok()) return made.status();
    states = *std::move(made);
  }
  uint64_t copied = 0;
  std::string token;
  do {
    if (stop_) return absl::CancelledError("stopped while copying " + local_name_);
    absl::StatusOr<ScrollPage> page = source.scroll(token);
    if (!page.ok()) return page.status();
    if (!page->records.empty()) {
      copied += page->records.size();
      absl::Status s = states.empty() ? local_->Upsert(local_name_, page->records, {.sync = true})
                                      : CopyPageWithTenants(source, page->records);
      if (!s.ok()) return s;
    }
    token = page->next_page_token;
  } while (!token.empty());
  for (const auto& [tenant, state] : states) {
    if (state == TenantState::kActive) continue;
    // A residency hint: a copy that cannot set it still serves the tenant.
    if (absl::Status s = local_->SetTenantState(local_name_, tenant, state); !s.ok()) {
      std::cerr << "shoald: cluster: " << local_name_ << ": tenant '" << tenant << "': state: " << s
                << "\n";
    }
  }
  return copied;
}

absl::StatusOr<std::vector<std::pair<std::string, TenantState>>> ShardReplica::CopyTenants(
    const SeedSource& source) {
  std::vector<std::pair<std::string, TenantState>> states;
  std::string token;
  do {
    absl::StatusOr<TenantPage> page = source.tenants(token);
    if (!page.ok()) return page.status();
    for (const TenantInfo& info : page->tenants) {
      // A copy keeps no vector or byte quota (they are cluster-wide: cluster_quotas.cc).
      const TenantSpec spec{
          .name = info.name,
          .quotas = {.max_searches_per_second = info.quotas.max_searches_per_second}};
      if (absl::Status s = local_->CreateTenant(local_name_, spec);
          !s.ok() && !absl::IsAlreadyExists(s)) {
        return s;
      }
      states.emplace_back(info.name, info.state);
    }
    token = page->next_page_token;
  } while (!token.empty());
  return states;
}

absl::Status ShardReplica::CopyPageWithTenants(const SeedSource& source,
                                               std::vector<Record>& records) {
  std::map<std::string, std::vector<Record>> by_owner;  // "" = no owner
  std::map<std::string, std::vector<Key>> grants;
  for (Record& record : records) {
    absl::StatusOr<KeyTenants> tenants = source.key_tenants(record.key);
    // Deleted on the source since its page was read: the stream's tail deletes it here too.
    if (absl::IsNotFound(tenants.status())) continue;
    if (!tenants.ok()) return tenants.status();
    for (const std::string& grantee : tenants->grantees) grants[grantee].push_back(record.key);
    by_owner[tenants->owner].push_back(std::move(record));
  }
  // A tenant made on the source after its tenants were listed is made here too (the stream's
  // tail then finds it: ALREADY_EXISTS, done).
  auto with_tenant = [&](const std::string& tenant, const std::function<absl::Status()>& write) {
    absl::Status s = write();
    if (!absl::IsNotFound(s) || tenant.empty()) return s;
    s = local_->CreateTenant(local_name_, {.name = tenant});
    if (!s.ok() && !absl::IsAlreadyExists(s)) return s;
    return write();
  };
  for (const auto& entry : by_owner) {
    const std::string& owner = entry.first;
    absl::Status s = with_tenant(owner, [&] {
      return local_->Upsert(local_name_, entry.second, {.sync = true, .tenant = owner});
    });
    if (!s.ok()) return s;
  }
  for (const auto& entry : grants) {
    const std::string& grantee = entry.first;
    absl::Status s = with_tenant(
        grantee, [&] { return local_->Grant(local_name_, grantee, entry.second, {.sync = true}); });
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace shoal::cluster

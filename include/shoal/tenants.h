// Value types of Shoal's multi-tenancy (after Curator): tenants inside a collection, each seeing
// the vectors it owns or was granted. A vector is stored once and may be visible to many
// tenants; its owner is the tenant named when it was upserted. The index is one shared
// clustering tree; each tenant's index is a sub-tree of it (tenants/). See DB's "Tenants".
#ifndef SHOAL_TENANTS_H_
#define SHOAL_TENANTS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace shoal {

// Tenant names follow collection names: [A-Za-z_][A-Za-z0-9_-]{0,63}.
// Limits of one tenant; 0 = unlimited. Exceeding one is ResourceExhausted naming the quota
// ("quota max_vectors of tenant 'acme' (1000) ...").
struct TenantQuotas {
  uint64_t max_vectors = 0;            // vectors the tenant owns
  uint64_t max_bytes = 0;              // bytes of the records it owns (vectors + attributes)
  double max_searches_per_second = 0;  // token bucket, burst of one second
  friend bool operator==(const TenantQuotas&, const TenantQuotas&) = default;
};

// kActive: its structures are in RAM. kInactive: not loaded; loaded on first use or on request.
// kOffloaded: its structures were written to the snapshot directory and dropped from RAM; its
// vectors stay in the collection (shared vectors stay visible to their other tenants).
enum class TenantState { kActive = 0, kInactive = 1, kOffloaded = 2 };
const char* TenantStateName(TenantState state);

struct TenantSpec {
  std::string name;
  TenantQuotas quotas;
};

struct TenantInfo {
  std::string name;
  TenantState state = TenantState::kActive;
  TenantQuotas quotas;
  uint64_t vectors_owned = 0;    // upserted by this tenant
  uint64_t vectors_visible = 0;  // owned + granted to it
  uint64_t bytes_owned = 0;
  // Searches since open, their latency percentiles (microseconds) and the index buckets
  // (postings and shortlists) they scanned.
  uint64_t searches = 0;
  double search_p50_us = 0;
  double search_p99_us = 0;
  uint64_t buckets_scanned = 0;
};

// The tenants of one record (DB::DescribeKeyTenants): its owner ("" when it has none: a
// record upserted without a tenant may still be granted to some) and its grantees by name.
struct KeyTenants {
  std::string owner;
  std::vector<std::string> grantees;
  friend bool operator==(const KeyTenants&, const KeyTenants&) = default;
};

// One page of DB::ListTenants, ordered by name. An empty next_page_token: the last page.
struct TenantPage {
  std::vector<TenantInfo> tenants;
  std::string next_page_token;
};

}  // namespace shoal

#endif  // SHOAL_TENANTS_H_

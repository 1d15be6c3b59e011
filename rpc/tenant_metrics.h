// TenantMetrics: shoald's per-tenant Prometheus series, with a bounded number of label values
// so that thousands of tenants cannot blow up the scrape (DESIGN.md §5, §7).
//
//   shoal_tenant_searches_total{collection,tenant}           counter: tenant-scoped searches
//   shoal_tenant_search_duration_seconds{collection,tenant}  histogram (8 coarse buckets)
//   shoal_tenant_quota_rejections_total{collection,tenant,op}  counter: RESOURCE_EXHAUSTED
//                                                            naming a quota; op = search|write
//   shoal_tenant_vectors{collection,tenant}                  gauge, read at scrape time: the
//                                                            records each tenant owns
//
// Cardinality: the first `max_tenant_series` (collection, tenant) pairs that search or hit a
// quota get series of their own; every later pair is counted under tenant="~other" (not a
// valid tenant name, so it never clashes). At 10,000 tenants the event series stay at
// max_tenant_series + 1 per collection family. The vectors gauge shows the `top_vectors`
// largest tenants of each collection by records owned, plus "~other" with the rest summed.
//
// Thread safety: all methods are thread-safe.
#ifndef SHOAL_RPC_TENANT_METRICS_H_
#define SHOAL_RPC_TENANT_METRICS_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace prometheus {
class Counter;
class Histogram;
class Registry;
struct MetricFamily;
template <typename T>
class Family;
}  // namespace prometheus

namespace shoal {
class DB;
}  // namespace shoal

namespace shoal::rpc {

class TenantMetrics {
 public:
  // The label every pair past the cap is counted under.
  static constexpr char kOtherTenant[] = "~other";

  // Registers the event families in `registry` (not owned; must outlive this).
  TenantMetrics(prometheus::Registry& registry, size_t max_tenant_series);
  TenantMetrics(const TenantMetrics&) = delete;
  TenantMetrics& operator=(const TenantMetrics&) = delete;

  // A search that named `tenant` ("" = not tenant-scoped: nothing is recorded) and ended with
  // `status` after `seconds`.
  void RecordSearch(absl::string_view collection, absl::string_view tenant,
                    const absl::Status& status, double seconds);
  // A write (upsert) for `tenant` that ended with `status`; counted only when it is a quota's
  // RESOURCE_EXHAUSTED.
  void RecordWriteRejection(absl::string_view collection, absl::string_view tenant,
                            const absl::Status& status);

  // The tenant label of (collection, tenant): the tenant itself, or kOtherTenant once
  // max_tenant_series pairs have series of their own.
  std::string Label(absl::string_view collection, absl::string_view tenant);

  // shoal_tenant_vectors for every collection of `db`: the `top` tenants by records owned,
  // then "~other" with the rest (when there is a rest). Collections whose tenants cannot be
  // listed are left out.
  static prometheus::MetricFamily CollectVectors(DB& db, size_t top);

 private:
  const size_t max_tenant_series_;
  prometheus::Family<prometheus::Counter>* searches_;
  prometheus::Family<prometheus::Histogram>* search_duration_;
  prometheus::Family<prometheus::Counter>* quota_rejections_;

  absl::Mutex mu_;
  absl::flat_hash_set<std::pair<std::string, std::string>> tracked_ ABSL_GUARDED_BY(mu_);
};

// Whether `status` is a tenant quota's RESOURCE_EXHAUSTED (its message names the quota).
bool IsQuotaRejection(const absl::Status& status);

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_TENANT_METRICS_H_

#include "rpc/tenant_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <cstdint>
#include <map>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "shoal/db.h"

namespace shoal::rpc {
namespace {

// Coarser than the per-RPC buckets: a tenant's histogram is multiplied by many tenants.
const prometheus::Histogram::BucketBoundaries& TenantLatencyBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1};
  return *buckets;
}

void AddGauge(prometheus::MetricFamily& family, const std::string& collection,
              const std::string& tenant, double value) {
  prometheus::ClientMetric metric;
  metric.label.push_back({"collection", collection});
  metric.label.push_back({"tenant", tenant});
  metric.gauge.value = value;
  family.metric.push_back(std::move(metric));
}

// Every tenant of `collection` with the records it owns; a failure (no engine, collection
// gone) leaves the collection out.
absl::StatusOr<std::vector<std::pair<uint64_t, std::string>>> OwnedByTenant(
    DB& db, const std::string& collection) {
  std::vector<std::pair<uint64_t, std::string>> owned;
  std::string token;
  do {
    absl::StatusOr<TenantPage> page = db.ListTenants(collection, 10000, token);
    if (!page.ok()) return page.status();
    for (const TenantInfo& info : page->tenants) owned.emplace_back(info.vectors_owned, info.name);
    token = page->next_page_token;
  } while (!token.empty());
  return owned;
}

}  // namespace

bool IsQuotaRejection(const absl::Status& status) {
  return absl::IsResourceExhausted(status) && absl::StrContains(status.message(), "quota");
}

TenantMetrics::TenantMetrics(prometheus::Registry& registry, size_t max_tenant_series)
    : max_tenant_series_(max_tenant_series) {
  searches_ = &prometheus::BuildCounter()
                   .Name("shoal_tenant_searches_total")
                   .Help(
                       "Tenant-scoped searches, by collection and tenant (bounded; the rest "
                       "under tenant=\"~other\").")
                   .Register(registry);
  search_duration_ = &prometheus::BuildHistogram()
                          .Name("shoal_tenant_search_duration_seconds")
                          .Help("Latency of tenant-scoped searches, by collection and tenant.")
                          .Register(registry);
  quota_rejections_ = &prometheus::BuildCounter()
                           .Name("shoal_tenant_quota_rejections_total")
                           .Help(
                               "Calls refused for a tenant quota, by collection, tenant and "
                               "op (search, write).")
                           .Register(registry);
}

std::string TenantMetrics::Label(absl::string_view collection, absl::string_view tenant) {
  std::pair<std::string, std::string> pair(collection, tenant);
  absl::MutexLock lock(&mu_);
  if (tracked_.contains(pair)) return pair.second;
  if (tracked_.size() >= max_tenant_series_) return kOtherTenant;
  tracked_.insert(pair);
  return pair.second;
}

void TenantMetrics::RecordSearch(absl::string_view collection, absl::string_view tenant,
                                 const absl::Status& status, double seconds) {
  if (tenant.empty()) return;
  const std::string label = Label(collection, tenant);
  const std::map<std::string, std::string> labels = {{"collection", std::string(collection)},
                                                     {"tenant", label}};
  if (IsQuotaRejection(status)) {
    std::map<std::string, std::string> with_op = labels;
    with_op.emplace("op", "search");
    quota_rejections_->Add(with_op).Increment();
    return;
  }
  searches_->Add(labels).Increment();
  if (status.ok()) search_duration_->Add(labels, TenantLatencyBuckets()).Observe(seconds);
}

void TenantMetrics::RecordWriteRejection(absl::string_view collection, absl::string_view tenant,
                                         const absl::Status& status) {
  if (tenant.empty() || !IsQuotaRejection(status)) return;
  quota_rejections_
      ->Add({{"collection", std::string(collection)},
             {"tenant", Label(collection, tenant)},
             {"op", "write"}})
      .Increment();
}

prometheus::MetricFamily TenantMetrics::CollectVectors(DB& db, size_t top) {
  prometheus::MetricFamily family;
  family.name = "shoal_tenant_vectors";
  family.help =
      "Records each tenant owns: the largest tenants of each collection, the rest summed under "
      "tenant=\"~other\".";
  family.type = prometheus::MetricType::Gauge;
  absl::StatusOr<std::vector<CollectionInfo>> collections = db.ListCollections();
  if (!collections.ok()) return family;
  for (const CollectionInfo& collection : *collections) {
    if (!collection.damage.empty()) continue;
    absl::StatusOr<std::vector<std::pair<uint64_t, std::string>>> owned =
        OwnedByTenant(db, collection.spec.name);
    if (!owned.ok() || owned->empty()) continue;
    const size_t shown = std::min(top, owned->size());
    std::partial_sort(owned->begin(), owned->begin() + shown, owned->end(),
                      [](const auto& a, const auto& b) {
                        return a.first != b.first ? a.first > b.first : a.second < b.second;
                      });
    uint64_t rest = 0;
    for (size_t i = 0; i < owned->size(); ++i) {
      if (i < shown) {
        AddGauge(family, collection.spec.name, (*owned)[i].second,
                 static_cast<double>((*owned)[i].first));
      } else {
        rest += (*owned)[i].first;
      }
    }
    if (owned->size() > shown) {
      AddGauge(family, collection.spec.name, kOtherTenant, static_cast<double>(rest));
    }
  }
  return family;
}

}  // namespace shoal::rpc

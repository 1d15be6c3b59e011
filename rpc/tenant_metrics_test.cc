#include "rpc/tenant_metrics.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace shoal::rpc {
namespace {

TEST(TenantMetricsTest, PairsPastTheCapShareTheOtherLabel) {
  prometheus::Registry registry;
  TenantMetrics metrics(registry, /*max_tenant_series=*/3);
  EXPECT_EQ(metrics.Label("docs", "a"), "a");
  EXPECT_EQ(metrics.Label("docs", "b"), "b");
  EXPECT_EQ(metrics.Label("other", "a"), "a");  // a (collection, tenant) pair counts
  EXPECT_EQ(metrics.Label("docs", "c"), TenantMetrics::kOtherTenant);
  EXPECT_EQ(metrics.Label("docs", "a"), "a");  // pairs that have a series keep it
  for (int i = 0; i < 10000; ++i) {
    ASSERT_EQ(metrics.Label("docs", absl::StrCat("t", i)), TenantMetrics::kOtherTenant);
  }
}

TEST(TenantMetricsTest, SeriesStayBoundedAtTenThousandTenants) {
  prometheus::Registry registry;
  TenantMetrics metrics(registry, /*max_tenant_series=*/50);
  for (int i = 0; i < 10000; ++i) {
    const std::string tenant = absl::StrCat("t", i);
    metrics.RecordSearch("docs", tenant, absl::OkStatus(), 0.001);
    metrics.RecordWriteRejection(
        "docs", tenant, absl::ResourceExhaustedError("quota max_vectors of tenant ... exceeded"));
  }
  metrics.RecordSearch("docs", "", absl::OkStatus(), 0.001);  // not tenant-scoped: nothing
  size_t searches = 0, rejections = 0;
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name == "shoal_tenant_searches_total") searches = family.metric.size();
    if (family.name == "shoal_tenant_quota_rejections_total") rejections = family.metric.size();
  }
  EXPECT_EQ(searches, 51u);  // 50 tenants + "~other"
  EXPECT_EQ(rejections, 51u);
}

TEST(TenantMetricsTest, OnlyQuotaExhaustionCountsAsAQuotaRejection) {
  EXPECT_TRUE(IsQuotaRejection(absl::ResourceExhaustedError("quota max_bytes of tenant 'a'")));
  EXPECT_FALSE(IsQuotaRejection(absl::ResourceExhaustedError("disk full")));
  EXPECT_FALSE(IsQuotaRejection(absl::InvalidArgumentError("quota")));
  EXPECT_FALSE(IsQuotaRejection(absl::OkStatus()));
}

}  // namespace
}  // namespace shoal::rpc

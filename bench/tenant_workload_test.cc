// Tests of `shoal_bench tenants`' workload: tenant sizes, home classes, sharing, queries, the
// exact oracle and the scoring (recall by slice, isolation violations).
#include "bench/tenant_workload.h"

#include <random>

#include "gtest/gtest.h"

namespace shoal::bench {
namespace {

std::vector<int32_t> Labels(size_t n, int classes) {
  std::vector<int32_t> labels(n);
  for (size_t i = 0; i < n; ++i) labels[i] = static_cast<int32_t>(i % classes);
  return labels;
}

TEST(TenantWorkloadTest, ZipfSizesHomeClassesAndSharing) {
  const std::vector<int32_t> labels = Labels(20000, 10), query_labels = Labels(500, 10);
  TenantWorkloadOptions o;
  o.tenants = 200;
  o.queries = 400;
  o.large_threshold = 500;
  absl::StatusOr<TenantWorkload> w = MakeTenantWorkload(labels, 10, query_labels, o);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->members.size(), 200u);
  EXPECT_EQ(w->members.front().size(), 20000u / 8);  // clamped at rows / 8
  EXPECT_GE(w->members.back().size(), o.min_size);
  EXPECT_LT(w->members.back().size(), 100u);  // 3 * 20000 / H(200) / 200 = 51
  for (size_t t = 1; t < w->members.size(); ++t) {
    EXPECT_LE(w->members[t].size(), w->members[t - 1].size()) << t;
  }
  // Most of a tenant's vectors come from its home classes (when they hold enough rows: the
  // largest tenant exhausts a single home class of 2000).
  const auto& mid = w->members[20];
  size_t home = 0;
  for (uint32_t row : mid) {
    for (int32_t c : w->home[20]) home += labels[row] == c;
  }
  EXPECT_GE(home, mid.size() * 85 / 100);
  EXPECT_GT(w->MeanSharing(), 1.5);
  // Every query's tenant holds the query's class; both slices are asked.
  size_t large = 0;
  ASSERT_EQ(w->queries.size(), 400u);
  for (const auto& q : w->queries) {
    const auto& h = w->home[q.tenant];
    EXPECT_NE(std::find(h.begin(), h.end(), query_labels[q.row]), h.end());
    large += w->IsLarge(q.tenant);
  }
  EXPECT_GT(large, 100u);
  EXPECT_LT(large, 300u);
}

TEST(TenantWorkloadTest, BadInputNamesTheField) {
  const std::vector<int32_t> labels = Labels(100, 3), bad = {0, 7};
  TenantWorkloadOptions o;
  o.tenants = 0;
  EXPECT_NE(MakeTenantWorkload(labels, 3, labels, o).status().message().find("tenants"),
            std::string::npos);
  o.tenants = 5;
  EXPECT_NE(MakeTenantWorkload(labels, 3, bad, o).status().message().find("query_labels[1]"),
            std::string::npos);
  o.min_size = 1000;
  EXPECT_NE(MakeTenantWorkload(labels, 3, labels, o).status().message().find("min_size"),
            std::string::npos);
}

TEST(TenantWorkloadTest, OracleAndScoreCountRecallAndViolations) {
  Matrix base{.rows = 6, .cols = 1, .data = {0, 1, 2, 3, 4, 5}};
  Matrix queries{.rows = 1, .cols = 1, .data = {2.1f}};
  TenantWorkload w;
  w.members = {{0, 1, 2, 3, 4}, {5}};
  w.home = {{0}, {0}};
  w.queries = {{0, 0}, {1, 0}};
  w.large_threshold = 3;
  const Neighbors truth = ExactTenantSearch(base, queries, w, Metric::kL2, 2);
  EXPECT_EQ(truth.ids, (std::vector<int64_t>{2, 3, 5, -1}));
  Neighbors found(2, 2);
  found.ids = {2, 5, 5, -1};  // query 0: row 5 is tenant 1's only
  TenantScore s = ScoreTenantAnswers(base, queries, w, truth, found, Metric::kL2);
  EXPECT_EQ(s.violations, 1u);
  EXPECT_DOUBLE_EQ(s.recall_large, 0.5);
  EXPECT_DOUBLE_EQ(s.recall_small, 1.0);  // a tenant of one vector: min(k, size) = 1
  EXPECT_EQ(s.by_query, (std::vector<double>{0.5, 1.0}));
  found.ids = {3, 2, 5, -1};
  s = ScoreTenantAnswers(base, queries, w, truth, found, Metric::kL2);
  EXPECT_EQ(s.violations, 0u);
  EXPECT_DOUBLE_EQ(s.recall, 1.0);
}

TEST(TenantWorkloadTest, NearestSeedClassesAgreeForBaseAndQueries) {
  Matrix base{.rows = 4, .cols = 1, .data = {0, 0.1f, 10, 10.1f}};
  const std::vector<int32_t> c = NearestSeedClasses(base, base, 2, 3);
  EXPECT_EQ(c[0], c[1]);
  EXPECT_EQ(c[2], c[3]);
  Matrix q{.rows = 1, .cols = 1, .data = {9.9f}};
  EXPECT_EQ(NearestSeedClasses(base, q, 2, 3)[0], c[2]);
}

}  // namespace
}  // namespace shoal::bench

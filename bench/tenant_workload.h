// The multi-tenant workload of `shoal_bench tenants` (after Curator's YFCC set): tenants of
// Zipf-distributed sizes over a labelled base set, each drawing most of its vectors from one or
// two "home" classes, vectors shared by about `sharing` tenants on average, and queries asked for
// tenants that hold the query's class (half of them large tenants, half small). Also the oracle
// (exact search among the vectors one tenant sees) and the scoring of an answer against it.
//
//   SHOAL_ASSIGN_OR_RETURN(TenantWorkload w, MakeTenantWorkload(labels, 10, query_labels, {}));
//   TenantTruth truth = ExactTenantSearch(base, queries, w, Metric::kL2, 10);
//   TenantScore s = ScoreTenantAnswers(base, queries, w, truth, found, Metric::kL2);
//
// Thread safety: pure functions over plain values.
#ifndef SHOAL_BENCH_TENANT_WORKLOAD_H_
#define SHOAL_BENCH_TENANT_WORKLOAD_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/recall.h"
#include "shoal/dataset.h"
#include "shoal/types.h"

namespace shoal::bench {

struct TenantWorkloadOptions {
  size_t tenants = 1000;
  double zipf_s = 1.0;  // the r-th largest tenant holds ~ c / r^zipf_s vectors
  size_t min_size = 5;  // "a handful"
  size_t max_size = 0;  // 0 = base rows / 8
  // Mean tenants per vector held by any (sum of tenant sizes / base rows; sets c).
  double sharing = 3.0;
  double home_fraction = 0.9;  // of a tenant's vectors drawn from its home classes
  size_t queries = 1000;
  size_t large_threshold = 1000;  // a tenant with at least this many vectors is "large"
  uint64_t seed = 1;
};

struct TenantWorkload {
  // Per tenant (tenant 0 the largest): the base rows it sees, sorted, and its home classes.
  std::vector<std::vector<uint32_t>> members;
  std::vector<std::vector<int32_t>> home;
  struct Query {
    uint32_t tenant = 0;
    uint32_t row = 0;  // into the query matrix
  };
  std::vector<Query> queries;
  size_t large_threshold = 0;

  bool IsLarge(uint32_t tenant) const { return members[tenant].size() >= large_threshold; }
  bool Sees(uint32_t tenant, int64_t row) const;
  // Sum of tenant sizes / base rows held by at least one tenant.
  double MeanSharing() const;
  size_t Memberships() const;
};

// InvalidArgument (naming the field) for no tenants, no queries, no classes, a label outside
// [0, classes), or a min_size larger than the base.
absl::StatusOr<TenantWorkload> MakeTenantWorkload(std::span<const int32_t> labels, int classes,
                                                  std::span<const int32_t> query_labels,
                                                  const TenantWorkloadOptions& options);

// Classes for an unlabelled set: each of `rows` gets the nearest of `classes` rows of `base`
// drawn with `seed` (squared L2), so that a class is a region of the space as a real label
// roughly is. The same base and seed classify base rows and queries alike.
std::vector<int32_t> NearestSeedClasses(const Matrix& base, const Matrix& rows, int classes,
                                        uint64_t seed);

// The oracle: per query of `w`, the k nearest among its tenant's rows (TrueDistance units); a
// tenant with fewer than k rows gets them all (the rest padded with -1).
Neighbors ExactTenantSearch(const Matrix& base, const Matrix& queries, const TenantWorkload& w,
                            Metric metric, size_t k);

struct TenantScore {
  double recall_small = 0;  // mean recall@k over the queries of small tenants
  double recall_large = 0;
  double recall = 0;  // over all queries
  size_t small_queries = 0, large_queries = 0;
  // Results the query's tenant may not see (any > 0 is a bug of the system searched).
  uint64_t violations = 0;
  std::vector<double> by_query;  // each query's recall@k
};

// recall@k per query: answers within the truth's k-th distance (+1e-3, as ann-benchmarks) over
// min(k, tenant size); an id returned twice counts once.
TenantScore ScoreTenantAnswers(const Matrix& base, const Matrix& queries, const TenantWorkload& w,
                               const Neighbors& truth, const Neighbors& found, Metric metric);

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_TENANT_WORKLOAD_H_

// Search results in one shape for every system a bench compares, and recall@k between them.
//
//   Neighbors shoal(nq, 10), faiss(nq, 10);  ... fill ...
//   double r = RecallAtK(shoal, faiss, 10);            // by ids
//   double t = RecallAtK(shoal, faiss, 10, 1e-4);      // ties at the k-th distance count
//
// Thread safety: plain values; RecallAtK is pure.
#ifndef SHOAL_BENCH_RECALL_H_
#define SHOAL_BENCH_RECALL_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "shoal/dataset.h"
#include "shoal/types.h"

namespace shoal::bench {

// Row-major nq x k ids (and distances, same units for the systems compared); -1 pads a row
// that has fewer than k results.
struct Neighbors {
  Neighbors() = default;
  Neighbors(size_t nq, size_t k) : nq(nq), k(k), ids(nq * k, -1), distances(nq * k, 0) {}
  size_t nq = 0;
  size_t k = 0;
  std::vector<int64_t> ids;
  std::vector<float> distances;
  int64_t* Ids(size_t q) { return ids.data() + q * k; }
  float* Distances(size_t q) { return distances.data() + q * k; }
};

// Ground truth from a dataset's neighbors matrix (no distances).
Neighbors FromIntMatrix(const IntMatrix& m);

// Mean over queries of |found[q][:k] ∩ truth[q][:k]| / k (k is capped by both widths).
// With tie_epsilon >= 0 and distances in both, a found result also counts when its distance
// is within (1 + tie_epsilon) of truth's k-th distance, so equally close points swapped at
// the boundary are not misses. Queries beyond min(found.nq, truth.nq) are ignored.
double RecallAtK(const Neighbors& found, const Neighbors& truth, size_t k, double tie_epsilon = -1);

// The metric of an ann-benchmarks `distance` name: euclidean/l2, angular/cosine,
// ip/inner_product; InvalidArgument (naming the dataset) for any other.
absl::StatusOr<Metric> MetricOfDataset(const AnnDataset& ds);

// The distance ann-benchmarks reports for `metric`, in double precision: Euclidean (not
// squared) for kL2, 1 - cos for kCosine, -<q,x> for kInnerProduct.
double TrueDistance(const float* q, const float* x, size_t dim, Metric metric);

// Overwrites found.distances with TrueDistance of each returned id (ids < 0 keep 0), so that
// systems with different distance conventions are judged by the same numbers.
void SetTrueDistances(const Matrix& base, const Matrix& queries, Metric metric, Neighbors* found);

// ann-benchmarks' recall@k: a returned item is a hit when its true distance is at most the
// query's true k-th distance + epsilon (kth_distance[q], same units as TrueDistance); recall
// is the mean over queries of hits / k. Unlike ann-benchmarks, an id returned twice for one
// query counts once (a correct system never does that; a buggy one must not gain by it).
// Queries beyond min(found.nq, kth_distance.size()) are ignored.
double AnnBenchmarksRecall(const Neighbors& found, std::span<const double> kth_distance, size_t k,
                           double epsilon = 1e-3);

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_RECALL_H_

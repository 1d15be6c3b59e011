#include "bench/recall.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace shoal::bench {

Neighbors FromIntMatrix(const IntMatrix& m) {
  Neighbors n;
  n.nq = m.rows;
  n.k = m.cols;
  n.ids.assign(m.data.begin(), m.data.end());
  return n;
}

double RecallAtK(const Neighbors& found, const Neighbors& truth, size_t k, double tie_epsilon) {
  k = std::min({k, found.k, truth.k});
  const size_t nq = std::min(found.nq, truth.nq);
  if (k == 0 || nq == 0) return 0;
  const bool ties = tie_epsilon >= 0 && found.distances.size() == found.ids.size() &&
                    truth.distances.size() == truth.ids.size();
  size_t hits = 0;
  for (size_t q = 0; q < nq; ++q) {
    const int64_t* want = truth.ids.data() + q * truth.k;
    const int64_t* got = found.ids.data() + q * found.k;
    const double limit = ties ? truth.distances[q * truth.k + k - 1] * (1 + tie_epsilon) : 0;
    for (size_t i = 0; i < k; ++i) {
      if (got[i] < 0) continue;
      if (std::find(want, want + k, got[i]) != want + k ||
          (ties && found.distances[q * found.k + i] <= limit)) {
        ++hits;
      }
    }
  }
  return static_cast<double>(hits) / static_cast<double>(nq * k);
}

absl::StatusOr<Metric> MetricOfDataset(const AnnDataset& ds) {
  if (ds.distance == "euclidean" || ds.distance == "l2") return Metric::kL2;
  if (ds.distance == "angular" || ds.distance == "cosine") return Metric::kCosine;
  if (ds.distance == "ip" || ds.distance == "inner_product") return Metric::kInnerProduct;
  return absl::InvalidArgumentError(
      absl::StrCat(ds.name, ": distance '", ds.distance, "' is not supported"));
}

double TrueDistance(const float* q, const float* x, size_t dim, Metric metric) {
  double dot = 0, qq = 0, xx = 0, l2 = 0;
  for (size_t j = 0; j < dim; ++j) {
    const double a = q[j], b = x[j];
    dot += a * b;
    qq += a * a;
    xx += b * b;
    l2 += (a - b) * (a - b);
  }
  switch (metric) {
    case Metric::kL2:
      return std::sqrt(l2);
    case Metric::kInnerProduct:
      return -dot;
    case Metric::kCosine:
      return qq > 0 && xx > 0 ? 1 - dot / std::sqrt(qq * xx) : 1;
  }
  return std::sqrt(l2);
}

void SetTrueDistances(const Matrix& base, const Matrix& queries, Metric metric, Neighbors* found) {
  found->distances.resize(found->ids.size());
  for (size_t q = 0; q < found->nq && q < queries.rows; ++q) {
    for (size_t j = 0; j < found->k; ++j) {
      const int64_t id = found->Ids(q)[j];
      const bool valid = id >= 0 && static_cast<size_t>(id) < base.rows;
      found->Distances(q)[j] =
          valid ? static_cast<float>(TrueDistance(queries.Row(q), base.Row(id), base.cols, metric))
                : 0;
    }
  }
}

double AnnBenchmarksRecall(const Neighbors& found, std::span<const double> kth_distance, size_t k,
                           double epsilon) {
  k = std::min(k, found.k);
  const size_t nq = std::min(found.nq, kth_distance.size());
  if (k == 0 || nq == 0 || found.distances.size() != found.ids.size()) return 0;
  double sum = 0;
  for (size_t q = 0; q < nq; ++q) {
    const int64_t* ids = found.ids.data() + q * found.k;
    const float* dist = found.distances.data() + q * found.k;
    size_t hits = 0;
    for (size_t i = 0; i < k; ++i) {
      if (ids[i] < 0 || std::find(ids, ids + i, ids[i]) != ids + i) continue;
      if (dist[i] <= kth_distance[q] + epsilon) ++hits;
    }
    sum += static_cast<double>(hits) / static_cast<double>(k);
  }
  return sum / static_cast<double>(nq);
}

}  // namespace shoal::bench

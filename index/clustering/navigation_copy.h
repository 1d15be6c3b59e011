// NavigationCopy: a compact copy of a set of centroids (a CentroidTree's nodes) for choosing the
// nearest ones to a query cheaply. The float centroids stay the reference (what is stored, what
// builders score); this copy trades a little precision for far fewer bytes read per query:
//
//  - a lower bound first: every centroid's coordinates on a k-dimensional orthonormal basis
//    (kBasis; approximate principal axes of the centroids, found at construction) plus the norm
//    of the rest. For a query q, |q - c|^2 >= |P(q - c)|^2 + (|(I-P)(q - mu)| - |(I-P)(c - mu)|)^2
//    (Pythagoras, then the triangle inequality in the complement), read from k + 1 floats per
//    centroid, a table small enough to stay cached between queries;
//  - then, only for a centroid whose bound does not rule it out, its distance from a half-
//    precision copy of c - mu (dimensions by decreasing variance, the partial sum checked
//    against the bound: L2SqrHalfBounded).
//
//   NavigationCopy copy = NavigationCopy::Build(centroids, rows, dim);
//   NavigationCopy::Query prepared;
//   copy.Prepare(q, &prepared);
//   float d = copy.Distance(prepared, row, /*bound=*/kth_best);  // > bound: cannot be kept
//
// Distances are those of the half copy: off the float ones by at most about
// 2^-10 |q - c| |c - mu| (half rounding of c - mu), typically ~1e-4 relative; re-score what you
// keep in float when exact values matter. Build is deterministic; empty() when a coordinate
// is beyond the half range (|x| > 65504) or not finite, and then the caller scores floats.
// Thread safety: immutable after Build; const methods may run concurrently (one Query each).
#ifndef SHOAL_INDEX_CLUSTERING_NAVIGATION_COPY_H_
#define SHOAL_INDEX_CLUSTERING_NAVIGATION_COPY_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/aligned_vector.h"
#include "base/prefetch.h"

namespace shoal::index {

class NavigationCopy {
 public:
  // Basis size (capped at dim / 4; no basis below 32 dimensions, where the half rows are short).
  static constexpr size_t kBasis = 32;
  // The lower bound rules a row out only when it exceeds the bound by this much: it is exact up
  // to float rounding and the half distances it is compared with are typically within ~1e-4 of
  // the float ones, so a row ruled out would (all but always) have been dropped by its half
  // distance.
  static constexpr float kBoundSlack = 1e-3f;

  // `centroids` holds rows x dim floats, row r at centroids + r * dim.
  static NavigationCopy Build(const float* centroids, size_t rows, size_t dim);

  // A query in the copy's terms. Reused across calls, it stops allocating once grown.
  struct Query {
    std::vector<float> permuted;   // q - mu in the copy's dimension order
    std::vector<float> projected;  // P(q - mu)
    float residual = 0;            // |(I-P)(q - mu)|
  };
  void Prepare(const float* q, Query* out) const;
  // The squared distance of row `row` to the query (half precision), or a value > bound as soon
  // as the row is known to be farther than `bound` (the lower bound, or a partial sum).
  float Distance(const Query& q, uint32_t row, float bound) const {
    const float lower = LowerBound(q, row);
    return RulesOut(lower, bound) ? lower : HalfDistance(q, row, bound);
  }
  // The two steps of Distance, for callers that rank many rows by their bounds first:
  // LowerBound reads k + 1 floats (0 without a basis); RulesOut says whether it proves the row
  // farther than `bound` (with a margin for rounding); HalfDistance reads the half row
  // (L2SqrHalfBounded: a value > bound when it stops early).
  float LowerBound(const Query& q, uint32_t row) const;
  // out[i] = LowerBound(q, rows[i]) for every i, bit for bit, in one kernel call (the query's
  // projection loaded once for many rows: a descent level's children).
  void LowerBounds(const Query& q, std::span<const uint32_t> rows, float* out) const;
  static bool RulesOut(float lower, float bound) { return lower > bound * (1 + kBoundSlack); }
  float HalfDistance(const Query& q, uint32_t row, float bound) const;
  // Starts loading the first 512 bytes of a half row (a hint; no effect on results): the
  // hardware prefetcher follows the stream; with a KiB per row perf put samples on the
  // prefetches themselves (full fill buffers). Whole-query CPU time was the same either way.
  void PrefetchRow(uint32_t row) const {
    base::PrefetchLines(&half_[size_t{row} * dim_], std::min<size_t>(512, dim_ * sizeof(uint16_t)));
  }

  bool empty() const { return half_.empty(); }
  size_t basis_size() const { return basis_size_; }
  size_t MemoryBytes() const;

 private:
  void BuildBasis(const float* centroids, size_t rows);

  size_t dim_ = 0;
  size_t basis_size_ = 0;
  std::vector<uint32_t> order_;         // dimensions by decreasing variance over the rows
  base::AlignedVector<uint16_t> half_;  // rows x dim: c - mu in order_; from a cache line
  std::vector<float> mean_;             // dim
  std::vector<float> basis_;            // basis_size x dim, orthonormal rows
  std::vector<float> basis_mean_;       // <mean, basis row j>
  std::vector<float> bounds_;           // rows x (basis_size + 1): P(c - mu), then |(I-P)(c - mu)|
};

}  // namespace shoal::index

#endif  // SHOAL_INDEX_CLUSTERING_NAVIGATION_COPY_H_

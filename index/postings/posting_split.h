// BalancedTwoMeans: splits one over-full posting's vectors into two halves (SPFresh's split).
// Lloyd iterations from the two mutually farthest of a few sampled points; each round assigns by
// the difference of squared distances d(x,c1) - d(x,c2) and cuts at the rank that keeps both
// halves within [balance, 1 - balance] of the points, so a skewed posting still splits into two
// usable postings (never one empty half). Centroids are the means of their halves.
//
//   TwoMeans s = BalancedTwoMeans(vectors, n, dim, /*iterations=*/8, /*balance=*/0.25f);
//   // s.side[i] is 0 or 1; s.centroid[0..1] hold dim floats each.
//
// Deterministic; pure function; thread-safe. Requires n >= 2.
#ifndef SHOAL_INDEX_POSTINGS_POSTING_SPLIT_H_
#define SHOAL_INDEX_POSTINGS_POSTING_SPLIT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shoal::index {

struct TwoMeans {
  std::vector<uint8_t> side;       // n entries, 0 or 1
  std::vector<float> centroid[2];  // dim floats each
};

TwoMeans BalancedTwoMeans(const float* vectors, size_t n, size_t dim, int iterations,
                          float balance);

}  // namespace shoal::index

#endif  // SHOAL_INDEX_POSTINGS_POSTING_SPLIT_H_

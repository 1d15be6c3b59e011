#include "bench/recall.h"

#include <algorithm>

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

}  // namespace shoal::bench

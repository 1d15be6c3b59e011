// The vector as every index stores and searches it: unit length for cosine (so that 1 - cos is
// 1 + the inner product), else as given.
#ifndef SHOAL_DB_INDEX_FORM_H_
#define SHOAL_DB_INDEX_FORM_H_

#include <cmath>
#include <cstddef>
#include <vector>

#include "index/distance/distance.h"
#include "shoal/types.h"

namespace shoal::db {

// out[0, n) = v / |v|.
inline void Normalize(const float* v, size_t n, float* out) {
  double norm = 0;
  for (size_t i = 0; i < n; ++i) norm += static_cast<double>(v[i]) * v[i];
  const float inv = static_cast<float>(1.0 / std::sqrt(norm));
  for (size_t i = 0; i < n; ++i) out[i] = v[i] * inv;
}

// `v` in index form; may point into *scratch.
inline const float* IndexForm(Metric metric, const std::vector<float>& v,
                              std::vector<float>* scratch) {
  if (metric != Metric::kCosine) return v.data();
  scratch->resize(v.size());
  Normalize(v.data(), v.size(), scratch->data());
  return scratch->data();
}

// Appends `v` in index form to *out (one write per float: no zero-fill, no scratch copy).
inline void AppendIndexForm(Metric metric, const std::vector<float>& v, std::vector<float>* out) {
  const size_t at = out->size();
  if (metric != Metric::kCosine) {
    out->insert(out->end(), v.begin(), v.end());
    return;
  }
  out->resize(at + v.size());
  Normalize(v.data(), v.size(), out->data() + at);
}

// The index's metric for a collection's.
inline index::Metric IndexMetric(Metric m) {
  return m == Metric::kL2 ? index::Metric::kL2 : index::Metric::kInnerProduct;
}

}  // namespace shoal::db

#endif  // SHOAL_DB_INDEX_FORM_H_

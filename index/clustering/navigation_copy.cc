#include "index/clustering/navigation_copy.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "index/distance/distance.h"

namespace shoal::index {
namespace {

// Subspace iterations for the basis. Any orthonormal basis gives a valid bound; nearer the
// principal axes, it is tighter. A few rounds from a random start get most of the way.
constexpr int kBasisIterations = 6;
// Rows the basis is fitted on (evenly spaced), so that a large tree's load stays quick.
constexpr size_t kBasisSampleRows = 4096;

// Modified Gram-Schmidt over the rows of v (count x dim), in double. Rows that come out
// (numerically) dependent are dropped; returns how many remain, packed at the front.
size_t Orthonormalize(std::vector<double>& v, size_t count, size_t dim) {
  size_t kept = 0;
  for (size_t r = 0; r < count; ++r) {
    double* row = &v[r * dim];
    double before = 0;
    for (size_t j = 0; j < dim; ++j) before += row[j] * row[j];
    for (size_t p = 0; p < kept; ++p) {
      const double* prev = &v[p * dim];
      double dot = 0;
      for (size_t j = 0; j < dim; ++j) dot += row[j] * prev[j];
      for (size_t j = 0; j < dim; ++j) row[j] -= dot * prev[j];
    }
    double norm = 0;
    for (size_t j = 0; j < dim; ++j) norm += row[j] * row[j];
    if (!(norm > 1e-12 * before) || norm == 0) continue;
    const double scale = 1 / std::sqrt(norm);
    double* dst = &v[kept * dim];
    for (size_t j = 0; j < dim; ++j) dst[j] = row[j] * scale;
    ++kept;
  }
  return kept;
}

}  // namespace

NavigationCopy NavigationCopy::Build(const float* centroids, size_t rows, size_t dim) {
  NavigationCopy copy;
  if (rows == 0 || dim == 0) return copy;
  copy.dim_ = dim;
  std::vector<double> mean(dim, 0), var(dim, 0);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < dim; ++j) mean[j] += centroids[r * dim + j];
  }
  for (double& m : mean) m /= static_cast<double>(rows);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < dim; ++j) {
      const double d = centroids[r * dim + j] - mean[j];
      var[j] += d * d;
    }
  }
  copy.order_.resize(dim);
  std::iota(copy.order_.begin(), copy.order_.end(), 0u);
  std::stable_sort(copy.order_.begin(), copy.order_.end(),
                   [&](uint32_t a, uint32_t b) { return var[a] > var[b]; });
  copy.mean_.assign(mean.begin(), mean.end());
  // Centred: a half's rounding error scales with the value, and |c - mu| is what matters.
  copy.half_.resize(rows * dim);
  std::vector<float> row(dim);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < dim; ++j) {
      row[j] = centroids[r * dim + copy.order_[j]] - copy.mean_[copy.order_[j]];
    }
    if (!FloatsToHalves(row.data(), dim, copy.half_.data() + r * dim)) return NavigationCopy();
  }
  copy.BuildBasis(centroids, rows);
  return copy;
}

// Subspace iteration on the centroids' covariance: V <- orthonormalize((X^T X) V), X centred.
void NavigationCopy::BuildBasis(const float* centroids, size_t rows) {
  const size_t dim = dim_;
  const size_t step = (rows + kBasisSampleRows - 1) / kBasisSampleRows;
  const size_t sample = (rows + step - 1) / step;
  size_t k = dim >= 32 ? std::min({kBasis, dim / 4, sample}) : 0;
  if (k == 0) return;
  std::vector<float> x(sample * dim);
  for (size_t i = 0; i < sample; ++i) {
    for (size_t j = 0; j < dim; ++j) x[i * dim + j] = centroids[i * step * dim + j] - mean_[j];
  }
  std::mt19937 rng(20261121);
  std::normal_distribution<double> gauss(0, 1);
  std::vector<double> v(k * dim);
  for (double& e : v) e = gauss(rng);
  k = Orthonormalize(v, k, dim);
  std::vector<float> vf(k * dim), y(sample * k);
  for (int it = 0; it < kBasisIterations && k > 0; ++it) {
    std::copy(v.begin(), v.begin() + k * dim, vf.begin());
    for (size_t i = 0; i < sample; ++i) {
      for (size_t j = 0; j < k; ++j) y[i * k + j] = InnerProduct(&x[i * dim], &vf[j * dim], dim);
    }
    std::fill(v.begin(), v.end(), 0.0);
    for (size_t i = 0; i < sample; ++i) {
      for (size_t j = 0; j < k; ++j) {
        const double w = y[i * k + j];
        double* out = &v[j * dim];
        for (size_t e = 0; e < dim; ++e) out[e] += w * x[i * dim + e];
      }
    }
    k = Orthonormalize(v, k, dim);
  }
  basis_size_ = k;
  if (k == 0) return;
  basis_.assign(v.begin(), v.begin() + k * dim);
  basis_mean_.resize(k);
  for (size_t j = 0; j < k; ++j) basis_mean_[j] = InnerProduct(mean_.data(), &basis_[j * dim], dim);
  bounds_.resize(rows * (k + 1));
  std::vector<float> centred(dim);
  for (size_t i = 0; i < rows; ++i) {
    for (size_t j = 0; j < dim; ++j) centred[j] = centroids[i * dim + j] - mean_[j];
    float* b = &bounds_[i * (k + 1)];
    double in_basis = 0;
    for (size_t j = 0; j < k; ++j) {
      b[j] = InnerProduct(centred.data(), &basis_[j * dim], dim);
      in_basis += double{b[j]} * b[j];
    }
    double total = 0;
    for (float e : centred) total += double{e} * e;
    b[k] = static_cast<float>(std::sqrt(std::max(0.0, total - in_basis)));
  }
}

void NavigationCopy::Prepare(const float* q, Query* out) const {
  out->permuted.resize(dim_);
  for (size_t j = 0; j < dim_; ++j) out->permuted[j] = q[order_[j]] - mean_[order_[j]];
  const size_t k = basis_size_;
  out->projected.resize(k);
  if (k == 0) return;
  double in_basis = 0;
  for (size_t j = 0; j < k; ++j) {
    out->projected[j] = InnerProduct(q, &basis_[j * dim_], dim_) - basis_mean_[j];
    in_basis += double{out->projected[j]} * out->projected[j];
  }
  const double total = L2Sqr(q, mean_.data(), dim_);
  out->residual = static_cast<float>(std::sqrt(std::max(0.0, total - in_basis)));
}

float NavigationCopy::LowerBound(const Query& q, uint32_t row) const {
  const size_t k = basis_size_;
  if (k == 0) return 0;
  const float* b = &bounds_[size_t{row} * (k + 1)];
  const float rest = q.residual - b[k];
  return L2Sqr(q.projected.data(), b, k) + rest * rest;
}

void NavigationCopy::LowerBounds(const Query& q, std::span<const uint32_t> rows, float* out) const {
  const size_t k = basis_size_;
  if (k == 0) {
    std::fill(out, out + rows.size(), 0.0f);
    return;
  }
  thread_local std::vector<const float*> at;
  at.resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) at[i] = &bounds_[size_t{rows[i]} * (k + 1)];
  L2SqrRows(q.projected.data(), at.data(), rows.size(), out, k);
  for (size_t i = 0; i < rows.size(); ++i) {
    const float rest = q.residual - at[i][k];
    out[i] += rest * rest;
  }
}

float NavigationCopy::HalfDistance(const Query& q, uint32_t row, float bound) const {
  return L2SqrHalfBounded(q.permuted.data(), &half_[size_t{row} * dim_], dim_, bound);
}

size_t NavigationCopy::MemoryBytes() const {
  return sizeof(*this) + order_.capacity() * 4 + half_.capacity() * 2 +
         4 * (mean_.capacity() + basis_.capacity() + basis_mean_.capacity() + bounds_.capacity());
}

}  // namespace shoal::index

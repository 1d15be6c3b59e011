#include "index/postings/posting_split.h"

#include <algorithm>
#include <numeric>

#include "index/distance/distance.h"

namespace shoal::index {
namespace {

void Mean(const float* vectors, size_t dim, const std::vector<uint8_t>& side, uint8_t which,
          std::vector<float>* out) {
  out->assign(dim, 0.0f);
  size_t count = 0;
  for (size_t i = 0; i < side.size(); ++i) {
    if (side[i] != which) continue;
    ++count;
    for (size_t j = 0; j < dim; ++j) (*out)[j] += vectors[i * dim + j];
  }
  for (float& v : *out) v /= static_cast<float>(std::max<size_t>(count, 1));
}

}  // namespace

TwoMeans BalancedTwoMeans(const float* x, size_t n, size_t dim, int iterations, float balance) {
  TwoMeans out;
  // Seeds: the point farthest from point 0, then the point farthest from that one.
  size_t a = 0, b = 0;
  float best = -1;
  for (size_t i = 0; i < n; ++i) {
    const float d = L2Sqr(x, x + i * dim, dim);
    if (d > best) best = d, a = i;
  }
  best = -1;
  for (size_t i = 0; i < n; ++i) {
    const float d = L2Sqr(x + a * dim, x + i * dim, dim);
    if (d > best) best = d, b = i;
  }
  out.centroid[0].assign(x + a * dim, x + (a + 1) * dim);
  out.centroid[1].assign(x + b * dim, x + (b + 1) * dim);
  out.side.assign(n, 0);
  const size_t lo = std::max<size_t>(1, static_cast<size_t>(balance * n));
  const size_t hi = n - lo;  // side 0 gets between lo and hi points
  std::vector<float> diff(n);
  std::vector<size_t> order(n);
  for (int it = 0; it < std::max(iterations, 1); ++it) {
    for (size_t i = 0; i < n; ++i) {
      diff[i] = L2Sqr(x + i * dim, out.centroid[0].data(), dim) -
                L2Sqr(x + i * dim, out.centroid[1].data(), dim);
    }
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t i, size_t j) {
      return diff[i] < diff[j] || (diff[i] == diff[j] && i < j);
    });
    // Natural cut: points nearer centroid 0; clamped into [lo, hi].
    size_t cut =
        static_cast<size_t>(std::lower_bound(order.begin(), order.end(), 0.0f,
                                             [&](size_t i, float v) { return diff[i] < v; }) -
                            order.begin());
    cut = std::clamp(cut, lo, hi);
    bool changed = false;
    for (size_t r = 0; r < n; ++r) {
      const uint8_t s = r < cut ? 0 : 1;
      changed |= out.side[order[r]] != s;
      out.side[order[r]] = s;
    }
    Mean(x, dim, out.side, 0, &out.centroid[0]);
    Mean(x, dim, out.side, 1, &out.centroid[1]);
    if (!changed && it > 0) break;
  }
  return out;
}

}  // namespace shoal::index

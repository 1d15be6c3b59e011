// Private to index/clustering/gpu (and its tests): the error bound that decides which points the
// TF32 assignment rechecks in exact fp32. Plain C++ with host/device annotations under nvcc, so the
// kernels and a host-only test use the same arithmetic.
//
// For a point x' = fl(x - shift) with r = |x'|, centroids c' = fl(c - shift) with C = max |c'|
// and biases |b| <= B, the TF32 score s(c) = fl(|c'|^2 + b) - 2 <tf32(x'), tf32(c')> satisfies
//   | s(c) + |x'|^2 - exact_fp32_cost(c) | <= dot_scale r C + fp_scale (r + C)^2 + bias_term
// where the terms collect (each times kSafety):
//  * the tensor-core dot: inputs rounded to nearest TF32 (u_t = 2^-11 relative each), fp32
//    accumulation (<= 2 d u per add, allowing truncation): 2 |dot error| <= (4 u_t + 4 d u) r C;
//  * |c'|^2 + b in fp32: <= (d + 1) u (C^2 + B);
//  * the exact path's own rounding over d squared differences: <= (d + 2) u (r + C)^2;
//  * the shift's rounding moves each coordinate by <= u |.|: <= 2 u (r + C)^2.
// Two centroids whose scores differ by more than twice the bound are ranked as exact fp32
// would rank them.
#ifndef SHOAL_INDEX_CLUSTERING_GPU_GPU_ERROR_BOUND_H_
#define SHOAL_INDEX_CLUSTERING_GPU_GPU_ERROR_BOUND_H_

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define SHOAL_HOST_DEVICE __host__ __device__
#else
#define SHOAL_HOST_DEVICE
#endif

namespace shoal::index::gpu {

struct Tf32ErrorBound {
  static constexpr double kUnitFp32 = 0x1.0p-24;
  static constexpr double kUnitTf32 = 0x1.0p-11;  // cvt.rna.tf32.f32: 10 stored mantissa bits
  static constexpr double kSafety = 1.25;         // the bound's own fp32 evaluation, norms

  float dot_scale = 0, fp_scale = 0, bias_term = 0;

  static Tf32ErrorBound For(uint32_t d, float max_abs_bias) {
    const double u = kUnitFp32;
    Tf32ErrorBound b;
    b.dot_scale = static_cast<float>(kSafety * (4 * kUnitTf32 + 4.0 * d * u));
    b.fp_scale = static_cast<float>(kSafety * (2.0 * d + 5) * u);
    b.bias_term = static_cast<float>(kSafety * (d + 1.0) * u * max_abs_bias);
    return b;
  }

  // The bound for a point with |x'| = r against centroids with max |c'| = cmax.
  SHOAL_HOST_DEVICE float ForPoint(float r, float cmax) const {
    return dot_scale * r * cmax + fp_scale * (r + cmax) * (r + cmax) + bias_term;
  }
};

// Host emulation of the device's float -> TF32 conversion (round to nearest, ties away from
// zero, on the 13 low mantissa bits), for tests.
inline float RoundToTf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  if ((bits & 0x7f800000u) == 0x7f800000u) return x;  // inf / NaN unchanged
  bits = (bits + 0x1000u) & ~0x1fffu;
  std::memcpy(&x, &bits, sizeof(x));
  return x;
}

}  // namespace shoal::index::gpu

#endif  // SHOAL_INDEX_CLUSTERING_GPU_GPU_ERROR_BOUND_H_

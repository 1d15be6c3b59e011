// Scalar RaBitQ kernels: the reference every other level must match. Compiled without AVX and
// without tree vectorization (see CMakeLists.txt), so they run on any x86-64.
#include <cmath>

#include "index/quantization/rabitq_internal.h"

namespace shoal::index::internal {

void RabitqScanScalar(const uint8_t* lut, size_t positions, const uint8_t* block, size_t planes,
                      size_t /*codes: all 32 are summed*/, uint32_t* sums) {
  for (size_t i = 0; i < 32; ++i) sums[i] = 0;
  for (size_t p = 0; p < planes; ++p) {
    uint32_t plane[32] = {};
    const uint8_t* codes = block + p * positions * 16;
    for (size_t j = 0; j < positions; ++j) {
      const uint8_t* table = lut + j * 16;
      const uint8_t* bytes = codes + j * 16;
      for (size_t i = 0; i < 16; ++i) {
        plane[i] += table[bytes[i] & 15];
        plane[i + 16] += table[bytes[i] >> 4];
      }
    }
    for (size_t i = 0; i < 32; ++i) sums[i] += plane[i] << (planes - 1 - p);
  }
}

void RabitqLutScalar(const uint16_t* qu, size_t d, uint32_t shift, uint8_t* lut) {
  for (size_t j = 0; j < d / 4; ++j) {
    uint8_t* table = lut + j * 16;
    table[0] = 0;
    for (uint32_t e = 1; e < 16; ++e) {
      const uint32_t t = static_cast<uint32_t>(__builtin_ctz(e));
      table[e] = static_cast<uint8_t>(table[e & (e - 1)] + ((qu[4 * j + t] >> shift) & 63));
    }
  }
}

void RabitqFinishScalar(const RabitqFinishConstants& k, const float* f, const double* dots,
                        size_t codes, float* distance, float* error) {
  for (size_t i = 0; i < codes; ++i) {
    const double norm_sq = double{f[i]} * f[i];
    // <y, q_bar> = sum u_i q_bar_i - (2^B - 1)/2 sum q_bar_i.
    const double y_dot_q = k.delta * dots[i] + k.lower * f[96 + i] - k.offset;
    distance[i] = static_cast<float>(norm_sq + k.qn_sq - k.two_qn * f[32 + i] * y_dot_q);
    const double spread_f = f[64 + i];
    double spread = spread_f + (spread_f + norm_sq) * k.error_sq;
    spread = spread > 0.0 ? spread : 0.0;
    error[i] = static_cast<float>(k.error_coef * std::sqrt(spread) +
                                  kRabitqRoundingSlack * (norm_sq + k.qn_sq));
  }
}

void RabitqQuantizeScalar(const float* a, const float* b, size_t d, uint32_t levels, float* r,
                          uint16_t* qu, uint8_t* lut, RabitqQuantized* out) {
  // Pass 1: r, |r|^2 and the extremes of r; scaling by 1/|r| > 0 keeps the extremes' order
  // (rounding is monotonic), so the normalised extremes are the scaled ones, exactly.
  constexpr size_t kLanes = 16;
  float sq[kLanes] = {}, lo[kLanes], hi[kLanes];
  for (size_t l = 0; l < kLanes; ++l) lo[l] = hi[l] = b != nullptr ? a[l] - b[l] : a[l];
  for (size_t i = 0; i < d; i += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) {
      const float v = b != nullptr ? a[i + l] - b[i + l] : a[i + l];
      r[i + l] = v;
      const float v2 = v * v;
      sq[l] = sq[l] + v2;
      lo[l] = v < lo[l] ? v : lo[l];
      hi[l] = v > hi[l] ? v : hi[l];
    }
  }
  double norm_sq = 0;
  for (float v : sq) norm_sq += v;
  out->norm = std::sqrt(norm_sq);
  const float inv_norm = out->norm > 0 ? static_cast<float>(1 / out->norm) : 0.0f;
  float low = lo[0], high = hi[0];
  for (size_t l = 1; l < kLanes; ++l) {
    low = lo[l] < low ? lo[l] : low;
    high = hi[l] > high ? hi[l] : high;
  }
  low *= inv_norm;
  high *= inv_norm;
  // Pass 2: normalise and quantize.
  const float delta = static_cast<float>((double{high} - low) / levels);
  const float inv_delta = delta > 0 ? 1 / delta : 0.0f;
  const float max_level = static_cast<float>(levels);
  // Round to nearest (ties to even) by adding and removing 1.5 * 2^23.
  constexpr float kRound = 12582912.0f;
  float err[kLanes] = {};
  uint32_t sum[kLanes] = {};
  for (size_t i = 0; i < d; i += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) {
      const float v = r[i + l] * inv_norm;
      float s = (v - low) * inv_delta;
      s = s > 0.0f ? s : 0.0f;
      s = s < max_level ? s : max_level;
      const float level = (s + kRound) - kRound;
      const auto u = static_cast<uint32_t>(static_cast<int32_t>(level));
      qu[i + l] = static_cast<uint16_t>(u);
      sum[l] += u;
      const float step = delta * level;
      const float e = (low + step) - v;
      const float e2 = e * e;
      err[l] = err[l] + e2;
    }
  }
  out->lo = low;
  out->delta = delta;
  out->sum_qu = 0;
  out->error_sq = 0;
  for (size_t l = 0; l < kLanes; ++l) {
    out->sum_qu += sum[l];
    out->error_sq += err[l];
  }
  if (lut != nullptr) RabitqLutScalar(qu, d, 0, lut);
}

}  // namespace shoal::index::internal

// Portable kernels: the reference level and the fallback on CPUs without AVX2. Compiled with
// -fno-tree-vectorize so that "scalar" means scalar (SHOAL_CPU=scalar rules out every SIMD path).
#include <cstring>

#include "index/distance/distance.h"
#include "index/distance/distance_internal.h"

namespace shoal::index {
namespace {

uint32_t FloatBits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return bits;
}

float BitsFloat(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof(x));
  return x;
}

// Round to nearest even of `value` >> `shift` (shift >= 1).
uint32_t ShiftRoundEven(uint32_t value, uint32_t shift) {
  const uint32_t kept = value >> shift, rest = value & ((1u << shift) - 1),
                 half = 1u << (shift - 1);
  return kept + (rest > half || (rest == half && (kept & 1)) ? 1 : 0);
}

}  // namespace

// Bit layouts: float = sign | 8-bit exponent (bias 127) | 23-bit mantissa; half = sign | 5-bit
// exponent (bias 15) | 10-bit mantissa. NaNs are quieted and keep their top payload bits, as
// F16C does (distance_test checks every half and many floats against it).
uint16_t FloatToHalf(float x) {
  const uint32_t bits = FloatBits(x);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t abs = bits & 0x7FFFFFFF;
  if (abs > 0x7F800000) return sign | 0x7E00 | static_cast<uint16_t>((abs >> 13) & 0x3FF);
  if (abs >= 0x477FF000) return sign | 0x7C00;  // >= 65520 (and inf): rounds to inf
  if (abs >= 0x38800000) {                      // normal half: >= 2^-14
    return sign | static_cast<uint16_t>(ShiftRoundEven(abs - (112u << 23), 13));
  }
  if (abs <= 0x33000000) return sign;  // <= 2^-25: rounds to zero
  // Subnormal half: a multiple of 2^-24; x = mantissa * 2^(exponent - 150).
  const uint32_t exponent = abs >> 23, mantissa = (abs & 0x7FFFFF) | 0x800000;
  return sign | static_cast<uint16_t>(ShiftRoundEven(mantissa, 126 - exponent));
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exponent = (h >> 10) & 0x1F;
  uint32_t mantissa = h & 0x3FF;
  if (exponent == 0x1F) {  // inf, or NaN made quiet
    return BitsFloat(sign | 0x7F800000 | (mantissa << 13) | (mantissa != 0 ? 0x400000 : 0));
  }
  if (exponent != 0) return BitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return BitsFloat(sign);
  uint32_t e = 113;  // subnormal: normalise
  while ((mantissa & 0x400) == 0) {
    mantissa <<= 1;
    --e;
  }
  return BitsFloat(sign | (e << 23) | ((mantissa & 0x3FF) << 13));
}

bool FloatsToHalves(const float* in, size_t n, uint16_t* out) {
  for (size_t i = 0; i < n; ++i) {
    if (!(in[i] >= -65504.0f && in[i] <= 65504.0f)) return false;  // NaN fails both
    out[i] = FloatToHalf(in[i]);
  }
  return true;
}

namespace internal {

// Four independent accumulators hide the add latency without SIMD.
float L2SqrScalar(const float* a, const float* b, size_t dim) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  for (; i + 4 <= dim; i += 4) {
    const float d0 = a[i] - b[i], d1 = a[i + 1] - b[i + 1];
    const float d2 = a[i + 2] - b[i + 2], d3 = a[i + 3] - b[i + 3];
    s0 += d0 * d0;
    s1 += d1 * d1;
    s2 += d2 * d2;
    s3 += d3 * d3;
  }
  for (; i < dim; ++i) {
    const float d = a[i] - b[i];
    s0 += d * d;
  }
  return (s0 + s1) + (s2 + s3);
}

float InnerProductScalar(const float* a, const float* b, size_t dim) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  for (; i + 4 <= dim; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < dim; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

// The partial sum is looked at every kHalfCheckDims dimensions (distance_internal.h).
float L2SqrHalfBoundedScalar(const float* a, const uint16_t* b, size_t dim, float bound) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  while (i + 4 <= dim) {
    const size_t stop = i + kHalfCheckDims <= dim ? i + kHalfCheckDims : dim;
    for (; i + 4 <= stop; i += 4) {
      const float d0 = a[i] - HalfToFloat(b[i]), d1 = a[i + 1] - HalfToFloat(b[i + 1]);
      const float d2 = a[i + 2] - HalfToFloat(b[i + 2]), d3 = a[i + 3] - HalfToFloat(b[i + 3]);
      s0 += d0 * d0;
      s1 += d1 * d1;
      s2 += d2 * d2;
      s3 += d3 * d3;
    }
    if (i + 4 <= dim && (s0 + s1) + (s2 + s3) > bound) return (s0 + s1) + (s2 + s3);
  }
  for (; i < dim; ++i) {
    const float d = a[i] - HalfToFloat(b[i]);
    s0 += d * d;
  }
  return (s0 + s1) + (s2 + s3);
}

}  // namespace internal
}  // namespace shoal::index

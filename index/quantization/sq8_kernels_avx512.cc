// AVX-512 kernel of Sq8Quantizer::Estimate (compiled with -mavx512f -mavx512bw; called only when
// base::Cpu().avx512bw). Computes sum_j step2[j] * (qs[j] - code[j])^2 like the portable loop in
// sq8_quantizer.cc; the two differ only in float summation order.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace shoal::index::internal {

float Sq8WeightedL2Avx512(const float* qs, const float* step2, const uint8_t* code, size_t dim) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  size_t j = 0;
  for (; j + 32 <= dim; j += 32) {
    const __m128i c0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(code + j));
    const __m128i c1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(code + j + 16));
    const __m512 d0 =
        _mm512_sub_ps(_mm512_loadu_ps(qs + j), _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(c0)));
    const __m512 d1 =
        _mm512_sub_ps(_mm512_loadu_ps(qs + j + 16), _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(c1)));
    acc0 = _mm512_fmadd_ps(_mm512_mul_ps(d0, d0), _mm512_loadu_ps(step2 + j), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_mul_ps(d1, d1), _mm512_loadu_ps(step2 + j + 16), acc1);
  }
  for (; j < dim; j += 16) {
    const __mmask16 m = dim - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (dim - j)) - 1);
    const __m128i c = _mm_maskz_loadu_epi8(m, code + j);
    const __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, qs + j),
                                   _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(c)));
    acc0 = _mm512_fmadd_ps(_mm512_mul_ps(d, d), _mm512_maskz_loadu_ps(m, step2 + j), acc0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

}  // namespace shoal::index::internal

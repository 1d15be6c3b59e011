// AVX-512 RaBitQ kernel: 8 code words per step, AND + VPOPCNTQ, per-lane shifts (vpsllvq).
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vpopcntdq; only entered when
// base::Cpu() reports those (see RabitqLevelSupported).
#include <immintrin.h>

#include "index/rabitq_internal.h"

namespace shoal::index::internal {

void RabitqDotAvx512(const RabitqDotArgs& args, const uint8_t* codes, size_t n, uint64_t* dots) {
  const size_t words = args.code_words;
  const __mmask8 tail_mask = static_cast<__mmask8>((1u << (words % 8)) - 1);
  for (size_t c = 0; c < n; ++c) {
    const uint8_t* code = codes + c * args.code_bytes;
    __m512i acc = _mm512_setzero_si512();
    for (size_t w = 0; w < words; w += 8) {
      const __mmask8 m = w + 8 <= words ? __mmask8{0xFF} : tail_mask;
      const __m512i x = _mm512_maskz_loadu_epi64(m, code + 8 * w);
      for (size_t k = 0; k < args.query_bits; ++k) {
        const size_t at = k * words + w;
        const __m512i q = _mm512_loadu_si512(args.planes + at);
        const __m512i s = _mm512_loadu_si512(args.shifts + at);
        acc = _mm512_add_epi64(acc,
                               _mm512_sllv_epi64(_mm512_popcnt_epi64(_mm512_and_si512(x, q)), s));
      }
    }
    dots[c] = static_cast<uint64_t>(_mm512_reduce_add_epi64(acc));
  }
}

void RabitqPlanesAvx512(const uint16_t* qu, size_t d, size_t query_bits, size_t stride,
                        uint64_t* planes) {
  for (size_t w = 0; w < d / 64; ++w) {
    const __m512i lo = _mm512_loadu_si512(qu + w * 64);
    const __m512i hi = _mm512_loadu_si512(qu + w * 64 + 32);
    for (size_t k = 0; k < query_bits; ++k) {
      const __m512i bit = _mm512_set1_epi16(static_cast<int16_t>(1u << k));
      const uint64_t low = _mm512_test_epi16_mask(lo, bit);
      const uint64_t high = _mm512_test_epi16_mask(hi, bit);
      planes[k * stride + w] = low | (high << 32);
    }
  }
}

}  // namespace shoal::index::internal

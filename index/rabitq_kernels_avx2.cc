// AVX2 RaBitQ kernel: 4 code words per step, popcount by nibble lookup (vpshufb) and vpsadbw.
// Compiled with -mavx2 -mfma; only entered when base::Cpu() reports AVX2 and FMA.
#include <immintrin.h>

#include "index/rabitq_internal.h"

namespace shoal::index::internal {
namespace {

__m256i Popcount64(__m256i v) {
  const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2,
                                       1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
  const __m256i low = _mm256_set1_epi8(0x0f);
  const __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, low));
  const __m256i hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), low));
  return _mm256_sad_epu8(_mm256_add_epi8(lo, hi), _mm256_setzero_si256());
}

}  // namespace

void RabitqDotAvx2(const RabitqDotArgs& args, const uint8_t* codes, size_t n, uint64_t* dots) {
  const size_t words = args.code_words;
  const size_t tail = words % 4;
  const __m256i lane = _mm256_setr_epi64x(0, 1, 2, 3);
  const __m256i tail_mask =
      _mm256_cmpgt_epi64(_mm256_set1_epi64x(static_cast<long long>(tail)), lane);
  for (size_t c = 0; c < n; ++c) {
    const uint8_t* code = codes + c * args.code_bytes;
    __m256i acc = _mm256_setzero_si256();
    for (size_t w = 0; w < words; w += 4) {
      const __m256i x =
          w + 4 <= words
              ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(code + 8 * w))
              : _mm256_maskload_epi64(reinterpret_cast<const long long*>(code + 8 * w), tail_mask);
      for (size_t k = 0; k < args.query_bits; ++k) {
        const size_t at = k * words + w;
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(args.planes + at));
        const __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(args.shifts + at));
        acc = _mm256_add_epi64(acc, _mm256_sllv_epi64(Popcount64(_mm256_and_si256(x, q)), s));
      }
    }
    const __m128i sum =
        _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    dots[c] = static_cast<uint64_t>(_mm_cvtsi128_si64(sum)) +
              static_cast<uint64_t>(_mm_extract_epi64(sum, 1));
  }
}

}  // namespace shoal::index::internal

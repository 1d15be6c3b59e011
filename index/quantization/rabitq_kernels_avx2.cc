// AVX2 RaBitQ fast-scan kernel: 2 groups of 4 dimensions x 32 codes per step (vpshufb), 16-bit
// accumulation. Compiled with -mavx2 -mfma; only entered when base::Cpu() reports AVX2 and FMA.
#include <immintrin.h>

#include "index/quantization/rabitq_internal.h"

namespace shoal::index::internal {
namespace {

constexpr size_t kStepsPerRound = 256;  // each step adds at most 252 to a 16-bit sum

// As the AVX-512 Fold with two lanes: adds 16 codes' sums to total[0] (codes 0..7) and
// total[1] (codes 8..15).
void Fold(__m256i a, __m256i b, __m256i* total) {
  const __m256i even = _mm256_sub_epi16(a, _mm256_slli_epi16(b, 8));
  auto lanes = [](__m256i v) {
    return _mm256_add_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(v)),
                            _mm256_cvtepu16_epi32(_mm256_extracti128_si256(v, 1)));
  };
  total[0] = _mm256_add_epi32(total[0], lanes(_mm256_unpacklo_epi16(even, b)));
  total[1] = _mm256_add_epi32(total[1], lanes(_mm256_unpackhi_epi16(even, b)));
}

}  // namespace

void RabitqScanAvx2(const uint8_t* lut, size_t positions, const uint8_t* block, size_t planes,
                    size_t /*codes: all 32 are summed*/, uint32_t* sums) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256i weighted[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                         _mm256_setzero_si256()};
  for (size_t p = 0; p < planes; ++p) {
    const uint8_t* codes = block + p * positions * 16;
    __m256i total_lo[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    __m256i total_hi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    for (size_t start = 0; start < positions; start += 2 * kStepsPerRound) {
      const size_t end =
          start + 2 * kStepsPerRound < positions ? start + 2 * kStepsPerRound : positions;
      __m256i a_lo = _mm256_setzero_si256(), b_lo = _mm256_setzero_si256();
      __m256i a_hi = _mm256_setzero_si256(), b_hi = _mm256_setzero_si256();
      for (size_t j = start; j < end; j += 2) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + j * 16));
        const __m256i table = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lut + j * 16));
        const __m256i r_lo = _mm256_shuffle_epi8(table, _mm256_and_si256(v, low4));
        const __m256i r_hi =
            _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), low4));
        a_lo = _mm256_add_epi16(a_lo, r_lo);
        b_lo = _mm256_add_epi16(b_lo, _mm256_srli_epi16(r_lo, 8));
        a_hi = _mm256_add_epi16(a_hi, r_hi);
        b_hi = _mm256_add_epi16(b_hi, _mm256_srli_epi16(r_hi, 8));
      }
      Fold(a_lo, b_lo, total_lo);
      Fold(a_hi, b_hi, total_hi);
    }
    const __m128i shift = _mm_cvtsi32_si128(static_cast<int>(planes - 1 - p));
    const __m256i plane[4] = {total_lo[0], total_lo[1], total_hi[0], total_hi[1]};
    for (int t = 0; t < 4; ++t) {
      weighted[t] = _mm256_add_epi32(weighted[t], _mm256_sll_epi32(plane[t], shift));
    }
  }
  for (int t = 0; t < 4; ++t) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(sums + 8 * t), weighted[t]);
  }
}

}  // namespace shoal::index::internal

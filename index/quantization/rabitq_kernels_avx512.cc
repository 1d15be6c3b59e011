// AVX-512 RaBitQ fast-scan kernels: 4 groups of 4 dimensions x 32 codes per step, one vpshufb
// per 32 codes and group pair, 16-bit accumulation. Compiled with -mavx512f -mavx512bw
// -mavx512vl; only entered when base::Cpu() reports those (see RabitqLevelSupported).
#include <immintrin.h>

#include <cmath>

#include "index/quantization/rabitq_internal.h"

namespace shoal::index::internal {
namespace {

// Steps per 16-bit accumulation round: each step adds at most 252 to a code's 16-bit sum.
constexpr size_t kStepsPerRound = 256;
// How far ahead of the scan the codes are asked for: DRAM's latency covers ~8 KiB of the scan
// on the Zen 5 VM (docs/PERFORMANCE.md, "The code scan's prefetch distance").
constexpr size_t kPrefetchBytes = 8192;

// a, b: 16-bit accumulators of shuffle results for 16 codes (a: whole words, b: their high
// bytes), one 128-bit lane per group-of-4 offset. Adds the 16 codes' sums (code order) to *total.
void Fold(__m512i a, __m512i b, __m512i* total) {
  const __m512i even = _mm512_sub_epi16(a, _mm512_slli_epi16(b, 8));
  const __m512i first = _mm512_unpacklo_epi16(even, b);   // per lane: codes 0..7
  const __m512i second = _mm512_unpackhi_epi16(even, b);  // per lane: codes 8..15
  auto lanes = [](__m512i v) {
    const __m512i x = _mm512_add_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(v)),
                                       _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(v, 1)));
    return _mm256_add_epi32(_mm512_castsi512_si256(x), _mm512_extracti64x4_epi64(x, 1));
  };
  const __m512i sums = _mm512_inserti64x4(_mm512_castsi256_si512(lanes(first)), lanes(second), 1);
  *total = _mm512_add_epi32(*total, sums);
}

// Adds steps [start, end) (4 positions each) of one plane's codes to the 16-bit accumulators:
// a whole words of the shuffle results, b their high bytes (see Fold). kLowOnly: codes 0..15
// only (the low nibbles); the high accumulators are left as they were.
template <bool kLowOnly>
inline void Steps(const uint8_t* lut, const uint8_t* codes, size_t start, size_t end, __m512i* a_lo,
                  __m512i* b_lo, __m512i* a_hi, __m512i* b_hi) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  for (size_t j = start; j < end; j += 4) {
    // The codes stream from DRAM: fetch kPrefetchBytes ahead (the hardware prefetcher stops
    // at each 4 KiB page). Past the block's end this warms the next block.
    _mm_prefetch(reinterpret_cast<const char*>(codes + j * 16 + kPrefetchBytes), _MM_HINT_T0);
    const __m512i v = _mm512_loadu_si512(codes + j * 16);
    const __m512i table = _mm512_loadu_si512(lut + j * 16);
    const __m512i r_lo = _mm512_shuffle_epi8(table, _mm512_and_si512(v, low4));
    *a_lo = _mm512_add_epi16(*a_lo, r_lo);
    *b_lo = _mm512_add_epi16(*b_lo, _mm512_srli_epi16(r_lo, 8));
    if constexpr (!kLowOnly) {
      const __m512i r_hi =
          _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), low4));
      *a_hi = _mm512_add_epi16(*a_hi, r_hi);
      *b_hi = _mm512_add_epi16(*b_hi, _mm512_srli_epi16(r_hi, 8));
    }
  }
}

// RabitqScanAvx512 below; kLowOnly: the sums of codes 0..15 only (those of 16..31 come out 0).
template <bool kLowOnly>
void ScanBlock(const uint8_t* lut, size_t positions, const uint8_t* block, size_t planes,
               uint32_t* sums) {
  __m512i total_lo = _mm512_setzero_si512(), total_hi = _mm512_setzero_si512();
  // When the weighted even-byte sums of all planes (at most 252 per step, times the weights'
  // sum 2^planes - 1) stay below 2^16 over the whole block, the planes are weighted in the
  // 16-bit accumulators themselves (a plane's sums shifted left by its weight's exponent: exact
  // modulo 2^16, all Fold needs of `a`) and one Fold pair serves every plane. At low dimension a
  // plane has few steps (8 at 128-d) and a Fold pair per plane costs a good part of them. Else
  // (high dimension) each plane streams whole and is folded on its own, then weighted in 32
  // bits: splitting the planes into rounds read them out of order and was slower at 1536-d.
  const size_t weighted_steps = size_t{65535} / (size_t{252} * ((size_t{1} << planes) - 1));
  if (positions <= 4 * weighted_steps) {
    __m512i wa_lo = _mm512_setzero_si512(), wb_lo = _mm512_setzero_si512();
    __m512i wa_hi = _mm512_setzero_si512(), wb_hi = _mm512_setzero_si512();
    for (size_t p = 0; p < planes; ++p) {
      __m512i a_lo = _mm512_setzero_si512(), b_lo = _mm512_setzero_si512();
      __m512i a_hi = _mm512_setzero_si512(), b_hi = _mm512_setzero_si512();
      Steps<kLowOnly>(lut, block + p * positions * 16, 0, positions, &a_lo, &b_lo, &a_hi, &b_hi);
      const __m128i shift = _mm_cvtsi32_si128(static_cast<int>(planes - 1 - p));
      wa_lo = _mm512_add_epi16(wa_lo, _mm512_sll_epi16(a_lo, shift));
      wb_lo = _mm512_add_epi16(wb_lo, _mm512_sll_epi16(b_lo, shift));
      if constexpr (!kLowOnly) {
        wa_hi = _mm512_add_epi16(wa_hi, _mm512_sll_epi16(a_hi, shift));
        wb_hi = _mm512_add_epi16(wb_hi, _mm512_sll_epi16(b_hi, shift));
      }
    }
    Fold(wa_lo, wb_lo, &total_lo);
    if constexpr (!kLowOnly) Fold(wa_hi, wb_hi, &total_hi);
  } else {
    for (size_t p = 0; p < planes; ++p) {
      const uint8_t* codes = block + p * positions * 16;
      __m512i plane_lo = _mm512_setzero_si512(), plane_hi = _mm512_setzero_si512();
      for (size_t start = 0; start < positions; start += 4 * kStepsPerRound) {
        const size_t end =
            start + 4 * kStepsPerRound < positions ? start + 4 * kStepsPerRound : positions;
        __m512i a_lo = _mm512_setzero_si512(), b_lo = _mm512_setzero_si512();
        __m512i a_hi = _mm512_setzero_si512(), b_hi = _mm512_setzero_si512();
        Steps<kLowOnly>(lut, codes, start, end, &a_lo, &b_lo, &a_hi, &b_hi);
        Fold(a_lo, b_lo, &plane_lo);
        if constexpr (!kLowOnly) Fold(a_hi, b_hi, &plane_hi);
      }
      const __m128i shift = _mm_cvtsi32_si128(static_cast<int>(planes - 1 - p));
      total_lo = _mm512_add_epi32(total_lo, _mm512_sll_epi32(plane_lo, shift));
      if constexpr (!kLowOnly) {
        total_hi = _mm512_add_epi32(total_hi, _mm512_sll_epi32(plane_hi, shift));
      }
    }
  }
  _mm512_storeu_si512(sums, total_lo);
  _mm512_storeu_si512(sums + 16, total_hi);
}

}  // namespace

// A posting's last block often holds 16 codes or fewer (postings of tens of codes): then only
// the low nibbles are scanned, about half the shuffles and adds of the block.
void RabitqScanAvx512(const uint8_t* lut, size_t positions, const uint8_t* block, size_t planes,
                      size_t codes, uint32_t* sums) {
  if (codes <= 16) {
    ScanBlock<true>(lut, positions, block, planes, sums);
  } else {
    ScanBlock<false>(lut, positions, block, planes, sums);
  }
}

// The shuffle indexes that turn 16 query values (4 groups of 4 dimensions) into their 4 lookup
// tables: lane L, byte e of the result = sum of value 4 L + t over the bits t of e. In two
// rounds of two shuffles: first each lane's pair sums S = {0, v0, v1, v0 + v1, 0, v2, v3,
// v2 + v3} of its group v0..v3, then table[e] = S[e & 3] + S[4 + (e >> 2)]. The byte sums are
// the same as adding the 4 values bit by bit (at most 4 * 63 = 252: no byte overflows).
struct LutShuffles {
  __m512i pair_a, pair_b, low, high;
  LutShuffles() {
    constexpr uint8_t kZero = 0x80;  // a shuffle index with its top bit set gives 0
    alignas(64) uint8_t a[64], b[64], lo[64], hi[64];
    for (int lane = 0; lane < 4; ++lane) {
      const auto v = [&](int t) { return static_cast<uint8_t>(4 * lane + t); };
      const uint8_t first[16] = {kZero, v(0),  v(1),  v(0),  kZero, v(2),  v(3),  v(2),
                                 kZero, kZero, kZero, kZero, kZero, kZero, kZero, kZero};
      const uint8_t second[16] = {kZero, kZero, kZero, v(1),  kZero, kZero, kZero, v(3),
                                  kZero, kZero, kZero, kZero, kZero, kZero, kZero, kZero};
      for (int e = 0; e < 16; ++e) {
        a[lane * 16 + e] = first[e];
        b[lane * 16 + e] = second[e];
        lo[lane * 16 + e] = static_cast<uint8_t>(e & 3);
        hi[lane * 16 + e] = static_cast<uint8_t>(4 + (e >> 2));
      }
    }
    pair_a = _mm512_load_si512(a);
    pair_b = _mm512_load_si512(b);
    low = _mm512_load_si512(lo);
    high = _mm512_load_si512(hi);
  }
  // values: 16 bytes; returns the 4 tables (64 bytes).
  __m512i Tables(__m128i values) const {
    const __m512i all = _mm512_broadcast_i32x4(values);
    const __m512i pairs =
        _mm512_add_epi8(_mm512_shuffle_epi8(all, pair_a), _mm512_shuffle_epi8(all, pair_b));
    return _mm512_add_epi8(_mm512_shuffle_epi8(pairs, low), _mm512_shuffle_epi8(pairs, high));
  }
};

void RabitqLutAvx512(const uint16_t* qu, size_t d, uint32_t shift, uint8_t* lut) {
  static const LutShuffles shuffles;  // built once, as in RabitqQuantizeAvx512
  const __m256i six = _mm256_set1_epi16(63);
  const __m128i count = _mm_cvtsi32_si128(static_cast<int>(shift));
  for (size_t j = 0; j < d / 4; j += 4) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qu + 4 * j));
    const __m128i bytes = _mm256_cvtepi16_epi8(_mm256_and_si256(_mm256_srl_epi16(q, count), six));
    _mm512_storeu_si512(lut + j * 16, shuffles.Tables(bytes));
  }
}

void RabitqFhtAvx512(float* v, size_t n) {
  // h = 1, 2, 4, 8 inside each register: lane j pairs with lane j ^ h; the lane with bit h set
  // takes (partner - self) = v[j - h] - v[j], the other self + partner.
  __m512i partner[4];
  __mmask16 upper[4];
  for (int s = 0; s < 4; ++s) {
    alignas(64) int32_t idx[16];
    __mmask16 m = 0;
    for (int j = 0; j < 16; ++j) {
      idx[j] = j ^ (1 << s);
      if (j & (1 << s)) m = static_cast<__mmask16>(m | (1u << j));
    }
    partner[s] = _mm512_load_si512(idx);
    upper[s] = m;
  }
  for (size_t i = 0; i < n; i += 16) {
    __m512 x = _mm512_loadu_ps(v + i);
    for (int s = 0; s < 4; ++s) {
      const __m512 t = _mm512_permutexvar_ps(partner[s], x);
      x = _mm512_mask_sub_ps(_mm512_add_ps(x, t), upper[s], t, x);
    }
    _mm512_storeu_ps(v + i, x);
  }
  for (size_t h = 16; h < n; h *= 2) {
    for (size_t i = 0; i < n; i += 2 * h) {
      for (size_t j = i; j < i + h; j += 16) {
        const __m512 a = _mm512_loadu_ps(v + j);
        const __m512 b = _mm512_loadu_ps(v + j + h);
        _mm512_storeu_ps(v + j, _mm512_add_ps(a, b));
        _mm512_storeu_ps(v + j + h, _mm512_sub_ps(a, b));
      }
    }
  }
}

// RabitqFinishScalar 8 codes at a time in double lanes, the same operations in the same order.
void RabitqFinishAvx512(const RabitqFinishConstants& k, const float* f, const double* dots,
                        size_t codes, float* distance, float* error) {
  const __m512d delta = _mm512_set1_pd(k.delta), lower = _mm512_set1_pd(k.lower);
  const __m512d offset = _mm512_set1_pd(k.offset), qn_sq = _mm512_set1_pd(k.qn_sq);
  const __m512d two_qn = _mm512_set1_pd(k.two_qn), coef = _mm512_set1_pd(k.error_coef);
  const __m512d error_sq = _mm512_set1_pd(k.error_sq), zero = _mm512_setzero_pd();
  const __m512d slack = _mm512_set1_pd(kRabitqRoundingSlack);
  auto load = [&](size_t at) { return _mm512_cvtps_pd(_mm256_loadu_ps(f + at)); };
  for (size_t i = 0; i < codes; i += 8) {
    const __m512d norm = load(i), scale = load(32 + i), spread_f = load(64 + i);
    const __m512d sum_u = load(96 + i);
    const __m512d norm_sq = _mm512_mul_pd(norm, norm);
    const __m512d y_dot_q = _mm512_sub_pd(
        _mm512_add_pd(_mm512_mul_pd(delta, _mm512_loadu_pd(dots + i)), _mm512_mul_pd(lower, sum_u)),
        offset);
    const __m512d both = _mm512_add_pd(norm_sq, qn_sq);
    const __m512d dist = _mm512_sub_pd(both, _mm512_mul_pd(_mm512_mul_pd(two_qn, scale), y_dot_q));
    _mm256_storeu_ps(distance + i, _mm512_cvtpd_ps(dist));
    __m512d spread =
        _mm512_add_pd(spread_f, _mm512_mul_pd(_mm512_add_pd(spread_f, norm_sq), error_sq));
    spread = _mm512_max_pd(spread, zero);  // spread > 0 ? spread : 0
    const __m512d err =
        _mm512_add_pd(_mm512_mul_pd(coef, _mm512_sqrt_pd(spread)), _mm512_mul_pd(slack, both));
    _mm256_storeu_ps(error + i, _mm512_cvtpd_ps(err));
  }
}

// RabitqQuantizeScalar with each of its 16 lanes in one register lane: the same operations in
// the same order (this file is compiled with -ffp-contract=off), so the same bits.
void RabitqQuantizeAvx512(const float* a, const float* b, size_t d, uint32_t levels, float* r,
                          uint16_t* qu, uint8_t* lut, RabitqQuantized* out) {
  static const LutShuffles shuffles;
  auto diff = [&](size_t i) {
    __m512 v = _mm512_loadu_ps(a + i);
    return b != nullptr ? _mm512_sub_ps(v, _mm512_loadu_ps(b + i)) : v;
  };
  __m512 sq = _mm512_setzero_ps(), lo = diff(0), hi = lo;
  for (size_t i = 0; i < d; i += 16) {
    const __m512 v = diff(i);
    _mm512_storeu_ps(r + i, v);
    sq = _mm512_add_ps(sq, _mm512_mul_ps(v, v));
    lo = _mm512_min_ps(v, lo);  // v < lo ? v : lo
    hi = _mm512_max_ps(v, hi);  // v > hi ? v : hi
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sq);
  double norm_sq = 0;
  for (float v : lanes) norm_sq += v;
  out->norm = std::sqrt(norm_sq);
  const float inv = out->norm > 0 ? static_cast<float>(1 / out->norm) : 0.0f;
  const __m512 inv_norm = _mm512_set1_ps(inv);
  alignas(64) float lo_lanes[16], hi_lanes[16];
  _mm512_store_ps(lo_lanes, lo);
  _mm512_store_ps(hi_lanes, hi);
  float low = lo_lanes[0], high = hi_lanes[0];
  for (size_t l = 1; l < 16; ++l) {
    low = lo_lanes[l] < low ? lo_lanes[l] : low;
    high = hi_lanes[l] > high ? hi_lanes[l] : high;
  }
  low *= inv;
  high *= inv;
  const float delta = static_cast<float>((double{high} - low) / levels);
  const float inv_delta = delta > 0 ? 1 / delta : 0.0f;
  const __m512 v_low = _mm512_set1_ps(low), v_inv = _mm512_set1_ps(inv_delta);
  const __m512 v_delta = _mm512_set1_ps(delta), v_max = _mm512_set1_ps(static_cast<float>(levels));
  const __m512 round = _mm512_set1_ps(12582912.0f), zero = _mm512_setzero_ps();
  __m512 err = _mm512_setzero_ps();
  __m512i sum = _mm512_setzero_si512();
  for (size_t i = 0; i < d; i += 16) {
    const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(r + i), inv_norm);
    __m512 s = _mm512_mul_ps(_mm512_sub_ps(v, v_low), v_inv);
    s = _mm512_max_ps(s, zero);   // s > 0 ? s : 0
    s = _mm512_min_ps(s, v_max);  // s < max ? s : max
    const __m512 level = _mm512_sub_ps(_mm512_add_ps(s, round), round);
    const __m512i u = _mm512_cvttps_epi32(level);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qu + i), _mm512_cvtepi32_epi16(u));
    if (lut != nullptr) _mm512_storeu_si512(lut + 4 * i, shuffles.Tables(_mm512_cvtepi32_epi8(u)));
    sum = _mm512_add_epi32(sum, u);
    const __m512 e = _mm512_sub_ps(_mm512_add_ps(v_low, _mm512_mul_ps(v_delta, level)), v);
    err = _mm512_add_ps(err, _mm512_mul_ps(e, e));
  }
  alignas(64) float err_lanes[16];
  alignas(64) uint32_t sum_lanes[16];
  _mm512_store_ps(err_lanes, err);
  _mm512_store_si512(sum_lanes, sum);
  out->lo = low;
  out->delta = delta;
  out->sum_qu = 0;
  out->error_sq = 0;
  for (size_t l = 0; l < 16; ++l) {
    out->sum_qu += sum_lanes[l];
    out->error_sq += err_lanes[l];
  }
}

}  // namespace shoal::index::internal

// AVX-512 kernels. Compiled with -mavx512f -mavx512bw -mavx512vl -mfma (see CMakeLists.txt);
// only entered when base::Cpu() reports avx512f/bw/vl. Tails use masked loads.
#include <immintrin.h>

#include <utility>

#include "index/distance/distance_internal.h"

namespace shoal::index::internal {
namespace {

__mmask16 TailMask(size_t n) { return static_cast<__mmask16>((1u << n) - 1); }

}  // namespace

float L2SqrAvx512(const float* a, const float* b, size_t dim) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  __m512 s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 64 <= dim; i += 64) {
    const __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
    const __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16));
    const __m512 d2 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32));
    const __m512 d3 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48));
    s0 = _mm512_fmadd_ps(d0, d0, s0);
    s1 = _mm512_fmadd_ps(d1, d1, s1);
    s2 = _mm512_fmadd_ps(d2, d2, s2);
    s3 = _mm512_fmadd_ps(d3, d3, s3);
  }
  for (; i + 16 <= dim; i += 16) {
    const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
    s0 = _mm512_fmadd_ps(d, d, s0);
  }
  if (i < dim) {
    const __mmask16 m = TailMask(dim - i);
    const __m512 d =
        _mm512_sub_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i));
    s1 = _mm512_fmadd_ps(d, d, s1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

namespace {

// K rows (K <= 4) against a, each summed exactly as L2SqrAvx512 sums it (same accumulators,
// same order): the same results, with the query's loads shared and K independent chains.
template <size_t K>
void L2SqrRowBlock(const float* a, const float* const* rows, float* out, size_t dim) {
  __m512 s[K][4];
  for (auto& row : s) {
    for (__m512& acc : row) acc = _mm512_setzero_ps();
  }
  size_t i = 0;
  for (; i + 64 <= dim; i += 64) {
    const __m512 a0 = _mm512_loadu_ps(a + i), a1 = _mm512_loadu_ps(a + i + 16);
    const __m512 a2 = _mm512_loadu_ps(a + i + 32), a3 = _mm512_loadu_ps(a + i + 48);
    for (size_t k = 0; k < K; ++k) {
      const float* b = rows[k] + i;
      const __m512 d0 = _mm512_sub_ps(a0, _mm512_loadu_ps(b));
      const __m512 d1 = _mm512_sub_ps(a1, _mm512_loadu_ps(b + 16));
      const __m512 d2 = _mm512_sub_ps(a2, _mm512_loadu_ps(b + 32));
      const __m512 d3 = _mm512_sub_ps(a3, _mm512_loadu_ps(b + 48));
      s[k][0] = _mm512_fmadd_ps(d0, d0, s[k][0]);
      s[k][1] = _mm512_fmadd_ps(d1, d1, s[k][1]);
      s[k][2] = _mm512_fmadd_ps(d2, d2, s[k][2]);
      s[k][3] = _mm512_fmadd_ps(d3, d3, s[k][3]);
    }
  }
  for (; i + 16 <= dim; i += 16) {
    const __m512 ai = _mm512_loadu_ps(a + i);
    for (size_t k = 0; k < K; ++k) {
      const __m512 d = _mm512_sub_ps(ai, _mm512_loadu_ps(rows[k] + i));
      s[k][0] = _mm512_fmadd_ps(d, d, s[k][0]);
    }
  }
  if (i < dim) {
    const __mmask16 m = TailMask(dim - i);
    const __m512 ai = _mm512_maskz_loadu_ps(m, a + i);
    for (size_t k = 0; k < K; ++k) {
      const __m512 d = _mm512_sub_ps(ai, _mm512_maskz_loadu_ps(m, rows[k] + i));
      s[k][1] = _mm512_fmadd_ps(d, d, s[k][1]);
    }
  }
  for (size_t k = 0; k < K; ++k) {
    out[k] = _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(s[k][0], s[k][1]), _mm512_add_ps(s[k][2], s[k][3])));
  }
}

}  // namespace

void L2SqrRowsAvx512(const float* a, const float* const* rows, size_t n, float* out, size_t dim) {
  // Four rows at a time; a remainder of two or three as a pair (and one), not row by row.
  size_t r = 0;
  for (; r + 4 <= n; r += 4) L2SqrRowBlock<4>(a, rows + r, out + r, dim);
  if (r + 2 <= n) {
    L2SqrRowBlock<2>(a, rows + r, out + r, dim);
    r += 2;
  }
  if (r < n) out[r] = L2SqrAvx512(a, rows[r], dim);
}

float InnerProductAvx512(const float* a, const float* b, size_t dim) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  __m512 s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 64 <= dim; i += 64) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
    s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
  }
  for (; i + 16 <= dim; i += 16) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
  }
  if (i < dim) {
    const __mmask16 m = TailMask(dim - i);
    s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

namespace {

// Squared L2 of float `a` against `b` (16 lanes read by load / load_tail), summed as L2SqrAvx512
// sums it (64 dimensions a step in four accumulators, then 16 at a time, the tail masked), the
// partial sum looked at every kHalfCheckDims dimensions: a value > bound as soon as one is.
template <typename T, typename Load, typename LoadTail>
float L2SqrBoundedBy(const float* a, const T* b, size_t dim, float bound, Load load,
                     LoadTail load_tail) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  __m512 s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
  auto sum = [&] {
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
  };
  size_t i = 0;
  while (i + 64 <= dim) {
    const size_t stop = i + kHalfCheckDims <= dim ? i + kHalfCheckDims : dim;
    for (; i + 64 <= stop; i += 64) {
      const __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(a + i), load(b + i));
      const __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 16), load(b + i + 16));
      const __m512 d2 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 32), load(b + i + 32));
      const __m512 d3 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 48), load(b + i + 48));
      s0 = _mm512_fmadd_ps(d0, d0, s0);
      s1 = _mm512_fmadd_ps(d1, d1, s1);
      s2 = _mm512_fmadd_ps(d2, d2, s2);
      s3 = _mm512_fmadd_ps(d3, d3, s3);
    }
    if (i + 64 <= dim) {
      const float partial = sum();
      if (partial > bound) return partial;
    }
  }
  for (; i + 16 <= dim; i += 16) {
    const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(a + i), load(b + i));
    s0 = _mm512_fmadd_ps(d, d, s0);
  }
  if (i < dim) {
    const __mmask16 m = TailMask(dim - i);
    const __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, a + i), load_tail(m, b + i));
    s1 = _mm512_fmadd_ps(d, d, s1);
  }
  return sum();
}

}  // namespace

float L2SqrBoundedAvx512(const float* a, const float* b, size_t dim, float bound) {
  return L2SqrBoundedBy(
      a, b, dim, bound, [](const float* p) { return _mm512_loadu_ps(p); },
      [](__mmask16 m, const float* p) { return _mm512_maskz_loadu_ps(m, p); });
}

// Halves: 64 (two cache lines) per step, converted by vcvtph2ps, tails masked.
float L2SqrHalfBoundedAvx512(const float* a, const uint16_t* b, size_t dim, float bound) {
  return L2SqrBoundedBy(
      a, b, dim, bound,
      [](const uint16_t* p) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
      },
      [](__mmask16 m, const uint16_t* p) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
      });
}

// A gather per dimension per 16 rows: the transpose runs ~5x faster than scalar moves.
void PackPanelAvx512(const float* base, size_t rows, size_t dim, float* panel) {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (size_t g = 0; g < kPanelWidth; g += 16) {
    const size_t live = rows > g ? rows - g : 0;
    const __mmask16 mask = live >= 16 ? __mmask16{0xFFFF} : TailMask(live);
    const __m512i offsets = _mm512_mullo_epi32(lane, _mm512_set1_epi32(static_cast<int>(dim)));
    const float* group = base + g * dim;
    for (size_t d = 0; d < dim; ++d) {
      const __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask, offsets, group + d, 4);
      _mm512_storeu_ps(panel + d * kPanelWidth + g, v);
    }
  }
}

// Sixteen dimensions of the eight rows at a time: eight loads, then an 8 x 8 transpose of
// float pairs (three rounds of two-register shuffles) and one permute per register to split each
// pair, ~5 shuffles per register where a gather cost a load per float. The points' finite check
// rides along, on the values loaded anyway (as AllFiniteAvx512 tests them).
bool PackQueryBlockAvx512(const float* points, size_t rows, size_t dim, const float* shift,
                          float* qpack) {
  static_assert(kQueryBlock == 8);
  const __m512i split = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  __m512i largest = _mm512_setzero_si512();  // of the values' bits shifted left by one: no sign
  for (size_t j0 = 0; j0 < dim; j0 += 16) {
    const size_t left = dim - j0 < 16 ? dim - j0 : 16;
    const __mmask16 m = left == 16 ? __mmask16{0xFFFF} : TailMask(left);
    const __m512 s = _mm512_maskz_loadu_ps(m, shift + j0);
    __m512d r[8];  // row q's 16 floats as 8 pairs
    for (size_t q = 0; q < 8; ++q) {
      if (q >= rows) {
        r[q] = _mm512_setzero_pd();
        continue;
      }
      const __m512 x = _mm512_maskz_loadu_ps(m, points + q * dim + j0);
      largest = _mm512_max_epu32(largest, _mm512_slli_epi32(_mm512_castps_si512(x), 1));
      r[q] = _mm512_castps_pd(_mm512_maskz_sub_ps(m, x, s));
    }
    // lo[i] lane L: pair 2L of rows 2i, 2i+1; hi[i]: pair 2L + 1.
    __m512d lo[4], hi[4];
    for (int i = 0; i < 4; ++i) {
      lo[i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);
      hi[i] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);
    }
    // a[x] (rows 0-3) and b[x] (rows 4-7): pairs {0, 2}, {4, 6}, {1, 3}, {5, 7}.
    const __m512d a[4] = {
        _mm512_shuffle_f64x2(lo[0], lo[1], 0x44), _mm512_shuffle_f64x2(lo[0], lo[1], 0xEE),
        _mm512_shuffle_f64x2(hi[0], hi[1], 0x44), _mm512_shuffle_f64x2(hi[0], hi[1], 0xEE)};
    const __m512d b[4] = {
        _mm512_shuffle_f64x2(lo[2], lo[3], 0x44), _mm512_shuffle_f64x2(lo[2], lo[3], 0xEE),
        _mm512_shuffle_f64x2(hi[2], hi[3], 0x44), _mm512_shuffle_f64x2(hi[2], hi[3], 0xEE)};
    // pair[t]: pair t of rows 0..7 in row order.
    const __m512d pair[8] = {
        _mm512_shuffle_f64x2(a[0], b[0], 0x88), _mm512_shuffle_f64x2(a[2], b[2], 0x88),
        _mm512_shuffle_f64x2(a[0], b[0], 0xDD), _mm512_shuffle_f64x2(a[2], b[2], 0xDD),
        _mm512_shuffle_f64x2(a[1], b[1], 0x88), _mm512_shuffle_f64x2(a[3], b[3], 0x88),
        _mm512_shuffle_f64x2(a[1], b[1], 0xDD), _mm512_shuffle_f64x2(a[3], b[3], 0xDD)};
    for (size_t t = 0; 2 * t < left; ++t) {
      const __m512 out = _mm512_permutexvar_ps(split, _mm512_castpd_ps(pair[t]));
      float* dst = qpack + (j0 + 2 * t) * kQueryBlock;
      if (2 * t + 1 < left) {
        _mm512_storeu_ps(dst, out);
      } else {
        _mm512_mask_storeu_ps(dst, 0xFF, out);
      }
    }
  }
  return _mm512_reduce_max_epu32(largest) < 0xff000000u;  // no NaN or Inf read
}

// Register blocking: 8 queries x 16R base vectors = 8R accumulators (24 at R = 3), plus R panel
// registers and one broadcast. Per dimension: R panel loads + 8 broadcasts feed 8R FMAs, so at
// R = 3 the loop is bound by FMA throughput rather than loads (the plain kernel does 2 loads per
// FMA). A panel with few live lanes (a tree node's k-means) takes R = 1 or 2.
template <int R>
void ScoreBlockLanes(const float* qpack, const float* panel, size_t dim, const float* bias,
                     float scale, const float* thresholds, float* scores, uint64_t* masks) {
  static_assert(kQueryBlock == 8 && kPanelWidth == 48 && R >= 1 && R <= 3);
  __m512 acc[8][R];
#pragma GCC unroll 8
  for (int q = 0; q < 8; ++q) {
#pragma GCC unroll 3
    for (int r = 0; r < R; ++r) acc[q][r] = _mm512_setzero_ps();
  }
  for (size_t d = 0; d < dim; ++d) {
    const float* p = panel + d * kPanelWidth;
    const float* qv = qpack + d * kQueryBlock;
    __m512 b[R];
#pragma GCC unroll 3
    for (int r = 0; r < R; ++r) b[r] = _mm512_loadu_ps(p + 16 * r);
#pragma GCC unroll 8
    for (int q = 0; q < 8; ++q) {
      const __m512 x = _mm512_set1_ps(qv[q]);
#pragma GCC unroll 3
      for (int r = 0; r < R; ++r) acc[q][r] = _mm512_fmadd_ps(x, b[r], acc[q][r]);
    }
  }
  const __m512 s = _mm512_set1_ps(scale);
#pragma GCC unroll 8
  for (int q = 0; q < 8; ++q) {
    float* out = scores + q * kPanelWidth;
    const __m512 t = _mm512_set1_ps(thresholds[q]);
    uint64_t mask = 0;
#pragma GCC unroll 3
    for (int r = 0; r < R; ++r) {
      const __m512 v = _mm512_fmadd_ps(acc[q][r], s, _mm512_loadu_ps(bias + 16 * r));
      _mm512_storeu_ps(out + 16 * r, v);
      mask |= uint64_t{_mm512_cmp_ps_mask(v, t, _CMP_LE_OQ)} << (16 * r);
    }
    masks[q] = mask;
  }
}

void ScoreBlockAvx512(const float* qpack, const float* panel, size_t dim, const float* bias,
                      float scale, const float* thresholds, float* scores, uint64_t* masks,
                      size_t lanes) {
  if (lanes <= 16) {
    ScoreBlockLanes<1>(qpack, panel, dim, bias, scale, thresholds, scores, masks);
  } else if (lanes <= 32) {
    ScoreBlockLanes<2>(qpack, panel, dim, bias, scale, thresholds, scores, masks);
  } else {
    ScoreBlockLanes<3>(qpack, panel, dim, bias, scale, thresholds, scores, masks);
  }
}

// The bits shifted left by one drop the sign: NaN and Inf are those at or above 0xff000000.
bool AllFiniteAvx512(const float* values, size_t n) {
  auto bits = [](__m512i v) { return _mm512_slli_epi32(v, 1); };
  __m512i largest = _mm512_setzero_si512();
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i a = _mm512_max_epu32(bits(_mm512_loadu_si512(values + i)),
                                       bits(_mm512_loadu_si512(values + i + 16)));
    const __m512i b = _mm512_max_epu32(bits(_mm512_loadu_si512(values + i + 32)),
                                       bits(_mm512_loadu_si512(values + i + 48)));
    largest = _mm512_max_epu32(largest, _mm512_max_epu32(a, b));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16{0xFFFF} : TailMask(n - i);
    largest = _mm512_max_epu32(largest, bits(_mm512_maskz_loadu_epi32(m, values + i)));
  }
  return _mm512_reduce_max_epu32(largest) < 0xff000000u;
}

// One pass per kept lane: the least score of the lanes left, its lowest lane, taken out.
uint64_t BestLanesAvx512(const float* scores, uint64_t mask, size_t keep) {
  static_assert(kPanelWidth == 48);
  if (static_cast<size_t>(__builtin_popcountll(mask)) <= keep) return mask;
  const __m512 inf = _mm512_set1_ps(__builtin_inff());
  __m512 v0 = _mm512_mask_loadu_ps(inf, static_cast<__mmask16>(mask), scores);
  if (mask >> 16 == 0) {  // one register, as for a tree node's k-means (k <= 16)
    auto left = static_cast<__mmask16>(mask);
    for (size_t i = 0; i < keep; ++i) {
      const __m512 least = _mm512_set1_ps(_mm512_reduce_min_ps(v0));
      const auto at = static_cast<__mmask16>(_mm512_cmp_ps_mask(v0, least, _CMP_EQ_OQ) & left);
      const auto lane = static_cast<__mmask16>(at & (~at + 1));  // the lowest
      left = static_cast<__mmask16>(left & ~lane);
      v0 = _mm512_mask_mov_ps(v0, lane, inf);
    }
    return mask & ~uint64_t{left};
  }
  __m512 v1 = _mm512_mask_loadu_ps(inf, static_cast<__mmask16>(mask >> 16), scores + 16);
  if (mask >> 32 == 0) {  // two registers: a tree node's k-means up to the branching (32)
    uint64_t best = 0;
    for (size_t i = 0; i < keep; ++i) {
      const __m512 least = _mm512_set1_ps(_mm512_reduce_min_ps(_mm512_min_ps(v0, v1)));
      const uint64_t at = (uint64_t{_mm512_cmp_ps_mask(v0, least, _CMP_EQ_OQ)} |
                           uint64_t{_mm512_cmp_ps_mask(v1, least, _CMP_EQ_OQ)} << 16) &
                          mask & ~best;
      const uint64_t lane = at & (~at + 1);  // the lowest
      best |= lane;
      v0 = _mm512_mask_mov_ps(v0, static_cast<__mmask16>(lane), inf);
      v1 = _mm512_mask_mov_ps(v1, static_cast<__mmask16>(lane >> 16), inf);
    }
    return best;
  }
  __m512 v2 = _mm512_mask_loadu_ps(inf, static_cast<__mmask16>(mask >> 32), scores + 32);
  uint64_t best = 0;
  for (size_t i = 0; i < keep; ++i) {
    const __m512 least =
        _mm512_set1_ps(_mm512_reduce_min_ps(_mm512_min_ps(_mm512_min_ps(v0, v1), v2)));
    const uint64_t at = (uint64_t{_mm512_cmp_ps_mask(v0, least, _CMP_EQ_OQ)} |
                         uint64_t{_mm512_cmp_ps_mask(v1, least, _CMP_EQ_OQ)} << 16 |
                         uint64_t{_mm512_cmp_ps_mask(v2, least, _CMP_EQ_OQ)} << 32) &
                        mask & ~best;
    const uint64_t lane = at & (~at + 1);  // the lowest
    best |= lane;
    v0 = _mm512_mask_mov_ps(v0, static_cast<__mmask16>(lane), inf);
    v1 = _mm512_mask_mov_ps(v1, static_cast<__mmask16>(lane >> 16), inf);
    v2 = _mm512_mask_mov_ps(v2, static_cast<__mmask16>(lane >> 32), inf);
  }
  return best;
}

void SmallestFirstAvx512(uint64_t* keys, size_t n, size_t want) {
  const __m512i none = _mm512_set1_epi64(-1);  // above every key but an all-ones one
  // keys[i, n) as a vector of 8 at `at`: the lanes past n read as all ones.
  auto load = [&](size_t at) {
    if (n - at >= 8) return _mm512_loadu_si512(keys + at);
    const auto lanes = static_cast<__mmask8>((1u << (n - at)) - 1);
    return _mm512_mask_loadu_epi64(none, lanes, keys + at);
  };
  for (size_t r = 0; r < want; ++r) {
    __m512i m0 = none, m1 = none, m2 = none, m3 = none;  // four chains of minima
    size_t i = r;
    for (; n - i >= 32; i += 32) {
      m0 = _mm512_min_epu64(m0, _mm512_loadu_si512(keys + i));
      m1 = _mm512_min_epu64(m1, _mm512_loadu_si512(keys + i + 8));
      m2 = _mm512_min_epu64(m2, _mm512_loadu_si512(keys + i + 16));
      m3 = _mm512_min_epu64(m3, _mm512_loadu_si512(keys + i + 24));
    }
    for (; i < n; i += 8) m0 = _mm512_min_epu64(m0, load(i));
    const uint64_t least = _mm512_reduce_min_epu64(
        _mm512_min_epu64(_mm512_min_epu64(m0, m1), _mm512_min_epu64(m2, m3)));
    const __m512i target = _mm512_set1_epi64(static_cast<long long>(least));
    size_t at = r;
    for (;; at += 8) {  // the first key equal to it (there is one: it came from keys[r, n))
      const __mmask8 equal = _mm512_cmpeq_epu64_mask(load(at), target);
      if (equal != 0) {
        at += static_cast<size_t>(__builtin_ctz(equal));
        break;
      }
    }
    std::swap(keys[r], keys[at]);
  }
}

size_t SelectIdsInWindowAvx512(const uint64_t* ids, size_t n, uint64_t first,
                               const uint64_t* window, size_t words, uint64_t* out) {
  const __m512i base = _mm512_set1_epi64(static_cast<long long>(first));
  const __m512i end = _mm512_set1_epi64(static_cast<long long>(words));
  const __m512i low6 = _mm512_set1_epi64(63), one = _mm512_set1_epi64(1);
  size_t kept = 0;
  for (size_t i = 0; i < n; i += 8) {
    const __mmask8 lanes = n - i >= 8 ? __mmask8{0xff} : static_cast<__mmask8>((1u << (n - i)) - 1);
    const __m512i id = _mm512_maskz_loadu_epi64(lanes, ids + i);
    const __m512i at = _mm512_sub_epi64(id, base);  // wraps past the window's end below first
    const __m512i w = _mm512_srli_epi64(at, 6);
    const __mmask8 inside = _mm512_mask_cmplt_epu64_mask(lanes, w, end);
    const __m512i word =
        _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), inside, w, window, sizeof(uint64_t));
    const __m512i bit = _mm512_srlv_epi64(word, _mm512_and_si512(at, low6));
    const __mmask8 set = _mm512_mask_test_epi64_mask(inside, bit, one);
    _mm512_mask_compressstoreu_epi64(out + kept, set, id);
    kept += static_cast<size_t>(__builtin_popcount(set));
  }
  return kept;
}

size_t SelectNotAboveAvx512(const float* values, size_t n, float bound, uint32_t* out) {
  const __m512 b = _mm512_set1_ps(bound);
  const __m512i step = _mm512_set1_epi32(16);
  __m512i index = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  size_t kept = 0;
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 lanes =
        n - i >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(lanes, values + i);
    const __mmask16 keep = _mm512_mask_cmp_ps_mask(lanes, v, b, _CMP_NGT_UQ);  // NaN: kept
    _mm512_mask_compressstoreu_epi32(out + kept, keep, index);
    kept += static_cast<size_t>(__builtin_popcount(keep));
    index = _mm512_add_epi32(index, step);
  }
  return kept;
}

}  // namespace shoal::index::internal

// AVX2 + FMA (+ F16C) kernels. Compiled with -mavx2 -mfma -mf16c (see CMakeLists.txt); only
// entered when base::Cpu() reports avx2, fma and f16c. Tails use masked loads, so any dimension is
// handled.
#include <immintrin.h>

#include "index/distance/distance_internal.h"

namespace shoal::index::internal {
namespace {

// Lanes [0, n) set, n in [0, 8].
__m256i TailMask(size_t n) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lane);
}

float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace

float L2SqrAvx2(const float* a, const float* b, size_t dim) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= dim; i += 32) {
    const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
    const __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8));
    const __m256 d2 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16));
    const __m256 d3 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24));
    s0 = _mm256_fmadd_ps(d0, d0, s0);
    s1 = _mm256_fmadd_ps(d1, d1, s1);
    s2 = _mm256_fmadd_ps(d2, d2, s2);
    s3 = _mm256_fmadd_ps(d3, d3, s3);
  }
  for (; i + 8 <= dim; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
    s0 = _mm256_fmadd_ps(d, d, s0);
  }
  if (i < dim) {
    const __m256i mask = TailMask(dim - i);
    const __m256 d =
        _mm256_sub_ps(_mm256_maskload_ps(a + i, mask), _mm256_maskload_ps(b + i, mask));
    s1 = _mm256_fmadd_ps(d, d, s1);
  }
  return HorizontalSum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

float InnerProductAvx2(const float* a, const float* b, size_t dim) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= dim; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
  }
  for (; i + 8 <= dim; i += 8) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  }
  if (i < dim) {
    const __m256i mask = TailMask(dim - i);
    s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, mask), _mm256_maskload_ps(b + i, mask), s1);
  }
  return HorizontalSum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

// Halves: 32 (64 bytes, one cache line) per step, converted by vcvtph2ps; the partial sum is
// looked at every kHalfCheckDims dimensions.
float L2SqrHalfBoundedAvx2(const float* a, const uint16_t* b, size_t dim, float bound) {
  auto load = [](const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  };
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  auto sum = [&] {
    return HorizontalSum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  };
  size_t i = 0;
  while (i + 32 <= dim) {
    const size_t stop = i + kHalfCheckDims <= dim ? i + kHalfCheckDims : dim;
    for (; i + 32 <= stop; i += 32) {
      const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(a + i), load(b + i));
      const __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 8), load(b + i + 8));
      const __m256 d2 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 16), load(b + i + 16));
      const __m256 d3 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 24), load(b + i + 24));
      s0 = _mm256_fmadd_ps(d0, d0, s0);
      s1 = _mm256_fmadd_ps(d1, d1, s1);
      s2 = _mm256_fmadd_ps(d2, d2, s2);
      s3 = _mm256_fmadd_ps(d3, d3, s3);
    }
    if (i + 32 <= dim) {
      const float partial = sum();
      if (partial > bound) return partial;
    }
  }
  for (; i + 8 <= dim; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(a + i), load(b + i));
    s0 = _mm256_fmadd_ps(d, d, s0);
  }
  float tail = 0;
  for (; i < dim; ++i) {
    const float d = a[i] - _cvtsh_ss(b[i]);
    tail += d * d;
  }
  return sum() + tail;
}

void FloatsToHalvesF16c(const float* in, size_t n, uint16_t* out) {
  for (size_t i = 0; i < n; ++i) {
    out[i] = static_cast<uint16_t>(_cvtss_sh(in[i], _MM_FROUND_TO_NEAREST_INT));
  }
}

void HalvesToFloatsF16c(const uint16_t* in, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = _cvtsh_ss(in[i]);
}

}  // namespace shoal::index::internal

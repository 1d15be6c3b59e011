// Run-time dispatch of the distance kernels: the level is chosen once from base::Cpu().
#include "index/distance/distance.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/cpu_features.h"
#include "index/distance/distance_internal.h"

namespace shoal::index {
namespace internal {
namespace {

constexpr DistanceKernels kScalar = {KernelLevelId::kScalar, "scalar", L2SqrScalar,
                                     InnerProductScalar, L2SqrHalfBoundedScalar};
constexpr DistanceKernels kAvx2 = {KernelLevelId::kAvx2, "avx2", L2SqrAvx2, InnerProductAvx2,
                                   L2SqrHalfBoundedAvx2};
constexpr DistanceKernels kAvx512 = {KernelLevelId::kAvx512, "avx512", L2SqrAvx512,
                                     InnerProductAvx512, L2SqrHalfBoundedAvx512};

}  // namespace

bool LevelSupported(KernelLevelId level) {
  const base::CpuFeatures& cpu = base::Cpu();
  switch (level) {
    case KernelLevelId::kScalar:
      return true;
    case KernelLevelId::kAvx2:
      return cpu.avx2 && cpu.fma && cpu.f16c;  // every AVX2 CPU has F16C
    case KernelLevelId::kAvx512:
      return cpu.avx512f && cpu.avx512bw && cpu.avx512vl && cpu.fma;  // F16C is in AVX-512F
  }
  return false;
}

const DistanceKernels& KernelsFor(KernelLevelId level) {
  switch (level) {
    case KernelLevelId::kAvx512:
      return kAvx512;
    case KernelLevelId::kAvx2:
      return kAvx2;
    case KernelLevelId::kScalar:
      break;
  }
  return kScalar;
}

const DistanceKernels& ActiveKernels() {
  static const DistanceKernels& active = []() -> const DistanceKernels& {
    if (LevelSupported(KernelLevelId::kAvx512)) return kAvx512;
    if (LevelSupported(KernelLevelId::kAvx2)) return kAvx2;
    return kScalar;
  }();
  return active;
}

}  // namespace internal

float L2Sqr(const float* a, const float* b, size_t dim) {
  return internal::ActiveKernels().l2_sqr(a, b, dim);
}

void L2SqrRows(const float* a, const float* const* rows, size_t n, float* out, size_t dim) {
  const internal::DistanceKernels& k = internal::ActiveKernels();
  if (k.level == internal::KernelLevelId::kAvx512) {
    internal::L2SqrRowsAvx512(a, rows, n, out, dim);
    return;
  }
  for (size_t i = 0; i < n; ++i) out[i] = k.l2_sqr(a, rows[i], dim);
}

float InnerProduct(const float* a, const float* b, size_t dim) {
  return internal::ActiveKernels().inner_product(a, b, dim);
}

namespace internal {

size_t SelectIdsInWindowScalar(const uint64_t* ids, size_t n, uint64_t first,
                               const uint64_t* window, size_t words, uint64_t* out) {
  if (words == 0) return 0;
  const uint64_t last = words - 1;
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {       // no branch per id: written always, counted when set
    const uint64_t at = ids[i] - first;  // wraps past the window's end below first
    const uint64_t w = at >> 6;
    out[kept] = ids[i];
    kept += static_cast<size_t>((w < words) & (window[std::min(w, last)] >> (at & 63)));
  }
  return kept;
}

size_t SelectNotAboveScalar(const float* values, size_t n, float bound, uint32_t* out) {
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    out[kept] = static_cast<uint32_t>(i);
    kept += static_cast<size_t>(!(values[i] > bound));
  }
  return kept;
}

// NaN and Inf have every exponent bit set: a block passes when its largest magnitude's bits are
// below that. Branch-free per block, so the compiler vectorises it.
bool AllFiniteScalar(const float* values, size_t n) {
  constexpr size_t kBlock = 256;
  constexpr uint32_t kExponent = 0x7f800000u, kMagnitude = 0x7fffffffu;
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t count = std::min(kBlock, n - start);
    uint32_t largest = 0;
    for (size_t j = 0; j < count; ++j) {
      uint32_t bits;
      std::memcpy(&bits, &values[start + j], sizeof(bits));
      largest = std::max(largest, bits & kMagnitude);
    }
    if (largest >= kExponent) return false;
  }
  return true;
}

}  // namespace internal

bool AllFinite(const float* values, size_t n) {
  if (internal::ActiveKernels().level == internal::KernelLevelId::kAvx512) {
    return internal::AllFiniteAvx512(values, n);
  }
  return internal::AllFiniteScalar(values, n);
}

namespace {

// Up to this many wanted, SmallestFirstBySample takes them from the keys it keeps by vector minima
// (AVX-512), beyond it by std::partial_sort.
constexpr size_t kSmallestOfKeptByMinimum = 64;

// SmallestFirst for a few of many (want * 8 <= n, n >= 256): a bound from a sample of the keys
// (every step-th), where about twice `want` of them lie not above it; the keys not above it are
// moved to the front and the want smallest of those sorted. (std::partial_sort's heap of `want`
// keys compares every key against it, and mispredicts: a tenant's query ranks a few tens of its
// several hundred postings so.) False, with the keys' order changed but not their multiset, when
// fewer than `want` lie not above the bound (a sample far from its set: a few percent of calls).
bool SmallestFirstBySample(uint64_t* keys, size_t n, size_t want) {
  constexpr size_t kSample = 128;
  const size_t step = n / kSample;
  std::array<uint64_t, kSample> sample;
  for (size_t i = 0; i < kSample; ++i) sample[i] = keys[i * step];
  // The sample's rank below which about 2 want / n of the keys lie, two more for its spread.
  const size_t rank = std::min(kSample - 1, want * kSample * 2 / n + 2);
  std::nth_element(sample.begin(), sample.begin() + static_cast<ptrdiff_t>(rank), sample.end());
  const uint64_t bound = sample[rank];
  // The keys not above it to the front, the rest after, without a branch a key (std::partition's
  // mispredict on random keys): each is written to both sides, and only its side's end moves.
  thread_local std::vector<uint64_t> rest;
  rest.resize(n);
  size_t kept = 0, others = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t k = keys[i];
    const bool low = k <= bound;
    keys[kept] = k;  // kept <= i: a key already read
    rest[others] = k;
    kept += low;
    others += !low;
  }
  std::copy(rest.begin(), rest.begin() + static_cast<ptrdiff_t>(others), keys + kept);
  if (kept < want) return false;
  // About twice `want` kept: their want smallest by vector minima where a few tens are wanted
  // (a heap's compares mispredict as std::partial_sort's did).
  if (want <= kSmallestOfKeptByMinimum &&
      internal::ActiveKernels().level == internal::KernelLevelId::kAvx512) {
    internal::SmallestFirstAvx512(keys, kept, want);
  } else {
    std::partial_sort(keys, keys + want, keys + kept);
  }
  return true;
}

}  // namespace

void SmallestFirst(uint64_t* keys, size_t n, size_t want) {
  want = std::min(want, n);
  if (want <= internal::kSmallestByMinimum &&
      internal::ActiveKernels().level == internal::KernelLevelId::kAvx512) {
    return internal::SmallestFirstAvx512(keys, n, want);
  }
  if (want * 8 <= n && n >= 256 && SmallestFirstBySample(keys, n, want)) return;
  std::partial_sort(keys, keys + want, keys + n);
}

size_t SelectNotAbove(const float* values, size_t n, float bound, uint32_t* out) {
  if (internal::ActiveKernels().level == internal::KernelLevelId::kAvx512) {
    return internal::SelectNotAboveAvx512(values, n, bound, out);
  }
  return internal::SelectNotAboveScalar(values, n, bound, out);
}

size_t SelectIdsInWindow(const uint64_t* ids, size_t n, uint64_t first, const uint64_t* window,
                         size_t words, uint64_t* out) {
  if (internal::ActiveKernels().level == internal::KernelLevelId::kAvx512) {
    return internal::SelectIdsInWindowAvx512(ids, n, first, window, words, out);
  }
  return internal::SelectIdsInWindowScalar(ids, n, first, window, words, out);
}

float L2SqrHalf(const float* a, const uint16_t* b, size_t dim) {
  return internal::ActiveKernels().l2_sqr_half_bounded(a, b, dim, INFINITY);
}

float L2SqrHalfBounded(const float* a, const uint16_t* b, size_t dim, float bound) {
  return internal::ActiveKernels().l2_sqr_half_bounded(a, b, dim, bound);
}

float Distance(Metric metric, const float* a, const float* b, size_t dim) {
  return metric == Metric::kL2 ? L2Sqr(a, b, dim) : -InnerProduct(a, b, dim);
}

float DistanceBounded(Metric metric, const float* a, const float* b, size_t dim, float bound) {
  if (metric == Metric::kL2 &&
      internal::ActiveKernels().level == internal::KernelLevelId::kAvx512) {
    return internal::L2SqrBoundedAvx512(a, b, dim, bound);
  }
  return Distance(metric, a, b, dim);
}

const char* KernelLevel() { return internal::ActiveKernels().name; }

}  // namespace shoal::index

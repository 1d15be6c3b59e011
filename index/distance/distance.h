// Distance kernels: squared L2 and inner product over float vectors, with AVX-512, AVX2+FMA and
// scalar implementations chosen once at run time (base::Cpu(); SHOAL_CPU caps the level). For
// memory-bound scans (the centroid navigator), L2SqrHalf reads the second vector as IEEE
// binary16 ("half"), converted exactly to float and accumulated in float: half the bytes.
//
//   float d = shoal::index::L2Sqr(a, b, dim);
//   std::vector<uint16_t> h(dim);
//   shoal::index::FloatsToHalves(b, dim, h.data());
//   float approx = shoal::index::L2SqrHalf(a, h.data(), dim);
//
// All functions are pure and thread-safe.
#ifndef SHOAL_INDEX_DISTANCE_DISTANCE_H_
#define SHOAL_INDEX_DISTANCE_DISTANCE_H_

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

namespace shoal::index {

// The index's view of a metric; the DB maps cosine to kInnerProduct over normalised vectors.
enum class Metric { kL2, kInnerProduct };

float L2Sqr(const float* a, const float* b, size_t dim);
// out[i] = L2Sqr(a, rows[i], dim) for i < n, bit for bit: one call for many rows (a tree node's
// children), the query's loads shared between rows where the kernel allows.
void L2SqrRows(const float* a, const float* const* rows, size_t n, float* out, size_t dim);
float InnerProduct(const float* a, const float* b, size_t dim);
// Writes to `out`, in order, the ids of ids[0, n) whose bit (id - first) is set in `window`, a
// bitmap of `words` words over ids [first, first + 64 x words) (ids below or past it: not set),
// and returns how many; `out` has room for n. Not a distance, but a kernel of the same scans: a
// tenant's filter lists whole postings' ids through its id window (SpannIndex::TakeMembers).
size_t SelectIdsInWindow(const uint64_t* ids, size_t n, uint64_t first, const uint64_t* window,
                         size_t words, uint64_t* out);
// Writes to `out`, in order, every i < n whose values[i] is not above `bound` (NaN included:
// "not above", as a scan's `!(v > bound)` keeps it) and returns how many; `out` has room for n.
// The listing step of the quantized scans: most of a block's codes are dropped on their bound,
// and a branch per code mispredicts; with AVX-512 sixteen a step, a compare and a compress.
size_t SelectNotAbove(const float* values, size_t n, float bound, uint32_t* out);
// Puts the `want` smallest of keys[0, n) first, ascending (as std::partial_sort does; the rest
// in no order). Not a distance: the ranking of a scope's scored postings (RankKeys), where a few
// of a few hundred are taken. With AVX-512 and a few wanted, each is found by a vector minimum
// over the rest (a heap's compares mispredict on random keys).
void SmallestFirst(uint64_t* keys, size_t n, size_t want);
// A scored row as one integer ordered as (distance, row) pairs are: a non-negative float's bits
// order as the float does, so (bits << 32 | row) compares in one instruction where the pair
// takes two and a branch (the keys SmallestFirst ranks). NaN ranks as infinity, a negative
// distance (-0 included) as +0.
inline uint64_t RankKey(float distance, uint32_t row) {
  const float d = std::isnan(distance) ? std::numeric_limits<float>::infinity()
                                       : (distance > 0.0f ? distance : 0.0f);
  return (uint64_t{std::bit_cast<uint32_t>(d)} << 32) | row;
}
inline std::pair<float, uint32_t> FromRankKey(uint64_t key) {
  return {std::bit_cast<float>(static_cast<uint32_t>(key >> 32)), static_cast<uint32_t>(key)};
}
// True when none of values[0, n) is NaN or infinite. Not a distance either: the check of every
// point a k-means assignment is given, which would otherwise cost a tenth of a small one.
bool AllFinite(const float* values, size_t n);
// "smaller is closer": L2Sqr, or -InnerProduct.
float Distance(Metric metric, const float* a, const float* b, size_t dim);
// Distance, but may stop early: exactly Distance(metric, a, b, dim) when that is <= bound, else
// a value > bound and not above the distance. For keeping the k nearest: pass the current k-th
// distance, so a vector that cannot enter is read only in part. L2 on AVX-512 looks at its partial
// sum every 128 dimensions; the other kernels, and inner product, compute the whole distance.
float DistanceBounded(Metric metric, const float* a, const float* b, size_t dim, float bound);

// Squared L2 between float `a` and half `b`; equals L2Sqr over HalfToFloat(b[i]) up to float
// summation order.
float L2SqrHalf(const float* a, const uint16_t* b, size_t dim);
// Same, but may stop early: once a partial sum (looked at every 128 dimensions) exceeds `bound`
// it returns that partial sum, a value > bound and <= L2SqrHalf. When L2SqrHalf(a, b, dim) <=
// bound it returns exactly that. For keeping the k nearest: pass the current k-th distance, so
// rivals that cannot enter stop early (put the informative dimensions first).
float L2SqrHalfBounded(const float* a, const uint16_t* b, size_t dim, float bound);

// Round to nearest even, as vcvtps2ph does: |x| >= 65520 becomes +-inf, NaN stays NaN, values
// below 2^-14 become subnormal (or zero). HalfToFloat is exact. Portable (no F16C needed).
uint16_t FloatToHalf(float x);
float HalfToFloat(uint16_t h);
// Converts n floats; false (and `out` unspecified) if one is NaN or its magnitude above the
// largest half, 65504 (it would not survive the conversion as a number).
bool FloatsToHalves(const float* in, size_t n, uint16_t* out);

// Name of the kernel level in use: "avx512", "avx2" or "scalar".
const char* KernelLevel();

}  // namespace shoal::index

#endif  // SHOAL_INDEX_DISTANCE_DISTANCE_H_

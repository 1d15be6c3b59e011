// Private to index/: the per-ISA distance kernels behind distance.h, exposed so that tests and
// FlatIndex can call a specific level. Nothing outside index/ includes this header.
//
// Each ISA lives in its own translation unit compiled with its own -m flags; the AVX-512 and
// AVX2 units must only be entered when base::Cpu() reports the features. Those units include
// no shared inline code (no std templates), so no AVX instruction can leak into portable code
// through an ODR-merged inline function.
#ifndef SHOAL_INDEX_DISTANCE_DISTANCE_INTERNAL_H_
#define SHOAL_INDEX_DISTANCE_DISTANCE_INTERNAL_H_

#include <cstddef>
#include <cstdint>

namespace shoal::index::internal {

using DistanceFn = float (*)(const float* a, const float* b, size_t dim);
using HalfBoundedFn = float (*)(const float* a, const uint16_t* b, size_t dim, float bound);

// How often (in dimensions) the bounded half kernels compare their partial sum with the bound.
inline constexpr size_t kHalfCheckDims = 128;

enum class KernelLevelId { kScalar, kAvx2, kAvx512 };

struct DistanceKernels {
  KernelLevelId level;
  const char* name;  // "scalar", "avx2", "avx512"
  DistanceFn l2_sqr;
  DistanceFn inner_product;
  HalfBoundedFn l2_sqr_half_bounded;  // L2SqrHalfBounded
};

float L2SqrScalar(const float* a, const float* b, size_t dim);
float InnerProductScalar(const float* a, const float* b, size_t dim);
float L2SqrAvx2(const float* a, const float* b, size_t dim);
float InnerProductAvx2(const float* a, const float* b, size_t dim);
float L2SqrAvx512(const float* a, const float* b, size_t dim);
// out[i] = L2SqrAvx512(a, rows[i], dim) for i < n, bit for bit (L2SqrRows).
void L2SqrRowsAvx512(const float* a, const float* const* rows, size_t n, float* out, size_t dim);
// SelectIdsInWindow: the plain loop, and eight ids a step (a gather of their words, a compress).
size_t SelectIdsInWindowScalar(const uint64_t* ids, size_t n, uint64_t first,
                               const uint64_t* window, size_t words, uint64_t* out);
size_t SelectIdsInWindowAvx512(const uint64_t* ids, size_t n, uint64_t first,
                               const uint64_t* window, size_t words, uint64_t* out);
// SelectNotAbove: the plain loop (written always, counted when kept), and sixteen a step.
size_t SelectNotAboveScalar(const float* values, size_t n, float bound, uint32_t* out);
size_t SelectNotAboveAvx512(const float* values, size_t n, float bound, uint32_t* out);
// SmallestFirst for want <= kSmallestByMinimum: the minimum of the rest found, then moved to the
// front, want times.
inline constexpr size_t kSmallestByMinimum = 16;
void SmallestFirstAvx512(uint64_t* keys, size_t n, size_t want);
// AllFinite: the largest magnitude's bits against the exponent's, a block at a time.
bool AllFiniteScalar(const float* values, size_t n);
bool AllFiniteAvx512(const float* values, size_t n);
float InnerProductAvx512(const float* a, const float* b, size_t dim);
float L2SqrHalfBoundedScalar(const float* a, const uint16_t* b, size_t dim, float bound);
float L2SqrHalfBoundedAvx2(const float* a, const uint16_t* b, size_t dim, float bound);
float L2SqrHalfBoundedAvx512(const float* a, const uint16_t* b, size_t dim, float bound);
// L2SqrAvx512's sums in its order (the same bits when it does not stop), stopping as
// L2SqrHalfBoundedAvx512 does (DistanceBounded).
float L2SqrBoundedAvx512(const float* a, const float* b, size_t dim, float bound);
// F16C's own conversions (AVX2 unit; only with base::Cpu().f16c): tests check the portable
// FloatToHalf / HalfToFloat against them bit for bit.
void FloatsToHalvesF16c(const float* in, size_t n, uint16_t* out);
void HalvesToFloatsF16c(const uint16_t* in, size_t n, float* out);

// True if this CPU (after the SHOAL_CPU cap) can run `level`.
bool LevelSupported(KernelLevelId level);
// The kernels of `level`; only call with a supported level.
const DistanceKernels& KernelsFor(KernelLevelId level);
// The best supported level, chosen once.
const DistanceKernels& ActiveKernels();

// ---- Blocked scoring for batched exact search (AVX-512 only) ----
//
// A query block is kQueryBlock queries packed dimension-major: qpack[d * kQueryBlock + q].
// A base panel is kPanelWidth vectors packed dimension-major: panel[d * kPanelWidth + j].
// Padding rows/lanes are zero-filled by the packer.
inline constexpr size_t kQueryBlock = 8;
inline constexpr size_t kPanelWidth = 48;

// Packs `rows` (<= kQueryBlock) points of `dim` floats, row q at points + q * dim, less `shift`
// (dim floats), into a query block: qpack[d * kQueryBlock + q]; rows q >= rows are zero.
// Returns false when one of the points' values is NaN or infinite (qpack is then unspecified).
bool PackQueryBlockAvx512(const float* points, size_t rows, size_t dim, const float* shift,
                          float* qpack);

// Packs `rows` (<= kPanelWidth) vectors of `dim` floats, row j at base + j * dim, into a panel;
// lanes j >= rows are zero. Offsets must fit int32: kPanelWidth * dim < 2^31.
void PackPanelAvx512(const float* base, size_t rows, size_t dim, float* panel);

// For q < kQueryBlock, j < the first multiple of 16 at or above `lanes` (<= kPanelWidth; the
// panel's lanes past it are neither read nor scored):
//   scores[q * kPanelWidth + j] = bias[j] + scale * <query q, base j>
// with the dot product accumulated in float, one FMA per dimension in order d = 0..dim-1, and
// bit j of masks[q] set iff that score <= thresholds[q] (NaN scores never set a bit), so the
// caller visits only the few candidates instead of scanning every score.
void ScoreBlockAvx512(const float* qpack, const float* panel, size_t dim, const float* bias,
                      float scale, const float* thresholds, float* scores, uint64_t* masks,
                      size_t lanes = kPanelWidth);

// The `keep` lanes of `mask` (bits < kPanelWidth) whose scores[lane] are least, ties to the
// lower lane: the whole mask when it has at most `keep` bits. For a caller keeping a running
// best-`keep` list over panels, no other lane of the panel can enter that list. No NaN may be
// in the mask (ScoreBlockAvx512 never sets a bit for one).
uint64_t BestLanesAvx512(const float* scores, uint64_t mask, size_t keep);

}  // namespace shoal::index::internal

#endif  // SHOAL_INDEX_DISTANCE_DISTANCE_INTERNAL_H_

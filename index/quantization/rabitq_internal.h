// Private to index/: the per-ISA RaBitQ fast-scan kernels behind rabitq.h. Like
// distance_internal.h, each ISA's kernel sits in its own translation unit with its own -m flags
// and includes no shared inline code, so no AVX instruction leaks into portable code.
//
// The dot product sum_i u_i * qu_i of a code u with the quantized query qu is computed per 6-bit
// group g of qu (see RaBitQ::Query::luts), over the bit planes p of the code (most significant
// first, B planes), as
//   sums[i] = sum over p of 2^(B - 1 - p) * sum over 4-dimension groups j of
//             lut_g[j][nibble of code i, plane p, group j]
// for a block of 32 codes in the fast-scan form (RaBitQ::Pack). Integer sums are exact, so
// every level returns the same values.
#ifndef SHOAL_INDEX_QUANTIZATION_RABITQ_INTERNAL_H_
#define SHOAL_INDEX_QUANTIZATION_RABITQ_INTERNAL_H_

#include <cstddef>
#include <cstdint>

#include "index/distance/distance_internal.h"

namespace shoal::index::internal {

// One block: `planes` bit planes of `positions` 16-byte nibble groups each (block layout of
// RaBitQ::Pack); lut has positions x 16 bytes; sums gets 32 values, the planes weighted (above).
// Only the first `codes` (1..32) sums count: with codes <= 16 (a posting's last block) a kernel
// may skip the high nibbles, codes 16..31, and leave their sums at any value.
using RabitqScanFn = void (*)(const uint8_t* lut, size_t positions, const uint8_t* block,
                              size_t planes, size_t codes, uint32_t* sums);
void RabitqScanScalar(const uint8_t* lut, size_t positions, const uint8_t* block, size_t planes,
                      size_t codes, uint32_t* sums);
void RabitqScanAvx2(const uint8_t* lut, size_t positions, const uint8_t* block, size_t planes,
                    size_t codes, uint32_t* sums);
void RabitqScanAvx512(const uint8_t* lut, size_t positions, const uint8_t* block, size_t planes,
                      size_t codes, uint32_t* sums);

// The lookup table of one 6-bit group: for j < d / 4 and e < 16,
//   lut[j * 16 + e] = sum over bits t of e of ((qu[4 j + t] >> shift) & 63).
using RabitqLutFn = void (*)(const uint16_t* qu, size_t d, uint32_t shift, uint8_t* lut);
void RabitqLutScalar(const uint16_t* qu, size_t d, uint32_t shift, uint8_t* lut);
void RabitqLutAvx512(const uint16_t* qu, size_t d, uint32_t shift, uint8_t* lut);

// Query quantization (RaBitQ::PrepareResidual's loops), in 16 float lanes so that every level
// computes the same sums in the same order: r = a - b (b may be null: r = a, then a == r is
// allowed; r is scratch), |r|, and each r_i / |r| cut to qu_i = round((r_i / |r| - lo) / delta)
// in [0, levels] with lo / hi the extremes of r / |r|; d a multiple of 64. When levels < 64 and
// lut is not null, also writes the lookup tables of qu (RabitqLutFn with shift 0) there.
struct RabitqQuantized {
  double norm = 0;  // |r| before normalising
  float lo = 0, delta = 0;
  uint64_t sum_qu = 0;
  double error_sq = 0;  // sum of (lo + delta qu_i - r_i)^2
};
using RabitqQuantizeFn = void (*)(const float* a, const float* b, size_t d, uint32_t levels,
                                  float* r, uint16_t* qu, uint8_t* lut, RabitqQuantized* out);
void RabitqQuantizeScalar(const float* a, const float* b, size_t d, uint32_t levels, float* r,
                          uint16_t* qu, uint8_t* lut, RabitqQuantized* out);
void RabitqQuantizeAvx512(const float* a, const float* b, size_t d, uint32_t levels, float* r,
                          uint16_t* qu, uint8_t* lut, RabitqQuantized* out);
RabitqQuantizeFn RabitqQuantizeFor(KernelLevelId level);

// The float part of 32 estimates (RaBitQ's estimator and bound, see rabitq.h) from the codes'
// factors f (four arrays of 32: |r|, |r| / <y, o>, the spread term, sum u_i) and their exact dot
// products with qu. Every level does the same double operations in the same order (the AVX-512
// file is compiled with -ffp-contract=off), so the same bits.
struct RabitqFinishConstants {
  double delta, lower, offset, qn_sq, two_qn, error_coef, error_sq;
};
// Only the first `codes` (1..32) are finished: a kernel may leave the rest of distance and error
// unwritten (the AVX-512 one finishes whole groups of 8).
using RabitqFinishFn = void (*)(const RabitqFinishConstants& k, const float* f, const double* dots,
                                size_t codes, float* distance, float* error);
void RabitqFinishScalar(const RabitqFinishConstants& k, const float* f, const double* dots,
                        size_t codes, float* distance, float* error);
void RabitqFinishAvx512(const RabitqFinishConstants& k, const float* f, const double* dots,
                        size_t codes, float* distance, float* error);
RabitqFinishFn RabitqFinishFor(KernelLevelId level);
// Plus a float-rounding allowance on the bound (the rotation and the factors are float): without
// it a vector at its centroid, whose statistical error is 0, would be "outside" its bound by 1 ulp.
constexpr double kRabitqRoundingSlack = 1e-5;

// A code's last bytes: its four estimator factors (floats).
inline constexpr size_t kRabitqFactorBytes = 4 * sizeof(float);

// Walsh-Hadamard butterflies (unnormalised) of n floats in place, n a power of two >= 16: the
// portable loop (rabitq.cc, compiled for any x86-64 and left to the auto-vectoriser) and the
// AVX-512 one, which does the same additions in the same order, so gives the same bits.
void RabitqFhtPortable(float* v, size_t n);
void RabitqFhtAvx512(float* v, size_t n);

// True if this CPU (after the SHOAL_CPU cap) can run the RaBitQ kernels of `level`.
bool RabitqLevelSupported(KernelLevelId level);
RabitqScanFn RabitqScanFor(KernelLevelId level);
RabitqLutFn RabitqLutFor(KernelLevelId level);
// The best supported level, chosen once.
KernelLevelId RabitqActiveLevel();

}  // namespace shoal::index::internal

#endif  // SHOAL_INDEX_QUANTIZATION_RABITQ_INTERNAL_H_

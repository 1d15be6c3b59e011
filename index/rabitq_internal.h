// Private to index/: the per-ISA RaBitQ dot-product kernels behind rabitq.h. Like
// distance_internal.h, each ISA's kernel sits in its own translation unit with its own -m flags
// and includes no shared inline code, so no AVX instruction leaks into portable code.
//
// A kernel computes, for each code, the exact integer dot product
//   dot = sum_i u_i * qu_i = sum over code words w and query planes k of
//         popcount(code_word[w] & planes[k][w]) << shifts[k][w]
// (see RaBitQ::Query). Integer sums are exact, so every level returns the same values.
#ifndef SHOAL_INDEX_RABITQ_INTERNAL_H_
#define SHOAL_INDEX_RABITQ_INTERNAL_H_

#include <cstddef>
#include <cstdint>

#include "index/distance_internal.h"

namespace shoal::index::internal {

struct RabitqDotArgs {
  const uint64_t* planes;  // query_bits rows of code_words words
  const uint64_t* shifts;  // same layout
  size_t query_bits;
  size_t code_words;  // bits * D / 64: the bit-plane words at the start of each code
  size_t code_bytes;  // stride between codes (a multiple of 8)
};

using RabitqDotFn = void (*)(const RabitqDotArgs& args, const uint8_t* codes, size_t n,
                             uint64_t* dots);

void RabitqDotScalar(const RabitqDotArgs& args, const uint8_t* codes, size_t n, uint64_t* dots);
void RabitqDotAvx2(const RabitqDotArgs& args, const uint8_t* codes, size_t n, uint64_t* dots);
void RabitqDotAvx512(const RabitqDotArgs& args, const uint8_t* codes, size_t n, uint64_t* dots);

// The query's bit planes: bit k of qu[w * 64 + b] becomes bit b of planes[k * stride + w], for
// w < d / 64 and k < query_bits (d a multiple of 64). Exact, so every level agrees.
using RabitqPlanesFn = void (*)(const uint16_t* qu, size_t d, size_t query_bits, size_t stride,
                                uint64_t* planes);
void RabitqPlanesScalar(const uint16_t* qu, size_t d, size_t query_bits, size_t stride,
                        uint64_t* planes);
void RabitqPlanesAvx512(const uint16_t* qu, size_t d, size_t query_bits, size_t stride,
                        uint64_t* planes);
RabitqPlanesFn RabitqPlanesFor(KernelLevelId level);

// True if this CPU (after the SHOAL_CPU cap) can run the RaBitQ kernel of `level`; the AVX-512
// kernel also needs AVX512_VPOPCNTDQ.
bool RabitqLevelSupported(KernelLevelId level);
RabitqDotFn RabitqDotFor(KernelLevelId level);
// The best supported level, chosen once.
KernelLevelId RabitqActiveLevel();

}  // namespace shoal::index::internal

#endif  // SHOAL_INDEX_RABITQ_INTERNAL_H_

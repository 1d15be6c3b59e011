// CountSetBits: the set bits of a run of 64-bit words (a bitmap's population), with the popcnt
// instruction where the CPU has it. The build targets baseline x86-64, which lacks popcnt, so
// std::popcount there is a libgcc call of ~10 instructions a word: at 1M ids (16k words) a
// filter's count took ~14% of a filtered search (docs/PERFORMANCE.md).
//
//   size_t n = shoal::base::CountSetBits(words);
//
// Thread-safe (pure).
#ifndef SHOAL_BASE_BIT_COUNT_H_
#define SHOAL_BASE_BIT_COUNT_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace shoal::base {

size_t CountSetBits(std::span<const uint64_t> words);

}  // namespace shoal::base

#endif  // SHOAL_BASE_BIT_COUNT_H_

#include "base/bit_count.h"

#include <bit>

#include "base/cpu_features.h"

namespace shoal::base {
namespace {

// The same loop twice: GCC and clang emit popcnt for std::popcount only where the function's
// target has it.
__attribute__((target("popcnt"))) size_t CountWithPopcnt(std::span<const uint64_t> words) {
  size_t n = 0;
  for (uint64_t w : words) n += static_cast<size_t>(std::popcount(w));
  return n;
}

size_t CountPortably(std::span<const uint64_t> words) {
  size_t n = 0;
  for (uint64_t w : words) n += static_cast<size_t>(std::popcount(w));
  return n;
}

}  // namespace

size_t CountSetBits(std::span<const uint64_t> words) {
  return Cpu().popcnt ? CountWithPopcnt(words) : CountPortably(words);
}

}  // namespace shoal::base

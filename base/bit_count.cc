#include "base/bit_count.h"

#include <bit>

#include "base/cpu_features.h"

namespace shoal::base {
namespace {

// Inlined into each caller, so std::popcount becomes the popcnt instruction where the caller's
// target has it and the libgcc call elsewhere.
[[gnu::always_inline]] inline size_t Count(std::span<const uint64_t> words) {
  size_t n = 0;
  for (uint64_t w : words) n += static_cast<size_t>(std::popcount(w));
  return n;
}

[[gnu::target("popcnt")]] size_t CountWithPopcnt(std::span<const uint64_t> words) {
  return Count(words);
}

size_t CountPortably(std::span<const uint64_t> words) { return Count(words); }

}  // namespace

size_t CountSetBits(std::span<const uint64_t> words) {
  return Cpu().popcnt ? CountWithPopcnt(words) : CountPortably(words);
}

}  // namespace shoal::base

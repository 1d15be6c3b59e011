#include "base/bit_count.h"

#include <cstdint>
#include <random>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"

namespace shoal::base {
namespace {

size_t CountBitByBit(const std::vector<uint64_t>& words) {
  size_t n = 0;
  for (uint64_t w : words) {
    for (int b = 0; b < 64; ++b) n += (w >> b) & 1;
  }
  return n;
}

// Empty, one word, and runs of random words of every density, all-ones and single bits included:
// the same count as bit by bit (whichever path this CPU takes; SHOAL_CPU=scalar forces the
// portable one).
TEST(BitCountTest, AgreesWithCountingBitByBit) {
  EXPECT_EQ(CountSetBits({}), 0u);
  EXPECT_EQ(CountSetBits(std::vector<uint64_t>{~uint64_t{0}}), 64u);
  EXPECT_EQ(CountSetBits(std::vector<uint64_t>{uint64_t{1} << 63, 1, 0}), 2u);
  std::mt19937_64 rng(TestSeed());
  for (size_t len : {1, 2, 7, 64, 1000, 16384}) {
    for (int density = 0; density <= 4; ++density) {
      std::vector<uint64_t> words(len);
      for (uint64_t& w : words) {
        w = ~uint64_t{0};
        for (int i = 0; i < density; ++i) w &= rng();  // about 2^-density of the bits set
        if (density == 4) w = uint64_t{1} << (rng() % 64);
      }
      EXPECT_EQ(CountSetBits(words), CountBitByBit(words)) << len << " words, density " << density;
    }
  }
}

}  // namespace
}  // namespace shoal::base

// TestSeed(): the random seed of a randomized test, printed so a failure can be replayed.
// SHOAL_TEST_SEED=N fixes it. For tests only.
//
//   std::mt19937 rng(shoal::base::TestSeed());
//
// One seed per process: the first call draws it (or reads SHOAL_TEST_SEED) and every later call
// returns the same value. A test that calls it twice (data from TestSeed(), queries from
// TestSeed() + 1) therefore runs exactly as SHOAL_TEST_SEED=<the printed seed> replays it; two
// independent draws would print two seeds that no one setting can reproduce together.
#ifndef SHOAL_BASE_TEST_SEED_H_
#define SHOAL_BASE_TEST_SEED_H_

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>

namespace shoal::base {

inline uint32_t TestSeed() {
  static const uint32_t seed = [] {
    const char* fixed = std::getenv("SHOAL_TEST_SEED");
    return fixed != nullptr ? static_cast<uint32_t>(std::stoul(fixed)) : std::random_device{}();
  }();
  std::cout << "seed " << seed << " (rerun with SHOAL_TEST_SEED=" << seed << ")\n";
  return seed;
}

}  // namespace shoal::base

#endif  // SHOAL_BASE_TEST_SEED_H_

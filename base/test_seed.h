// TestSeed(): the random seed of a randomized test, printed so a failure can be replayed.
// SHOAL_TEST_SEED=N fixes it. For tests only.
//
//   std::mt19937 rng(shoal::base::TestSeed());
#ifndef SHOAL_BASE_TEST_SEED_H_
#define SHOAL_BASE_TEST_SEED_H_

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>

namespace shoal::base {

inline uint32_t TestSeed() {
  const char* fixed = std::getenv("SHOAL_TEST_SEED");
  const uint32_t seed = fixed != nullptr ? std::stoul(fixed) : std::random_device{}();
  std::cout << "seed " << seed << " (rerun with SHOAL_TEST_SEED=" << seed << ")\n";
  return seed;
}

}  // namespace shoal::base

#endif  // SHOAL_BASE_TEST_SEED_H_

// Inputs shared by the index micro-benchmarks (distance_benchmark, flat_index_benchmark).
#ifndef SHOAL_INDEX_DISTANCE_BENCHMARK_DATA_H_
#define SHOAL_INDEX_DISTANCE_BENCHMARK_DATA_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace shoal::index {

// `n` floats uniform in [0, 255) (the range of byte-valued image data), seeded.
inline std::vector<float> RandomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 255.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

}  // namespace shoal::index

#endif  // SHOAL_INDEX_DISTANCE_BENCHMARK_DATA_H_

// The selection kernels beside the distances (index/distance/distance.h): SelectIdsInWindow,
// SelectNotAbove and SmallestFirst, each against its plain loop or std::partial_sort at every
// kernel level this CPU has.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"
#include "index/distance/distance.h"
#include "index/distance/distance_internal.h"

namespace shoal::index {
namespace {

using internal::KernelLevelId;

uint32_t Seed() { return base::TestSeed(); }

// SelectIdsInWindow keeps exactly the ids whose window bit is set, in order, at every kernel
// level: ids below the window's first id and past its end are dropped (they wrap or exceed it),
// and every id count around the AVX-512 kernel's step of eight, with duplicates.
TEST(SelectTest, SelectIdsInWindowKeepsTheSetIdsInOrder) {
  std::mt19937_64 rng(Seed());
  for (size_t words : {size_t{1}, size_t{3}, size_t{40}}) {
    const uint64_t first = 64 * (rng() % 50);
    std::vector<uint64_t> window(words);
    for (uint64_t& w : window) w = rng() & rng();  // about a quarter of the bits set
    auto set = [&](uint64_t id) {
      if (id < first || id - first >= 64 * words) return false;
      return ((window[(id - first) / 64] >> ((id - first) % 64)) & 1) != 0;
    };
    for (size_t n = 0; n <= 37; ++n) {
      std::vector<uint64_t> ids(n), expected;
      for (uint64_t& id : ids) id = rng() % (first + 64 * words + 200);  // below, in, past
      if (n > 3) ids[3] = ids[1];
      for (uint64_t id : ids) {
        if (set(id)) expected.push_back(id);
      }
      for (auto level : {KernelLevelId::kScalar, KernelLevelId::kAvx512}) {
        if (!internal::LevelSupported(level)) continue;
        std::vector<uint64_t> out(n + 1, ~uint64_t{0});
        const size_t kept = level == KernelLevelId::kAvx512
                                ? internal::SelectIdsInWindowAvx512(
                                      ids.data(), n, first, window.data(), words, out.data())
                                : internal::SelectIdsInWindowScalar(
                                      ids.data(), n, first, window.data(), words, out.data());
        out.resize(kept);
        EXPECT_EQ(out, expected) << "words " << words << " n " << n << " seed " << Seed();
      }
      std::vector<uint64_t> out(n);
      out.resize(SelectIdsInWindow(ids.data(), n, first, window.data(), words, out.data()));
      EXPECT_EQ(out, expected);
    }
  }
}

// SmallestFirst puts the same keys first, in the same order, as std::partial_sort at every kernel
// level, for every `want` around the minimum kernel's limit and every length around its steps of
// eight and 32, on keys with repeats and all-ones keys and on distinct keys (where every key the
// sampled bound keeps may be one of the smallest), and keeps the keys' multiset.
TEST(SelectTest, SmallestFirstTakesWhatPartialSortTakes) {
  std::mt19937_64 rng(Seed());
  // 255 to 2,000: the sampled bound's lengths (a few wanted of many), where a sample far from its
  // keys (repeats, sorted runs) falls back.
  for (const bool distinct : {false, true}) {
    for (size_t n : {0, 1, 5, 8, 9, 31, 32, 33, 63, 238, 255, 256, 281, 700, 2000}) {
      for (size_t want : {size_t{0}, size_t{1}, size_t{6}, internal::kSmallestByMinimum,
                          internal::kSmallestByMinimum + 1, size_t{40}, size_t{87}, size_t{300}}) {
        std::vector<uint64_t> keys(n);
        for (uint64_t& k : keys) {
          k = distinct          ? rng()
              : rng() % 4 == 0  ? rng() % 8
              : rng() % 11 == 0 ? ~uint64_t{0}
                                : rng();
        }
        std::vector<uint64_t> expected = keys;
        const size_t w = std::min(want, n);
        std::partial_sort(expected.begin(), expected.begin() + w, expected.end());
        for (auto level : {KernelLevelId::kScalar, KernelLevelId::kAvx512}) {
          if (!internal::LevelSupported(level)) continue;
          std::vector<uint64_t> got = keys;
          if (level == KernelLevelId::kAvx512 && w <= internal::kSmallestByMinimum) {
            internal::SmallestFirstAvx512(got.data(), n, w);
          } else {
            SmallestFirst(got.data(), n, want);
          }
          EXPECT_TRUE(std::equal(got.begin(), got.begin() + w, expected.begin()))
              << "n " << n << " want " << want << " distinct " << distinct << " seed " << Seed();
          std::sort(got.begin(), got.end());
          std::vector<uint64_t> all = keys;
          std::sort(all.begin(), all.end());
          EXPECT_EQ(got, all);
        }
      }
    }
  }
}

// SelectNotAbove lists exactly the indexes a scan's `!(v > bound)` keeps, in order, at every
// kernel level: values equal to the bound and NaN kept, values above it and +infinity dropped,
// every length around the AVX-512 kernel's step of sixteen.
TEST(SelectTest, SelectNotAboveKeepsWhatTheScanKeeps) {
  std::mt19937 rng(Seed());
  std::uniform_real_distribution<float> uniform(-1, 1);
  const float bound = 0.25f;
  for (size_t n = 0; n <= 70; ++n) {
    std::vector<float> values(n);
    for (float& v : values) v = uniform(rng);
    if (n > 2) values[2] = bound;
    if (n > 5) values[5] = std::numeric_limits<float>::quiet_NaN();
    if (n > 17) values[17] = std::numeric_limits<float>::infinity();
    if (n > 33) values[33] = -std::numeric_limits<float>::infinity();
    std::vector<uint32_t> expected;
    for (size_t i = 0; i < n; ++i) {
      if (!(values[i] > bound)) expected.push_back(static_cast<uint32_t>(i));
    }
    for (auto level : {KernelLevelId::kScalar, KernelLevelId::kAvx512}) {
      if (!internal::LevelSupported(level)) continue;
      std::vector<uint32_t> out(n + 1, ~uint32_t{0});
      const size_t kept = level == KernelLevelId::kAvx512
                              ? internal::SelectNotAboveAvx512(values.data(), n, bound, out.data())
                              : internal::SelectNotAboveScalar(values.data(), n, bound, out.data());
      EXPECT_EQ(out[n], ~uint32_t{0}) << "wrote past n " << n;
      out.resize(kept);
      EXPECT_EQ(out, expected) << "n " << n << " seed " << Seed();
    }
    std::vector<uint32_t> out(n);
    out.resize(SelectNotAbove(values.data(), n, bound, out.data()));
    EXPECT_EQ(out, expected);
  }
}

}  // namespace
}  // namespace shoal::index

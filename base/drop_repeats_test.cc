#include "base/drop_repeats.h"

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"

namespace shoal::base {
namespace {

// The first of each id stays, in the list's order, whatever the list's length (tables of every
// size, ids that collide in the table's top bits, an id of 0).
TEST(DropRepeatsTest, KeepsTheFirstOfEachIdInOrder) {
  std::mt19937_64 rng(TestSeed());
  for (size_t n : {0, 1, 2, 7, 8, 9, 33, 100, 5000}) {
    std::vector<uint64_t> ids;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t r = rng();
      ids.push_back(r % 3 == 0 ? r % 10 : r % 2 == 0 ? (r % 50) << 58 : r >> 16);
    }
    std::vector<uint64_t> want;
    std::set<uint64_t> seen;
    for (uint64_t id : ids) {
      if (seen.insert(id).second) want.push_back(id);
    }
    DropRepeats(&ids);
    EXPECT_EQ(ids, want) << n;
  }
  std::vector<uint64_t> ids = {7, 3, 7, 9, 3, 0, 0};
  DropRepeats(&ids);
  EXPECT_EQ(ids, (std::vector<uint64_t>{7, 3, 9, 0}));
}

}  // namespace
}  // namespace shoal::base

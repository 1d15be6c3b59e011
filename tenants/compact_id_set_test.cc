#include "tenants/compact_id_set.h"

#include <random>
#include <set>

#include "base/test_seed.h"
#include "gtest/gtest.h"

namespace shoal::tenants {
namespace {

// Random inserts and erases against std::set, over ids that fill some blocks past the array
// limit (bitmaps) and leave others sparse; then drained back to empty (bitmaps become arrays).
TEST(CompactIdSetTest, AgreesWithAnOrderedSet) {
  std::mt19937_64 rng(base::TestSeed());
  CompactIdSet set;
  std::set<uint64_t> model;
  const uint64_t block = uint64_t{1} << CompactIdSet::kLowBits;
  auto random_id = [&]() -> uint64_t {
    switch (rng() % 3) {
      case 0:
        return rng() % 6000;  // block 0, dense enough to become a bitmap
      case 1:
        return 3 * block + rng() % block;  // a sparse block
      default:
        return (rng() % 1000) * block * 17 + rng() % 50;  // far apart
    }
  };
  for (int step = 0; step < 60000; ++step) {
    const uint64_t id = random_id();
    const bool add = step < 40000 ? rng() % 4 != 0 : rng() % 4 == 0;
    if (add) {
      ASSERT_EQ(set.insert(id), model.insert(id).second) << id;
    } else {
      ASSERT_EQ(set.erase(id), model.erase(id) == 1) << id;
    }
    ASSERT_EQ(set.size(), model.size());
    const uint64_t probe = random_id();
    ASSERT_EQ(set.contains(probe), model.contains(probe)) << probe;
  }
  EXPECT_EQ(set.ToVector(), std::vector<uint64_t>(model.begin(), model.end()));
  const CompactIdSet copy = set;
  EXPECT_EQ(copy.ToVector(), set.ToVector());
  for (uint64_t id : std::vector<uint64_t>(model.begin(), model.end())) ASSERT_TRUE(set.erase(id));
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.ToVector(), std::vector<uint64_t>{});
}

TEST(CompactIdSetTest, DenseIdsCostAboutTwoBytesEach) {
  CompactIdSet set;
  for (uint64_t id = 0; id < 3000; ++id) set.insert(id * 7);  // 21,000 ids span one block
  EXPECT_EQ(set.size(), 3000u);
  EXPECT_LT(set.MemoryBytes(), 3000u * 3);
  for (uint64_t id = 0; id < 3000; ++id) ASSERT_TRUE(set.contains(id * 7));
  EXPECT_FALSE(set.contains(1));
  // Past the array limit, a block is a bitmap of 8 KiB.
  for (uint64_t id = 0; id < 20000; ++id) set.insert(id);
  EXPECT_LE(set.MemoryBytes(), 8192u + 256);
  EXPECT_EQ(set.size(), 20000u + 3000 - 20000 / 7 - 1);
}

}  // namespace
}  // namespace shoal::tenants

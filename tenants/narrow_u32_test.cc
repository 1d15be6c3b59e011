#include "tenants/narrow_u32.h"

#include <map>
#include <random>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"

namespace shoal::tenants {
namespace {

// Inserts, erases and sets against a std::vector, small values first and then some of 2^16 or
// more: the vector widens in place and every value reads back.
TEST(NarrowU32Test, VectorAgreesWithAModelAcrossTheSwitch) {
  std::mt19937_64 rng(base::TestSeed());
  NarrowVector v;
  std::vector<uint32_t> model;
  for (int step = 0; step < 20000; ++step) {
    const bool big = step > 10000 && rng() % 4 == 0;
    if (model.empty() || rng() % 3 != 0) {
      const uint32_t x = big ? 65536 + static_cast<uint32_t>(rng() % 1000000)
                             : static_cast<uint32_t>(rng() % 65536);
      const size_t at = rng() % (model.size() + 1);
      v.Insert(at, x);
      model.insert(model.begin() + static_cast<ptrdiff_t>(at), x);
    } else {
      const size_t first = rng() % model.size();
      const size_t last = std::min(model.size(), first + 1 + rng() % 3);
      v.Erase(first, last);
      model.erase(model.begin() + static_cast<ptrdiff_t>(first),
                  model.begin() + static_cast<ptrdiff_t>(last));
    }
    if (!model.empty() && rng() % 5 == 0) {  // a count changing in place
      const size_t at = rng() % model.size();
      const uint32_t x = big ? 65536 + static_cast<uint32_t>(rng() % 1000000)
                             : static_cast<uint32_t>(rng() % 65536);
      v.Set(at, x);
      model[at] = x;
    }
    if (step == 10000) {
      EXPECT_FALSE(v.wide());
    }
  }
  EXPECT_TRUE(v.wide());
  ASSERT_EQ(v.size(), model.size());
  for (size_t i = 0; i < model.size(); ++i) ASSERT_EQ(v[i], model[i]) << i;
}

TEST(NarrowU32Test, ArrayShiftsAndWidens) {
  NarrowArray<9> a;
  for (size_t i = 0; i < 9; ++i) a.Set(i, static_cast<uint32_t>(1000 * i));
  a.AddFrom(3, 7, /*may_widen=*/false);
  EXPECT_FALSE(a.wide());
  EXPECT_EQ(a[2], 2000u);
  EXPECT_EQ(a[3], 3007u);
  a.AddFrom(5, 70000, /*may_widen=*/true);
  EXPECT_TRUE(a.wide());
  EXPECT_EQ(a[4], 4007u);
  EXPECT_EQ(a[8], 8007u + 70000);
  a.AddFrom(5, -70000, /*may_widen=*/true);
  EXPECT_EQ(a[8], 8007u);
}

// Ids to leaves: 2 bytes a value (and a presence bit) while the values are small; a page
// widens when it first holds a value of 2^16 or more, the others stay narrow.
TEST(NarrowU32Test, IdMapCostsTwoBytesAValueUntilAPageNeedsFour) {
  std::mt19937_64 rng(base::TestSeed());
  NarrowIdMap m;
  std::map<uint64_t, uint32_t> model;
  for (uint64_t id = 0; id < 3 * 4096; ++id) {
    const uint32_t leaf = static_cast<uint32_t>(rng() % 1000);
    m.Set(id, leaf);
    model[id] = leaf;
  }
  const size_t narrow = m.MemoryBytes();
  EXPECT_LE(narrow, 3 * (4096 * 2 + 4096 / 8 + 64)) << narrow;  // 4 bytes a value: 50,856
  m.Set(5000, 100000);                                          // page 1 widens
  model[5000] = 100000;
  EXPECT_EQ(m.MemoryBytes(), narrow + 4096 * 2);
  for (int k = 0; k < 2000; ++k) {
    const uint64_t id = rng() % (4 * 4096);
    if (rng() % 2 == 0) {
      EXPECT_EQ(m.Erase(id), model.erase(id) == 1);
    } else {
      const uint32_t leaf = static_cast<uint32_t>(rng() % 200000);
      m.Set(id, leaf);
      model[id] = leaf;
    }
  }
  ASSERT_EQ(m.size(), model.size());
  for (uint64_t id = 0; id < 4 * 4096 + 10; ++id) {
    m.Prefetch(id);  // a hint: changes nothing, also for an id past the last page
    const auto it = model.find(id);
    ASSERT_EQ(m.Find(id), it == model.end() ? std::nullopt : std::optional<uint32_t>(it->second))
        << id;
  }
}

}  // namespace
}  // namespace shoal::tenants

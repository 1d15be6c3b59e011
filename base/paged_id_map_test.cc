#include "base/paged_id_map.h"

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"

namespace shoal::base {
namespace {

// The map agrees with std::map through inserts, replacements and erases over several pages and
// far ones; ForEach lists the entries in id order; emptied pages are freed.
TEST(PagedIdMapTest, AgreesWithAnOrderedMap) {
  std::mt19937_64 rng(TestSeed());
  PagedIdMap<std::string, 4> map;
  std::map<uint64_t, std::string> model;
  for (int step = 0; step < 20000; ++step) {
    const uint64_t id = rng() % 3 == 0 ? rng() % 5000 : rng() % 100;
    const std::string v = std::to_string(rng() % 1000);
    switch (rng() % 3) {
      case 0:
        ASSERT_EQ(map.Insert(id, v), model.emplace(id, v).second);
        break;
      case 1:
        map.Set(id, v);
        model[id] = v;
        break;
      default:
        ASSERT_EQ(map.Erase(id), model.erase(id) == 1);
    }
    ASSERT_EQ(map.size(), model.size());
    const uint64_t probe = rng() % 5000;
    const std::string* got = map.Find(probe);
    ASSERT_EQ(got != nullptr, model.contains(probe));
    if (got != nullptr) {
      ASSERT_EQ(*got, model[probe]);
    }
  }
  using Entries = std::vector<std::pair<uint64_t, std::string>>;
  Entries listed;
  map.ForEach([&](uint64_t id, const std::string& v) { listed.emplace_back(id, v); });
  EXPECT_EQ(listed, Entries(model.begin(), model.end()));
  const size_t full = map.MemoryBytes();
  for (const auto& [id, v] : model) ASSERT_TRUE(map.Erase(id));
  EXPECT_TRUE(map.empty());
  EXPECT_LT(map.MemoryBytes(), full);
  EXPECT_EQ(map.Find(1), nullptr);
}

TEST(PagedIdMapTest, AnErasedEntryReadsAbsentAndComesBackEmpty) {
  PagedIdMap<std::vector<int>> map;
  ASSERT_TRUE(map.Insert(3, {1, 2}));
  ASSERT_TRUE(map.Insert(4, {5}));
  EXPECT_FALSE(map.Insert(3, {9}));
  ASSERT_TRUE(map.Erase(3));
  EXPECT_EQ(map.Find(3), nullptr);
  EXPECT_FALSE(map.Erase(3));
  ASSERT_TRUE(map.Insert(3, {}));
  EXPECT_TRUE(map.Find(3)->empty());  // not the erased value
  EXPECT_EQ(*map.Find(4), std::vector<int>{5});
}

// Contains and At read what Find reads; a Prefetch of any id (present, absent or past the last
// page) changes nothing.
TEST(PagedIdMapTest, ContainsAndAtAgreeWithFind) {
  PagedIdMap<std::string, 4> map;
  ASSERT_TRUE(map.Insert(5, "five"));
  ASSERT_TRUE(map.Insert(40, "forty"));
  for (uint64_t id : {uint64_t{0}, uint64_t{5}, uint64_t{17}, uint64_t{40}, uint64_t{1} << 40}) {
    map.Prefetch(id);
    EXPECT_EQ(map.Contains(id), map.Find(id) != nullptr) << id;
  }
  EXPECT_EQ(map.At(5), "five");
  EXPECT_EQ(&map.At(40), map.Find(40));
  EXPECT_EQ(map.size(), 2u);
}

}  // namespace
}  // namespace shoal::base

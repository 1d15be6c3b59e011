#include "base/paged_id_set.h"

#include <cstdint>
#include <vector>

#include "absl/container/btree_set.h"
#include "gtest/gtest.h"

namespace shoal::base {
namespace {

// The set agrees with an ordered set through inserts and erases spread over several pages and
// a far one, and ForEach lists its ids in order.
TEST(PagedIdSetTest, AgreesWithAnOrderedSet) {
  PagedIdSet set;
  absl::btree_set<uint64_t> oracle;
  uint64_t x = 99;
  for (int i = 0; i < 40000; ++i) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    uint64_t id = (x >> 33) % (5 << PagedIdSet::kPageBits);
    if ((x >> 20) % 17 == 0) id += uint64_t{1} << 40;  // a page far beyond the others
    if ((x >> 12) % 3 == 0) {
      EXPECT_EQ(set.Erase(id), oracle.erase(id) == 1) << id;
    } else {
      EXPECT_EQ(set.Insert(id), oracle.insert(id).second) << id;
    }
  }
  ASSERT_EQ(set.size(), oracle.size());
  for (uint64_t id : oracle) EXPECT_TRUE(set.Contains(id)) << id;
  for (uint64_t id = 0; id < (5 << PagedIdSet::kPageBits); id += 7) {
    EXPECT_EQ(set.Contains(id), oracle.contains(id)) << id;
  }
  std::vector<uint64_t> listed;
  set.ForEach([&](uint64_t id) { listed.push_back(id); });
  EXPECT_EQ(listed, std::vector<uint64_t>(oracle.begin(), oracle.end()));
}

// A page goes when its last id does, so a set emptied by erases holds only its page table; ids
// at page edges land in the right page.
TEST(PagedIdSetTest, EmptiedPagesAreFreed) {
  PagedIdSet set;
  const uint64_t edge = uint64_t{1} << PagedIdSet::kPageBits;
  for (uint64_t id : {edge - 1, edge, 3 * edge, 3 * edge + 63, 3 * edge + 64}) {
    EXPECT_TRUE(set.Insert(id));
  }
  EXPECT_FALSE(set.Insert(edge));
  EXPECT_FALSE(set.Contains(edge + 1));
  EXPECT_FALSE(set.Contains(4 * edge));  // beyond the page table
  const size_t full = set.MemoryBytes();
  for (uint64_t id : {edge - 1, edge, 3 * edge, 3 * edge + 63, 3 * edge + 64}) {
    EXPECT_TRUE(set.Erase(id));
  }
  EXPECT_FALSE(set.Erase(edge));
  EXPECT_TRUE(set.empty());
  EXPECT_LT(set.MemoryBytes(), full / 16);
  EXPECT_FALSE(set.Contains(edge));
  set.Insert(5);
  set.Clear();
  EXPECT_FALSE(set.Contains(5));
  EXPECT_EQ(set.size(), 0u);
}

}  // namespace
}  // namespace shoal::base

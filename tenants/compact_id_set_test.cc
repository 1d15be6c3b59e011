#include "tenants/compact_id_set.h"

#include <bit>
#include <random>
#include <set>
#include <span>
#include <vector>

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
    set.Prefetch(probe);  // a hint (bitmap, array or absent block): changes nothing
    ASSERT_EQ(set.contains(probe), model.contains(probe)) << probe;
    if (step % 1000 == 0) {
      // Checked together: more ids than ContainsEach's lanes, of every kind of block; an id
      // already marked found stays so.
      std::vector<uint64_t> ids;
      for (int i = 0; i < 37; ++i) ids.push_back(random_id());
      std::vector<uint8_t> found(ids.size(), 0);
      found[5] = 1;
      set.ContainsEach(ids, found.data());
      for (size_t i = 0; i < ids.size(); ++i) {
        ASSERT_EQ(found[i], i == 5 || model.contains(ids[i]) ? 1 : 0) << ids[i];
      }
    }
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

// front/back and OrInto against the ids themselves, for array and bitmap blocks and windows that
// start inside, before and after the set, cut blocks or miss them.
TEST(CompactIdSetTest, FrontBackAndWindowsAgreeWithTheIds) {
  std::mt19937_64 rng(base::TestSeed());
  const uint64_t block = uint64_t{1} << CompactIdSet::kLowBits;
  for (int round = 0; round < 20; ++round) {
    CompactIdSet set;
    std::set<uint64_t> model;
    const uint64_t dense = 5000 + rng() % 20000;  // block 1 past the array limit or not
    for (uint64_t i = 0; i < dense; ++i) {
      const uint64_t id = block + rng() % block;
      set.insert(id);
      model.insert(id);
    }
    for (int i = 0; i < 300; ++i) {
      const uint64_t id = (rng() % 4) * block + rng() % 700;  // sparse arrays in blocks 0..3
      set.insert(id);
      model.insert(id);
    }
    ASSERT_EQ(set.front(), *model.begin());
    ASSERT_EQ(set.back(), *model.rbegin());
    for (int w = 0; w < 11; ++w) {
      uint64_t first = (rng() % (5 * block)) & ~uint64_t{63};
      std::vector<uint64_t> words(1 + rng() % (3 * block / 64), 0);
      if (w == 10) {  // the whole set: every block inside the window
        first = set.front() & ~uint64_t{63};
        words.assign((set.back() - first) / 64 + 1, 0);
      }
      set.OrInto(first, words);
      const uint64_t end = first + 64 * words.size();
      size_t bits = 0;
      for (uint64_t word : words) bits += static_cast<size_t>(std::popcount(word));
      size_t in_window = 0;
      for (uint64_t id : model) {
        if (id < first || id >= end) continue;
        ++in_window;
        const uint64_t at = id - first;
        ASSERT_TRUE((words[at >> 6] >> (at & 63)) & 1) << id << " window at " << first;
      }
      ASSERT_EQ(bits, in_window) << "window at " << first;
    }
  }
}

// A set of one bitmap block hands out its words for a search to test in place; a set with an
// array block, or of more than one block, does not.
TEST(CompactIdSetTest, OneBitmapBlockIsTestedInPlace) {
  const uint64_t block = uint64_t{1} << CompactIdSet::kLowBits;
  CompactIdSet set;
  for (uint64_t id = 2 * block; id < 2 * block + 3 * CompactIdSet::kArrayMax; id += 2) {
    set.insert(id);
  }
  uint64_t first = 0;
  const std::span<const uint64_t> words = set.SingleBitmap(&first);
  ASSERT_EQ(words.size(), block / 64);
  EXPECT_EQ(first, 2 * block);
  for (uint64_t id = first; id < first + block; ++id) {
    const uint64_t at = id - first;
    ASSERT_EQ(((words[at >> 6] >> (at & 63)) & 1) != 0, set.contains(id)) << id;
  }
  CompactIdSet array;
  for (uint64_t id = 0; id < 100; ++id) array.insert(id * 3);
  EXPECT_TRUE(array.SingleBitmap(&first).empty());
  set.insert(5 * block);  // a second block
  EXPECT_TRUE(set.SingleBitmap(&first).empty());
}

// Most tenants hold a few ids in a block (one per 2^16 ids they span). A set's first block is
// in the set itself and holds up to four ids itself: a few ids in one block cost nothing beyond
// the set's 24 bytes (a 16-byte block table on the heap before), more ids their array alone.
TEST(CompactIdSetTest, AFewIdsCostTheirBlockAlone) {
  CompactIdSet set;
  for (uint64_t id : {70000, 70003, 70010}) ASSERT_TRUE(set.insert(id));
  EXPECT_EQ(set.MemoryBytes(), 0u);
  CompactIdSet copy = set;
  EXPECT_EQ(copy.ToVector(), (std::vector<uint64_t>{70000, 70003, 70010}));
  EXPECT_EQ(copy.MemoryBytes(), 0u);
  for (uint64_t id = 70020; id < 70040; ++id) ASSERT_TRUE(set.insert(id));
  // (An array grows by a quarter plus 4.)
  EXPECT_LE(set.MemoryBytes(), (set.size() * 5 / 4 + 4) * sizeof(uint16_t)) << set.MemoryBytes();
  // Ids spread over many blocks, one or two each (a small tenant of a large collection): the
  // block table on the heap; back in the set once one block is left.
  CompactIdSet spread;
  for (uint64_t b = 0; b < 16; ++b) spread.insert((b << CompactIdSet::kLowBits) + 5 * b);
  EXPECT_LE(spread.MemoryBytes(), 16u * 16 + 8 * 16) << spread.MemoryBytes();
  for (uint64_t b = 1; b < 16; ++b)
    ASSERT_TRUE(spread.erase((b << CompactIdSet::kLowBits) + 5 * b));
  EXPECT_EQ(spread.ToVector(), std::vector<uint64_t>{0});
  EXPECT_EQ(spread.MemoryBytes(), 0u);
}

// A block moves between holding its ids itself and on the heap as it grows and shrinks; the ids
// read back at every step, in the set and in copies of it.
TEST(CompactIdSetTest, BlocksMoveTheirIdsInAndOutOfThemselves) {
  std::mt19937_64 rng(base::TestSeed());
  CompactIdSet set;
  std::set<uint64_t> model;
  const uint64_t block = uint64_t{1} << CompactIdSet::kLowBits;
  for (int round = 0; round < 20; ++round) {
    const uint64_t base = (rng() % 8) * block;
    const int grow = static_cast<int>(rng() % 60);
    for (int i = 0; i < grow; ++i) {
      const uint64_t id = base + rng() % 200;
      set.Prefetch(id);  // a hint: changes nothing
      ASSERT_EQ(set.insert(id), model.insert(id).second);
    }
    for (int i = 0; i < 70; ++i) {
      const uint64_t id = base + rng() % 200;
      ASSERT_EQ(set.erase(id), model.erase(id) == 1);
    }
    ASSERT_EQ(set.ToVector(), std::vector<uint64_t>(model.begin(), model.end()));
    const CompactIdSet copy = set;
    ASSERT_EQ(copy.ToVector(), set.ToVector());
    for (uint64_t id : model) ASSERT_TRUE(copy.contains(id));
  }
}

}  // namespace
}  // namespace shoal::tenants

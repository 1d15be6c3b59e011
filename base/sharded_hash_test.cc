#include "base/sharded_hash.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"

namespace shoal::base {
namespace {

// The map agrees with an absl::flat_hash_map through inserts, replacements and erases, and its
// size counts only what is there.
TEST(ShardedHashMapTest, AgreesWithAFlatHashMap) {
  ShardedHashMap<uint64_t, std::string> map;
  absl::flat_hash_map<uint64_t, std::string> oracle;
  uint64_t x = 12345;
  for (int i = 0; i < 20000; ++i) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    const uint64_t k = (x >> 33) % 5000;
    switch ((x >> 20) % 4) {
      case 0:
        EXPECT_EQ(map.Insert(k, std::to_string(i)),
                  oracle.try_emplace(k, std::to_string(i)).second);
        break;
      case 1:
        map.Set(k, std::to_string(-i));
        oracle.insert_or_assign(k, std::to_string(-i));
        break;
      default:
        EXPECT_EQ(map.Erase(k), oracle.erase(k) == 1);
    }
  }
  EXPECT_EQ(map.size(), oracle.size());
  for (uint64_t k = 0; k < 5000; ++k) {
    const std::string* v = map.Find(k);
    auto it = oracle.find(k);
    ASSERT_EQ(v != nullptr, it != oracle.end()) << k;
    EXPECT_EQ(map.Contains(k), it != oracle.end());
    if (v != nullptr) {
      EXPECT_EQ(*v, it->second);
    }
  }
  size_t seen = 0;
  map.ForEach([&](const auto& e) {
    ++seen;
    EXPECT_EQ(oracle.at(e.first), e.second);
  });
  EXPECT_EQ(seen, oracle.size());
  EXPECT_GT(map.MemoryBytes(), 0u);
  map.Clear();
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(map.Find(1), nullptr);
}

// Sequential ids (as the Collection allocates them) spread over the shards, so no shard holds
// more than a few times its share: a shard's rehash stays a small fraction of the whole.
TEST(ShardedHashSetTest, SequentialIdsSpreadOverTheShards) {
  ShardedHashSet<uint64_t> set;
  constexpr uint64_t kN = 1 << 16;
  for (uint64_t id = 0; id < kN; ++id) EXPECT_TRUE(set.Insert(id));
  EXPECT_FALSE(set.Insert(7));
  EXPECT_EQ(set.size(), kN);
  // 256 entries per shard on average; by chance (binomial, sd 16) none should pass twice that.
  EXPECT_LE(set.LargestShard(), 2 * kN / 256);
  EXPECT_GE(set.LargestShard(), kN / 256);
  for (uint64_t id = 0; id < kN; id += 2) EXPECT_TRUE(set.Erase(id));
  EXPECT_FALSE(set.Erase(0));
  EXPECT_EQ(set.size(), kN / 2);
  EXPECT_TRUE(set.Contains(1));
  EXPECT_FALSE(set.Contains(2));
}

}  // namespace
}  // namespace shoal::base

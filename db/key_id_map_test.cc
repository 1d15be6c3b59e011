#include "db/key_id_map.h"

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"

namespace shoal::db {
namespace {

// Integer and string keys through inserts, replacements and erases agree with a map of Key;
// an integer key and the string of its digits are different keys.
TEST(KeyIdMapTest, AgreesWithAMapOfKeys) {
  KeyIdMap map;
  map.Prefetch(Key{uint64_t{1}});  // an empty map has no shard to ask for
  map.Prefetch(Key{std::string("1")});
  absl::flat_hash_map<Key, uint64_t> oracle;
  uint64_t x = 12345;
  auto key_of = [](uint64_t r) -> Key {
    const uint64_t n = (r >> 1) % 3000;
    if (r & 1) return Key{std::to_string(n)};
    return Key{n};
  };
  for (uint64_t i = 1; i <= 30000; ++i) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    const Key k = key_of(x >> 33);
    switch ((x >> 20) % 4) {
      case 0:
        EXPECT_EQ(map.Insert(k, i), oracle.try_emplace(k, i).second);
        break;
      case 1:
        map.Set(k, i);
        oracle.insert_or_assign(k, i);
        break;
      default:
        EXPECT_EQ(map.Erase(k), oracle.erase(k) == 1);
    }
  }
  EXPECT_EQ(map.size(), oracle.size());
  for (uint64_t r = 0; r < 6000; ++r) {
    const Key k = key_of(r);
    map.Prefetch(k);
    const uint64_t* id = map.Find(k);
    const auto it = oracle.find(k);
    ASSERT_EQ(id != nullptr, it != oracle.end()) << r;
    if (id != nullptr) {
      EXPECT_EQ(*id, it->second) << r;
    }
  }
  EXPECT_GT(map.MemoryBytes(), 0u);
}

TEST(KeyIdMapTest, AnIntegerAndItsDigitsAreTwoKeys) {
  KeyIdMap map;
  EXPECT_TRUE(map.Insert(Key{uint64_t{7}}, 1));
  EXPECT_EQ(map.Find(Key{std::string("7")}), nullptr);
  EXPECT_TRUE(map.Insert(Key{std::string("7")}, 2));
  EXPECT_FALSE(map.Insert(Key{uint64_t{7}}, 3));
  EXPECT_EQ(*map.Find(Key{uint64_t{7}}), 1u);
  EXPECT_EQ(*map.Find(Key{std::string("7")}), 2u);
  EXPECT_EQ(map.size(), 2u);
  EXPECT_TRUE(map.Erase(Key{uint64_t{7}}));
  EXPECT_EQ(map.Find(Key{uint64_t{7}}), nullptr);
  EXPECT_EQ(*map.Find(Key{std::string("7")}), 2u);
  EXPECT_EQ(map.size(), 1u);
}

}  // namespace
}  // namespace shoal::db

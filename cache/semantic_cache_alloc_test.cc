// A warm lookup allocates only its answer: the query, the shard key, the candidates and the
// hit's row are read into the thread's reused buffers (issue 17: lookup p99 at 1M entries).
// Counts this thread's operator new calls around one lookup (a replacement operator new in
// this test binary only).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <new>
#include <random>

#include "base/test_seed.h"
#include "cache/cache_catalog.h"

namespace {
thread_local uint64_t allocations = 0;  // operator new calls of this thread
}  // namespace

void* operator new(size_t n) {
  ++allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace shoal::cache {
namespace {

constexpr uint32_t kDim = 16;

std::vector<float> Random(std::mt19937_64& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> v(kDim);
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(SemanticCacheAllocTest, AWarmLookupAllocatesOnlyItsAnswer) {
  std::string dir = ::testing::TempDir() + "semantic_cache_alloc_XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  {
    auto store = storage::RecordStore::Open(dir, {});
    ASSERT_TRUE(store.ok()) << store.status();
    FakeClock clock;
    auto catalog = CacheCatalog::Open(store->get(), &clock);
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    // A name and partition past the short-string buffer, so that copies of them would allocate.
    const std::string name = "a-cache-name-longer-than-sso";
    ASSERT_TRUE((*catalog)->Create({.name = name, .dimension = kDim}).ok());
    std::shared_ptr<SemanticCache> cache = *(*catalog)->Find(name);
    ASSERT_TRUE(cache->SetPolicy("", {.threshold = 0.999, .target_false_hit_rate = 0}).ok());
    const CachePartition partition{.tenant = "a-tenant-name-longer-than-sso",
                                   .model = "a-model-name-longer-than-sso"};
    std::mt19937_64 rng(base::TestSeed());
    std::vector<float> stored;
    for (int i = 0; i < 5000; ++i) {  // past cluster_at (4,096): a clustered shard
      CacheStoreRequest s{.lookup = {.partition = partition,
                                     .category = "a-category-longer-than-sso",
                                     .embedding = Random(rng)},
                          .response = std::string(300, 'r')};
      if (i == 0) stored = s.lookup.embedding;
      ASSERT_TRUE(cache->Store(s, /*sync=*/false).ok());
    }
    ASSERT_TRUE(cache->WaitForIndexBuilds().ok());
    CacheLookupRequest miss{
        .partition = partition, .category = "a-category-longer-than-sso", .embedding = Random(rng)};
    CacheLookupRequest hit = miss;
    hit.embedding = stored;
    for (int warm = 0; warm < 3; ++warm) {
      ASSERT_TRUE(cache->Lookup(miss).ok());
      ASSERT_TRUE(cache->Lookup(hit).ok());
    }
    uint64_t before = allocations;
    absl::StatusOr<CacheLookupResult> m = cache->Lookup(miss);
    const uint64_t miss_allocations = allocations - before;
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_FALSE(m->hit);
    EXPECT_EQ(miss_allocations, 0u);
    before = allocations;
    absl::StatusOr<CacheLookupResult> h = cache->Lookup(hit);
    const uint64_t hit_allocations = allocations - before;
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_TRUE(h->hit);
    EXPECT_EQ(h->response, std::string(300, 'r'));
    // The response itself, plus what RocksDB's Get allocates on its own (not ours to remove).
    EXPECT_LE(hit_allocations, 3u);
    std::printf("allocations per warm lookup: miss %llu, hit %llu\n",
                static_cast<unsigned long long>(miss_allocations),
                static_cast<unsigned long long>(hit_allocations));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shoal::cache

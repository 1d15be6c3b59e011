// CacheCatalog: the background expiry sweep, and quarantine of a cache whose rows are damaged.
#include "cache/cache_catalog.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "absl/time/clock.h"
#include "cache/cache_rows.h"

namespace shoal::cache {
namespace {

class CacheCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "cache_catalog_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto store = storage::RecordStore::Open(dir_, {});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    Reopen();
  }
  void TearDown() override {
    catalog_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    catalog_.reset();
    auto catalog = CacheCatalog::Open(store_.get(), &clock_);
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    catalog_ = *std::move(catalog);
  }
  uint64_t Put(std::string_view cache, std::vector<float> v, std::string response) {
    auto c = catalog_->Find(cache);
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) return 0;
    auto id =
        (*c)->Store({.lookup = {.partition = {.model = "m"}, .embedding = v}, .response = response},
                    /*sync=*/true);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or(0);
  }

  std::string dir_;
  FakeClock clock_;
  std::unique_ptr<storage::RecordStore> store_;
  std::unique_ptr<CacheCatalog> catalog_;
};

TEST_F(CacheCatalogTest, BackgroundSweepRemovesExpiredEntriesWithoutAnyCall) {
  ASSERT_TRUE(catalog_->Create({.name = "c", .dimension = 2}).ok());
  std::shared_ptr<SemanticCache> c = *catalog_->Find("c");
  ASSERT_TRUE(c->SetPolicy("", {.ttl_seconds = 1, .target_false_hit_rate = 0}).ok());
  Put("c", {1, 0}, "x");
  clock_.AdvanceSeconds(2);  // past the TTL; no lookup, store or stats call follows
  ASSERT_EQ(c->Info().entries, 1u);
  catalog_->StartSweeper(absl::Milliseconds(1));
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  // A sweep counts once it returns: the entry can be gone a moment before the count moves.
  while ((c->Info().entries != 0 || catalog_->BackgroundSweeps() == 0) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(c->Info().entries, 0u);
  EXPECT_GT(catalog_->BackgroundSweeps(), 0u);
  // Its rows are gone too: a reopen finds nothing to load.
  Reopen();  // also stops the old sweeper (the destructor joins it)
  EXPECT_EQ((*catalog_->Find("c"))->Info().entries, 0u);
}

TEST_F(CacheCatalogTest, DamagedRowQuarantinesOnlyItsCache) {
  ASSERT_TRUE(catalog_->Create({.name = "good", .dimension = 2}).ok());
  ASSERT_TRUE(catalog_->Create({.name = "bad", .dimension = 2}).ok());
  Put("good", {1, 0}, "fine");
  const uint64_t id = Put("bad", {1, 0}, "doomed");
  const std::vector<storage::RecordStore::CacheWrite> junk{
      {.key = EntryKey("bad", id), .value = "garbage"}};
  ASSERT_TRUE(store_->WriteCacheRows(junk, /*sync=*/true).ok());
  Reopen();  // does not fail
  auto bad = catalog_->Find("bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss) << bad.status();
  EXPECT_NE(bad.status().message().find("quarantined"), std::string_view::npos);
  auto good = catalog_->Find("good");
  ASSERT_TRUE(good.ok()) << good.status();
  auto hit = (*good)->Lookup({.partition = {.model = "m"}, .embedding = {1, 0}});
  ASSERT_TRUE(hit.ok()) << hit.status();
  EXPECT_TRUE(hit->hit);
  EXPECT_EQ(hit->response, "fine");
  std::vector<CacheInfo> list = catalog_->List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].spec.name, "bad");
  EXPECT_NE(list[0].quarantine, "");
  EXPECT_EQ(list[1].quarantine, "");
  EXPECT_EQ(catalog_->Create({.name = "bad", .dimension = 2}).code(),
            absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(catalog_->Drop("bad").ok());
  Reopen();
  EXPECT_EQ(catalog_->List().size(), 1u);
  EXPECT_TRUE(catalog_->Create({.name = "bad", .dimension = 2}).ok());
}

}  // namespace
}  // namespace shoal::cache

// The semantic caches through the public DB API (db/db_caches.cc over cache/): lifecycle,
// errors, and what a reopen keeps. The engine's own behaviour is in cache/*_test.cc.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "cache/cache_rows.h"
#include "cache/clock.h"
#include "db/db_impl.h"
#include "shoal/db.h"
#include "shoal/verify.h"
#include "storage/records/record_store.h"

namespace shoal {
namespace {

class CachesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "caches_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    Open();
  }
  void TearDown() override {
    db_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Open() {
    db_.reset();
    auto db = db::DBImpl::Open(dir_, Options{}, {.cache_clock = &clock_});
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
  }
  static CacheLookupRequest Q(std::vector<float> v, std::string prompt, std::string tenant = "t") {
    return {.partition = {.tenant = tenant, .model = "m"}, .embedding = v, .prompt = prompt};
  }

  std::string dir_;
  cache::FakeClock clock_;
  std::unique_ptr<DB> db_;
};

TEST_F(CachesTest, CreateListDrop) {
  ASSERT_TRUE(db_->CreateCache({.name = "b", .dimension = 4}).ok());
  ASSERT_TRUE(db_->CreateCache({.name = "a", .dimension = 2, .metric = Metric::kL2}).ok());
  EXPECT_EQ(db_->CreateCache({.name = "a", .dimension = 2}).code(),
            absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(db_->SetCachePolicy("a", "code", {.threshold = 0.95}).ok());
  auto list = db_->ListCaches();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].spec.name, "a");
  EXPECT_EQ((*list)[0].spec.metric, Metric::kL2);
  EXPECT_EQ((*list)[0].categories, std::vector<std::string>{"code"});
  ASSERT_TRUE(db_->DropCache("b").ok());
  EXPECT_EQ(db_->DropCache("b").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(db_->CacheLookup("b", Q({1, 0, 0, 0}, "x")).status().code(),
            absl::StatusCode::kNotFound);
  Open();
  list = db_->ListCaches();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ(db_->GetCachePolicy("a", "code")->threshold, 0.95);
  EXPECT_EQ(db_->GetCachePolicy("a", "other")->threshold, CachePolicy{}.threshold);
}

TEST_F(CachesTest, ReopenKeepsEveryAcknowledgedStoreAndServesNoExpiredEntry) {
  ASSERT_TRUE(db_->CreateCache({.name = "c", .dimension = 2}).ok());
  ASSERT_TRUE(db_->SetCachePolicy("c", "", {.threshold = 0.99, .ttl_seconds = 100}).ok());
  std::vector<uint64_t> ids;
  for (int i = 0; i < 50; ++i) {
    const float a = 0.03f * static_cast<float>(i);
    auto id = db_->CacheStore("c",
                              {.lookup = Q({std::cos(a), std::sin(a)}, absl::StrCat("p", i)),
                               .response = absl::StrCat("r", i)},
                              {.sync = i % 2 == 0});
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
    clock_.AdvanceMicros(1'000'000);  // entry i is stored at t0 + i s
  }
  Open();
  for (int i = 0; i < 50; ++i) {
    auto r = db_->CacheLookup("c", Q({0, 0.5f}, absl::StrCat("p", i)));
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->hit && r->exact) << i;
    EXPECT_EQ(r->response, absl::StrCat("r", i));
    EXPECT_EQ(r->entry_id, ids[i]);
  }
  clock_.AdvanceMicros(75'000'000);  // now t0 + 125 s: entries 0..25 are past 100 s
  Open();
  for (int i = 0; i < 50; ++i) {
    auto r = db_->CacheLookup("c", Q({0, 0.5f}, absl::StrCat("p", i)));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->hit, i > 25) << i;
  }
  auto stats = db_->GetCacheStats("c");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->total.entries, 24u);
  EXPECT_EQ(stats->total.hits, 24u);
  EXPECT_EQ(stats->total.misses, 26u);
  ASSERT_EQ(stats->partitions.size(), 1u);
  EXPECT_EQ(stats->partitions[0].partition.tenant, "t");
  EXPECT_EQ(stats->latency_counts.size(), stats->latency_bounds_us.size() + 1);
}

TEST_F(CachesTest, TenantsAreHardPartitions) {
  ASSERT_TRUE(db_->CreateCache({.name = "c", .dimension = 2}).ok());
  ASSERT_TRUE(db_->SetCachePolicy("c", "", {.threshold = 0}).ok());
  ASSERT_TRUE(db_->CacheStore("c", {.lookup = Q({1, 0}, "my salary", "alice"), .response = "$1"},
                              {.sync = true})
                  .ok());
  auto r = db_->CacheLookup("c", Q({1, 0}, "my salary", "bob"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->hit);
  EXPECT_EQ(db_->ReportModelLoad("m", -1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(db_->CacheInvalidate("c", {.tenant = "alice", .dry_run = true}).value_or(0), 1u);
  EXPECT_EQ(db_->CacheInvalidate("c", {.tenant = "alice", .dry_run = false}).value_or(0), 1u);
  EXPECT_EQ(db_->CacheFeedback("c", {.entry_id = 1}).code(), absl::StatusCode::kNotFound);
}

TEST_F(CachesTest, DamagedCacheRowIsReportedByVerifyAndQuarantinedAtOpen) {
  ASSERT_TRUE(db_->CreateCache({.name = "good", .dimension = 2}).ok());
  ASSERT_TRUE(db_->CreateCache({.name = "bad", .dimension = 2}).ok());
  ASSERT_TRUE(db_->CacheStore("good", {.lookup = Q({1, 0}, "a"), .response = "A"}, {}).ok());
  auto id = db_->CacheStore("bad", {.lookup = Q({1, 0}, "b"), .response = "B"}, {});
  ASSERT_TRUE(id.ok()) << id.status();
  VerifyReport clean;
  ASSERT_TRUE(db_->Verify("", &clean).ok());
  EXPECT_EQ(clean.caches, 2u);
  EXPECT_EQ(clean.cache_entries, 2u);
  db_.reset();
  {
    auto store = storage::RecordStore::Open(dir_ + "/rocksdb", {});
    ASSERT_TRUE(store.ok()) << store.status();
    const std::vector<storage::RecordStore::CacheWrite> junk{
        {.key = cache::EntryKey("bad", *id), .value = "junk"}};
    ASSERT_TRUE((*store)->WriteCacheRows(junk, /*sync=*/true).ok());
  }
  auto offline = VerifyDatabase(dir_);
  ASSERT_TRUE(offline.ok()) << offline.status();
  ASSERT_EQ(offline->problems.size(), 1u);
  EXPECT_NE(offline->problems[0].find("cache 'bad'"), std::string::npos) << offline->problems[0];
  Open();  // does not fail: "bad" is quarantined, "good" serves
  auto hit = db_->CacheLookup("good", Q({1, 0}, "a"));
  ASSERT_TRUE(hit.ok()) << hit.status();
  EXPECT_TRUE(hit->hit);
  EXPECT_EQ(db_->CacheLookup("bad", Q({1, 0}, "b")).status().code(), absl::StatusCode::kDataLoss);
  VerifyReport online;
  EXPECT_EQ(db_->Verify("", &online).code(), absl::StatusCode::kDataLoss);
  ASSERT_TRUE(db_->DropCache("bad").ok());
  VerifyReport after;
  EXPECT_TRUE(db_->Verify("", &after).ok());
}

}  // namespace
}  // namespace shoal

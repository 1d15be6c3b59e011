// Count, Scroll and DeleteByFilter through the public API (db/collection_scan.cc), and search
// hits with attributes: empty filter, filters against a brute-force model, paging across
// concurrent upserts and deletes, tenants, bounds and bad tokens, durability, and a power loss in
// the middle of a DeleteByFilter (storage/io/fault_injection.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "db/db_impl.h"
#include "shoal/db.h"
#include "shoal/filter.h"
#include "storage/io/fault_injection.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

Record R(Key key, int64_t bucket, bool hot = false) {
  Record r;
  r.key = std::move(key);
  r.vector = {static_cast<float>(bucket), 1.0f};
  r.attributes["bucket"] = bucket;
  if (hot) r.tags.push_back("hot");
  return r;
}

class ScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "scan_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    Reopen();
    ASSERT_TRUE(db_->CreateCollection({"c", 2, Metric::kL2}).ok());
  }
  void TearDown() override {
    db_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    db_.reset();
    auto db = DB::Open(dir_, Options{});
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
  }
  // Keys 0..n-1 with bucket = key % 10 and tag "hot" on every third key.
  void Fill(uint64_t n) {
    std::vector<Record> batch;
    for (uint64_t k = 0; k < n; ++k) {
      batch.push_back(R(k, static_cast<int64_t>(k % 10), k % 3 == 0));
      if (batch.size() == 1000 || k + 1 == n) {
        ASSERT_TRUE(db_->Upsert("c", batch, {}).ok());
        batch.clear();
      }
    }
  }
  // Every page from the first, with `limit`; the keys in order of arrival.
  std::vector<Key> ScrollAll(const Filter* filter, uint32_t limit, const std::string& tenant = "",
                             size_t* pages = nullptr) {
    std::vector<Key> keys;
    ScrollOptions scroll{.limit = limit};
    ReadOptions read{.tenant = tenant};
    size_t n = 0;
    do {
      auto page = db_->Scroll("c", filter, scroll, read);
      EXPECT_TRUE(page.ok()) << page.status();
      if (!page.ok()) break;
      EXPECT_LE(page->records.size(), limit);
      for (const Record& r : page->records) keys.push_back(r.key);
      scroll.page_token = page->next_page_token;
      ++n;
    } while (!scroll.page_token.empty());
    if (pages != nullptr) *pages = n;
    return keys;
  }
  std::string dir_;
  std::unique_ptr<DB> db_;
};

TEST_F(ScanTest, EmptyFilterCountsScrollsAndDeletesEverythingInKeyOrder) {
  Fill(2500);
  ASSERT_TRUE(db_->Upsert("c", std::vector{R("b", 1), R("a", 2), R("ab", 3)}, {}).ok());
  EXPECT_EQ(*db_->Count("c", nullptr, {}), 2503u);
  size_t pages = 0;
  const std::vector<Key> keys = ScrollAll(nullptr, 300, "", &pages);
  ASSERT_EQ(keys.size(), 2503u);
  EXPECT_EQ(pages, 9u);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_EQ(keys.front(), Key(uint64_t{0}));
  EXPECT_EQ(keys[2500], Key(std::string("a")));  // uint64 keys first, then strings by bytes
  EXPECT_EQ(keys.back(), Key(std::string("b")));
  EXPECT_EQ(*db_->DeleteByFilter("c", nullptr, {}), 2503u);
  EXPECT_EQ(*db_->Count("c", nullptr, {}), 0u);
  auto page = db_->Scroll("c", nullptr, {}, {});
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->records.empty());
  EXPECT_EQ(page->next_page_token, "");
}

TEST_F(ScanTest, FiltersAgreeWithTheRecordsAndPagesCarryWhatWasAskedFor) {
  Fill(1000);
  const Filter hot_low = And({HasTag("hot"), Range("bucket", 0, 4)});
  std::vector<Key> want;
  for (uint64_t k = 0; k < 1000; ++k) {
    if (k % 3 == 0 && k % 10 <= 4) want.push_back(k);
  }
  EXPECT_EQ(*db_->Count("c", &hot_low, {}), want.size());
  EXPECT_EQ(ScrollAll(&hot_low, 7), want);
  const Filter not_hot = Not(HasTag("hot"));
  EXPECT_EQ(*db_->Count("c", &not_hot, {}), 1000u - 334u);

  ScrollOptions bare{.limit = 2, .with_vectors = false, .with_attributes = false};
  auto page = db_->Scroll("c", &hot_low, bare, {});
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->records.size(), 2u);
  EXPECT_TRUE(page->records[0].vector.empty());
  EXPECT_TRUE(page->records[0].attributes.empty());
  EXPECT_TRUE(page->records[0].tags.empty());
  ScrollOptions full{.limit = 2, .with_vectors = true, .with_attributes = true};
  page = db_->Scroll("c", &hot_low, full, {});
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->records[1].key, Key(uint64_t{3}));
  EXPECT_EQ(page->records[1].vector, (std::vector<float>{3, 1}));
  EXPECT_EQ(std::get<int64_t>(page->records[1].attributes.at("bucket")), 3);
  EXPECT_EQ(page->records[1].tags, std::vector<std::string>{"hot"});

  EXPECT_EQ(*db_->DeleteByFilter("c", &hot_low, {}), want.size());
  EXPECT_EQ(*db_->Count("c", &hot_low, {}), 0u);
  EXPECT_EQ(*db_->Count("c", nullptr, {}), 1000u - want.size());
}

TEST_F(ScanTest, BadLimitsTokensAndFiltersAreInvalidArgumentNamingTheField) {
  Fill(10);
  for (uint32_t limit : {0u, kMaxScrollLimit + 1}) {
    absl::Status s = db_->Scroll("c", nullptr, {.limit = limit}, {}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("limit"));
  }
  EXPECT_TRUE(db_->Scroll("c", nullptr, {.limit = kMaxScrollLimit}, {}).ok());
  for (const char* token : {"garbage", "s1.", "s1.!!!", "s1.AAAA", "s2.AA"}) {
    absl::Status s = db_->Scroll("c", nullptr, {.page_token = token}, {}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << token;
    EXPECT_THAT(s.message(), HasSubstr("page_token")) << token;
  }
  const Filter bad = Range("bucket", 5, 1);
  for (absl::Status s :
       {db_->Count("c", &bad, {}).status(), db_->Scroll("c", &bad, {}, {}).status(),
        db_->DeleteByFilter("c", &bad, {}).status()}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("filter"));
  }
  EXPECT_EQ(*db_->Count("c", nullptr, {}), 10u);  // the bad delete deleted nothing
  EXPECT_EQ(db_->Count("nope", nullptr, {}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(db_->Count("c", nullptr, {.tenant = "zz"}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(ScanTest, ATokenResumesAfterItsKeyEvenWhenThatKeyIsGone) {
  Fill(100);
  auto first = db_->Scroll("c", nullptr, {.limit = 10}, {});
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->records.back().key, Key(uint64_t{9}));
  const std::vector<Key> gone = {uint64_t{9}, uint64_t{10}};
  ASSERT_EQ(*db_->Delete("c", gone, {}), 2u);
  ASSERT_TRUE(db_->Upsert("c", std::vector{R(uint64_t{5}, 7)}, {}).ok());  // behind the token
  Reopen();  // a token outlives the process
  auto next = db_->Scroll("c", nullptr, {.limit = 10, .page_token = first->next_page_token}, {});
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_EQ(next->records.size(), 10u);
  EXPECT_EQ(next->records.front().key, Key(uint64_t{11}));
}

// Stable keys (never touched) come back exactly once while other keys are upserted, rewritten and
// deleted between (and during) pages; keys arrive strictly increasing, so nothing repeats.
TEST_F(ScanTest, PagingAcrossConcurrentUpsertsAndDeletesReturnsEveryStableKeyOnce) {
  Fill(3000);  // stable: keys % 4 == 0; the writer touches the rest
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    uint64_t round = 0;
    while (!stop.load()) {
      std::vector<Record> put;
      std::vector<Key> del;
      uint64_t fresh = 100000 + round * 100;
      for (uint64_t k = 1 + round % 3; k < 3000; k += 40) {
        if (round % 2 == 0) {
          put.push_back(R(k, static_cast<int64_t>(round % 10)));
        } else {
          del.push_back(k);
        }
        put.push_back(R(fresh++, 1));
      }
      EXPECT_TRUE(db_->Upsert("c", put, {}).ok());
      if (!del.empty()) {
        EXPECT_TRUE(db_->Delete("c", del, {}).ok());
      }
      ++round;
    }
  });
  for (int pass = 0; pass < 3; ++pass) {
    const std::vector<Key> keys = ScrollAll(nullptr, 97);
    for (size_t i = 1; i < keys.size(); ++i) ASSERT_LT(keys[i - 1], keys[i]);
    size_t stable = 0;
    for (const Key& k : keys) {
      const auto* u = std::get_if<uint64_t>(&k);
      if (u != nullptr && *u < 3000 && *u % 4 == 0) ++stable;
    }
    EXPECT_EQ(stable, 750u);
  }
  stop = true;
  writer.join();
}

TEST_F(ScanTest, TenantsCountScrollAndDeleteOnlyWhatTheyMay) {
  ASSERT_TRUE(db_->CreateTenant("c", {"a", {}}).ok());
  ASSERT_TRUE(db_->CreateTenant("c", {"b", {}}).ok());
  ASSERT_TRUE(
      db_->Upsert("c", std::vector{R(uint64_t{1}, 1), R(uint64_t{2}, 2)}, {.tenant = "a"}).ok());
  ASSERT_TRUE(db_->Upsert("c", std::vector{R(uint64_t{3}, 3)}, {.tenant = "b"}).ok());
  ASSERT_TRUE(db_->Upsert("c", std::vector{R(uint64_t{4}, 4)}, {}).ok());
  const std::vector<Key> three = {uint64_t{3}};
  ASSERT_TRUE(db_->Grant("c", "a", three, {}).ok());
  EXPECT_EQ(*db_->Count("c", nullptr, {.tenant = "a"}), 3u);
  EXPECT_EQ(*db_->Count("c", nullptr, {.tenant = "b"}), 1u);
  const Filter high = Range("bucket", 2, 10);
  EXPECT_EQ(*db_->Count("c", &high, {.tenant = "a"}), 2u);
  EXPECT_EQ(ScrollAll(nullptr, 1, "a"), (std::vector<Key>{uint64_t{1}, uint64_t{2}, uint64_t{3}}));
  EXPECT_EQ(ScrollAll(nullptr, 5, "b"), (std::vector<Key>{uint64_t{3}}));
  // a owns 1 and 2; 3 was only granted to it and stays.
  EXPECT_EQ(*db_->DeleteByFilter("c", nullptr, {.tenant = "a"}), 2u);
  EXPECT_EQ(ScrollAll(nullptr, 5), (std::vector<Key>{uint64_t{3}, uint64_t{4}}));
  EXPECT_EQ(*db_->DeleteByFilter("c", nullptr, {.tenant = "b"}), 1u);
  EXPECT_EQ(db_->DeleteByFilter("c", nullptr, {.tenant = "zz"}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(*db_->Count("c", nullptr, {}), 1u);
}

TEST_F(ScanTest, DeleteByFilterIsDurableAcrossBatches) {
  Fill(4000);
  const Filter low = Range("bucket", 0, 7.5);  // 3200 records: four batches
  EXPECT_EQ(*db_->DeleteByFilter("c", &low, {.sync = true}), 3200u);
  Reopen();
  EXPECT_EQ(*db_->Count("c", nullptr, {}), 800u);
  EXPECT_EQ(*db_->Count("c", &low, {}), 0u);
  const std::vector<Key> probe = {uint64_t{0}, uint64_t{8}, uint64_t{19}};
  auto got = *db_->Get("c", probe);
  EXPECT_FALSE(got[0].has_value());
  EXPECT_TRUE(got[1].has_value());
  EXPECT_TRUE(got[2].has_value());
  VerifyReport report;
  EXPECT_TRUE(db_->Verify("c", &report).ok());
}

TEST_F(ScanTest, SearchHitsCarryAttributesOnlyWhenAsked) {
  Fill(50);
  const std::vector<float> q = {3, 1};
  auto plain = db_->Search("c", q, {.k = 3});
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE((*plain)[0][0].attributes.empty());
  EXPECT_TRUE((*plain)[0][0].vector.empty());
  SearchParams p{.k = 3};
  p.with_attributes = true;
  p.with_vectors = true;
  const std::vector<float> two = {3, 1, 6, 1};
  auto hits = db_->Search("c", two, p);
  ASSERT_TRUE(hits.ok()) << hits.status();
  ASSERT_EQ(hits->size(), 2u);
  for (size_t qi = 0; qi < 2; ++qi) {
    ASSERT_EQ((*hits)[qi].size(), 3u);
    for (const Hit& h : (*hits)[qi]) {
      const uint64_t key = std::get<uint64_t>(h.key);
      EXPECT_EQ(std::get<int64_t>(h.attributes.at("bucket")), static_cast<int64_t>(key % 10));
      EXPECT_EQ(h.tags.empty(), key % 3 != 0);
      EXPECT_EQ(h.vector, (std::vector<float>{static_cast<float>(key % 10), 1}));
    }
  }
  EXPECT_EQ((*hits)[0][0].distance, (*plain)[0][0].distance);
}

// A power loss at each write or sync of a DeleteByFilter: after reopening, the batches committed
// before it are deleted, the others whole, and the error said how many were deleted.
TEST(ScanCrashTest, DeleteByFilterLeavesWholeBatchesAfterAPowerLoss) {
  constexpr uint64_t kN = 3000;  // 2400 match: three batches
  const Filter low = Range("bucket", 0, 7);
  bool finished = false;
  int partial = 0;  // losses after some batches but not all
  for (uint64_t ops = 0; !finished && ops < 40; ++ops) {
    std::string tmpl = ::testing::TempDir() + "scan_crash_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    const std::string dir = tmpl;
    storage::FaultInjectingFileSystem fs;
    db::StorageHooks hooks{&fs, fs.rocksdb_env()};
    auto db = db::DBImpl::Open(dir, Options{}, hooks);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->CreateCollection({"c", 2, Metric::kL2}).ok());
    std::vector<Record> all;
    for (uint64_t k = 0; k < kN; ++k) all.push_back(R(k, static_cast<int64_t>(k % 10)));
    ASSERT_TRUE((*db)->Upsert("c", all, {.sync = true}).ok());
    fs.PowerOffAfter(ops);
    absl::StatusOr<uint64_t> deleted = (*db)->DeleteByFilter("c", &low, {.sync = true});
    finished = deleted.ok();
    db->reset();
    ASSERT_TRUE(fs.DropUnsyncedData().ok());
    auto reopened = db::DBImpl::Open(dir, Options{}, hooks);
    ASSERT_TRUE(reopened.ok()) << reopened.status();
    const uint64_t left = *(*reopened)->Count("c", &low, {});
    EXPECT_EQ(*(*reopened)->Count("c", nullptr, {}), kN - 2400 + left) << "ops " << ops;
    const uint64_t gone = 2400 - left;
    partial += gone > 0 && gone < 2400;
    EXPECT_EQ(gone % kDeleteByFilterBatch == 0 || gone == 2400, true) << "ops " << ops;
    if (finished) {
      EXPECT_EQ(left, 0u);
    } else {
      EXPECT_THAT(deleted.status().message(), HasSubstr(absl::StrCat("had deleted ", gone, " ")))
          << "ops " << ops;
    }
    VerifyReport report;
    EXPECT_TRUE((*reopened)->Verify("c", &report).ok()) << "ops " << ops;
    reopened->reset();
    std::filesystem::remove_all(dir);
  }
  EXPECT_TRUE(finished);
  EXPECT_GT(partial, 0);
}

}  // namespace
}  // namespace shoal

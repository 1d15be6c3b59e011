// The DB under concurrent callers, through the public API: writes, deletes, searches, reads,
// index maintenance, compactions and snapshots of one collection at once; semantic cache stores,
// lookups, invalidations and stats at once. Small enough to run under ThreadSanitizer
// (scripts/sanitize tsan), which is where these tests earn their keep: the checks below catch
// torn batches and lost writes, TSan catches the unsynchronised accesses behind them.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "shoal/cache.h"
#include "shoal/db.h"
#include "shoal/verify.h"

namespace shoal {
namespace {

constexpr uint32_t kDim = 8;
constexpr int kInitial = 1500;  // records before the index is built
constexpr int kBatch = 25;      // every upsert and delete moves the count by whole batches

class DbConcurrencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "db_concurrency_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto db = DB::Open(dir_ + "/db", Options{});
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
  }
  void TearDown() override {
    db_.reset();
    std::filesystem::remove_all(dir_);
  }

  // kBatch records with keys first.. and seeded random vectors.
  static std::vector<Record> Batch(uint64_t first, std::mt19937* rng) {
    std::normal_distribution<float> g;
    std::vector<Record> recs(kBatch);
    for (int i = 0; i < kBatch; ++i) {
      recs[i].key = first + i;
      for (uint32_t d = 0; d < kDim; ++d) recs[i].vector.push_back(g(*rng));
    }
    return recs;
  }

  uint64_t Count(DB* db) {
    auto info = db->DescribeCollection("c");
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? info->num_vectors : 0;
  }

  std::string dir_;
  std::unique_ptr<DB> db_;
};

TEST_F(DbConcurrencyTest, WritesSearchesMaintenanceAndSnapshotsAtOnce) {
  ASSERT_TRUE(db_->CreateCollection({"c", kDim, Metric::kL2}).ok());
  std::mt19937 rng(7);
  for (int b = 0; b < kInitial / kBatch; ++b) {
    ASSERT_TRUE(db_->Upsert("c", Batch(uint64_t(b) * kBatch, &rng), {}).ok());
  }
  ASSERT_TRUE(db_->Compact("").ok());
  ASSERT_TRUE(db_->BuildIndex("c", "spann:centroid_ratio=0.05,calibration_queries=0").ok());

  constexpr int kWriteBatches = 16, kDeleteBatches = 8, kSnapshots = 3;
  std::atomic<bool> writing{true};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {  // new keys from 100000
    std::mt19937 wrng(11);
    for (int b = 0; b < kWriteBatches; ++b) {
      EXPECT_TRUE(db_->Upsert("c", Batch(100000 + uint64_t(b) * kBatch, &wrng), {}).ok());
    }
  });
  threads.emplace_back([&] {  // deletes whole batches of the initial keys
    for (int b = 0; b < kDeleteBatches; ++b) {
      std::vector<Key> keys;
      for (int i = 0; i < kBatch; ++i) keys.push_back(uint64_t(b) * kBatch + i);
      auto n = db_->Delete("c", keys, {});
      EXPECT_TRUE(n.ok()) << n.status();
      EXPECT_EQ(n.value_or(0), uint64_t(kBatch));
    }
  });
  threads.emplace_back([&] {  // searches and reads while the others run
    std::mt19937 srng(13);
    std::normal_distribution<float> g;
    while (writing.load()) {
      std::vector<float> q(kDim);
      for (float& x : q) x = g(srng);
      auto hits = db_->Search("c", q, {.k = 10});
      EXPECT_TRUE(hits.ok()) << hits.status();
      std::vector<Key> keys = {uint64_t{kInitial - 1}, uint64_t{100000}};
      EXPECT_TRUE(db_->Get("c", keys).ok());
    }
  });
  threads.emplace_back([&] {  // maintenance: move writes into the index, compact
    while (writing.load()) {
      EXPECT_TRUE(db_->FlushIndexUpdates("c").ok());
      EXPECT_TRUE(db_->Compact("c").ok());
    }
  });
  threads.emplace_back([&] {
    for (int i = 0; i < kSnapshots; ++i) {
      const absl::Status s = db_->Snapshot(dir_ + "/snap" + std::to_string(i));
      EXPECT_TRUE(s.ok()) << s;
    }
  });
  threads[0].join();
  threads[1].join();
  threads[4].join();
  writing = false;
  threads[2].join();
  threads[3].join();

  EXPECT_EQ(Count(db_.get()), uint64_t(kInitial + (kWriteBatches - kDeleteBatches) * kBatch));
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  VerifyReport report;
  ASSERT_TRUE(db_->Verify("c", &report).ok());
  EXPECT_TRUE(report.ok()) << report.problems.front();

  // Writes wait while a snapshot runs: each copy holds whole batches and verifies clean.
  for (int i = 0; i < kSnapshots; ++i) {
    const std::string restored = dir_ + "/restored" + std::to_string(i);
    ASSERT_TRUE(DB::RestoreSnapshot(dir_ + "/snap" + std::to_string(i), restored).ok());
    auto db = DB::Open(restored, Options{});
    ASSERT_TRUE(db.ok()) << db.status();
    const uint64_t n = Count(db->get());
    EXPECT_EQ(n % kBatch, 0u) << "snapshot " << i << " holds a torn batch: " << n;
    EXPECT_GE(n, uint64_t(kInitial - kDeleteBatches * kBatch));
    EXPECT_LE(n, uint64_t(kInitial + kWriteBatches * kBatch));
    VerifyReport copy;
    ASSERT_TRUE((*db)->Verify("", &copy).ok());
    EXPECT_TRUE(copy.ok()) << copy.problems.front();
  }
}

// A tenant's searches on several threads while its grants change: the first search after each
// change makes the tenant's ids by leaf (tenants/tenant_tree.h) while others may be making or
// reading them. No search fails or returns a key the tenant was never given.
TEST_F(DbConcurrencyTest, TenantSearchesAndGrantsAtOnce) {
  constexpr uint32_t kWide = 32;
  constexpr int kRows = 2000;
  ASSERT_TRUE(db_->CreateCollection({"c", kWide, Metric::kL2}).ok());
  ASSERT_TRUE(db_->CreateTenant("c", {"thin", {}}).ok());
  std::mt19937 rng(7);
  std::normal_distribution<float> g;
  std::vector<std::vector<float>> centres(8, std::vector<float>(kWide));
  for (auto& c : centres) {
    for (float& x : c) x = 4 * g(rng);
  }
  std::vector<Record> thin, rest;
  for (int i = 0; i < kRows; ++i) {
    Record r{.key = uint64_t(i)};
    for (uint32_t d = 0; d < kWide; ++d) r.vector.push_back(centres[i % 8][d] + g(rng));
    (i % 7 == 0 ? thin : rest).push_back(std::move(r));
  }
  ASSERT_TRUE(db_->Upsert("c", thin, {.tenant = "thin"}).ok());
  ASSERT_TRUE(db_->Upsert("c", rest, {}).ok());
  ASSERT_TRUE(db_->BuildIndex("c", "spann:quant=rabitq:bits=4").ok());
  // Granted and revoked again and again: rest's first 100 keys.
  std::vector<Key> toggled;
  for (int i = 0; i < 100; ++i) toggled.push_back(rest[i].key);
  const uint64_t last_toggled = std::get<uint64_t>(toggled.back());
  std::atomic<bool> granting{true};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (int round = 0; round < 20; ++round) {
      EXPECT_TRUE(db_->Grant("c", "thin", toggled, {}).ok());
      EXPECT_TRUE(db_->Revoke("c", "thin", toggled, {}).ok());
    }
    granting = false;
  });
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; granting.load(); i += 3) {
        SearchParams p;
        p.tenant = "thin";
        auto hits = db_->Search("c", thin[i % thin.size()].vector, p);
        ASSERT_TRUE(hits.ok()) << hits.status();
        for (const Hit& h : (*hits)[0]) {
          const uint64_t key = std::get<uint64_t>(h.key);
          EXPECT_TRUE(key % 7 == 0 || key <= last_toggled) << "key " << key;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  // Searched through its sub-tree, its ids by leaf made (3 bytes an id, tenant RAM).
  ASSERT_TRUE(db_->Grant("c", "thin", toggled, {}).ok());
  const uint64_t dropped = db_->DescribeCollection("c")->tenant_ram_bytes;
  SearchParams p;
  p.tenant = "thin";
  ASSERT_TRUE(db_->Search("c", thin[0].vector, p).ok());
  EXPECT_GE(db_->DescribeCollection("c")->tenant_ram_bytes - dropped,
            (thin.size() + toggled.size()) * 3);
  VerifyReport report;
  ASSERT_TRUE(db_->Verify("c", &report).ok());
  EXPECT_TRUE(report.ok()) << report.problems.front();
}

TEST_F(DbConcurrencyTest, CacheStoresLookupsAndInvalidationsAtOnce) {
  ASSERT_TRUE(db_->CreateCache({.name = "answers", .dimension = 4}).ok());
  auto query = [](int i) {
    CacheLookupRequest q;
    q.partition = {.tenant = "t" + std::to_string(i % 3), .model = "m"};
    q.category = i % 2 ? "faq" : "";
    q.embedding = {1.0f, float(i % 7), float(i % 5), 0.5f};
    q.prompt = "question " + std::to_string(i);
    return q;
  };
  constexpr int kStores = 200;
  std::atomic<bool> storing{true};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (int i = 0; i < kStores; ++i) {
      auto id = db_->CacheStore("answers", {.lookup = query(i), .response = "a"}, {});
      EXPECT_TRUE(id.ok()) << id.status();
    }
  });
  threads.emplace_back([&] {
    for (int i = 0; storing.load(); ++i) {
      auto r = db_->CacheLookup("answers", query(i % kStores));
      EXPECT_TRUE(r.ok()) << r.status();
      if (r.ok() && r->hit) {
        // The invalidator may have removed the entry since the lookup: NotFound, not an error.
        const absl::Status s = db_->CacheFeedback("answers", {.entry_id = r->entry_id});
        EXPECT_TRUE(s.ok() || absl::IsNotFound(s)) << s;
      }
    }
  });
  threads.emplace_back([&] {
    while (storing.load()) {
      EXPECT_TRUE(db_->CacheInvalidate("answers", {.category = "faq", .dry_run = false}).ok());
      EXPECT_TRUE(db_->GetCacheStats("answers").ok());
      EXPECT_TRUE(db_->ListCaches().ok());
    }
  });
  threads[0].join();
  storing = false;
  threads[1].join();
  threads[2].join();

  // The default category's entries were never invalidated: each is still there, exactly.
  for (int i = 0; i < kStores; i += 2) {
    auto r = db_->CacheLookup("answers", query(i));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->hit && r->exact) << "entry " << i;
  }
  VerifyReport report;
  ASSERT_TRUE(db_->Verify("", &report).ok());
  EXPECT_TRUE(report.ok()) << report.problems.front();
  EXPECT_EQ(report.caches, 1u);
}

}  // namespace
}  // namespace shoal

// Online updates of the SSD index through the public API: a streaming workload (50% new vectors
// inserted, 30% of the old ones deleted, searches in between) keeps recall@10 against brute
// force over the live set at fixed parameters, splits and merges happen, deleted keys never come
// back, and a reopen answers the same — for the full-vector and the quantized tiers.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "index/flat/flat_index.h"
#include "shoal/dataset.h"
#include "shoal/db.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;

constexpr size_t kOld = 20000;     // built
constexpr size_t kNew = 10000;     // streamed in (50%)
constexpr size_t kDeletes = 6000;  // 30% of the old
constexpr size_t kRounds = 5;
const SearchParams kParams{.k = 10, .max_postings = 3};

std::string TempDir(const std::string& name) {
  std::string tmpl = ::testing::TempDir() + name + "_XXXXXX";
  EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

class SpannUpdatesTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto ds = LoadDataset("synthetic:n=30000,d=32,q=100,clusters=200,seed=11");
    ASSERT_TRUE(ds.ok()) << ds.status();
    ds_ = *std::move(ds);
    dir_ = TempDir("spann_updates");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::span<const float> Queries() const {
    return {ds_.test.data.data(), ds_.test.rows * ds_.test.cols};
  }
  Record Rec(size_t row) const {
    return {uint64_t{row}, std::vector<float>(ds_.train.Row(row), ds_.train.Row(row) + 32)};
  }
  std::unique_ptr<DB> Open(uint32_t update_threads = 1) {
    Options o;
    o.index_update_batch = 512;
    o.index_update_threads = update_threads;
    auto db = DB::Open(dir_, o);
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? *std::move(db) : nullptr;
  }
  // Recall@10 of `hits` against brute force over the live rows; fails on a dead key.
  double Recall(const std::vector<std::vector<Hit>>& hits) const {
    index::FlatIndex flat(32, index::Metric::kL2);
    for (size_t row : live_) flat.Add(row, ds_.train.Row(row));
    auto truth = flat.Search(ds_.test.data.data(), ds_.test.rows, 10, 0);
    size_t found = 0, total = 0;
    for (size_t q = 0; q < truth.size(); ++q) {
      absl::flat_hash_set<uint64_t> got;
      for (const Hit& h : hits[q]) {
        const uint64_t key = std::get<uint64_t>(h.key);
        EXPECT_TRUE(live_.contains(key)) << "deleted key " << key << " returned";
        got.insert(key);
      }
      for (const auto& nb : truth[q]) found += got.contains(nb.id), ++total;
    }
    return double(found) / double(total);
  }
  std::vector<std::vector<Hit>> Search(DB* db) {
    auto hits = db->Search("s", Queries(), kParams);
    EXPECT_TRUE(hits.ok()) << hits.status();
    return hits.ok() ? *std::move(hits) : std::vector<std::vector<Hit>>{};
  }

  AnnDataset ds_;
  std::string dir_;
  absl::flat_hash_set<uint64_t> live_;
};

TEST_P(SpannUpdatesTest, StreamingWorkloadKeepsRecallSplitsMergesAndSurvivesReopen) {
  std::vector<std::vector<Hit>> before;
  {
    auto db = Open();
    ASSERT_TRUE(db->CreateCollection({"s", 32, Metric::kL2}).ok());
    std::vector<Record> batch;
    for (size_t i = 0; i < kOld; ++i) {
      batch.push_back(Rec(i));
      live_.insert(i);
    }
    ASSERT_TRUE(db->Upsert("s", batch, {}).ok());
    ASSERT_TRUE(
        db->BuildIndex("s", "spann:centroid_ratio=0.02,replicas=4,posting_cap=100," + GetParam())
            .ok());
    const uint64_t postings_at_build = db->DescribeCollection("s")->postings;
    EXPECT_GE(Recall(Search(db.get())), 0.9);

    // Deletes: a dense region (the old rows nearest row 0, so whole postings empty out and
    // merge) and random old rows.
    std::vector<std::pair<float, size_t>> by_dist;
    for (size_t i = 0; i < kOld; ++i) {
      float d = 0;
      for (size_t j = 0; j < 32; ++j) {
        const float t = ds_.train.Row(i)[j] - ds_.train.Row(0)[j];
        d += t * t;
      }
      by_dist.emplace_back(d, i);
    }
    std::sort(by_dist.begin(), by_dist.end());
    std::vector<uint64_t> deletes;
    for (size_t i = 0; i < kDeletes / 2; ++i) deletes.push_back(by_dist[i].second);
    std::mt19937_64 rng(5);
    for (size_t i = kDeletes / 2; i < by_dist.size() && deletes.size() < kDeletes; ++i) {
      if (rng() % 3 == 0) deletes.push_back(by_dist[i].second);
    }
    std::shuffle(deletes.begin() + kDeletes / 2, deletes.end(), rng);
    ASSERT_EQ(deletes.size(), kDeletes);

    size_t next_new = kOld, next_delete = 0;
    for (size_t round = 0; round < kRounds; ++round) {
      // Interleave: a slice of inserts, a slice of deletes, a search while the buffer is full.
      for (int slice = 0; slice < 4; ++slice) {
        std::vector<Record> ins;
        for (size_t i = 0; i < kNew / kRounds / 4; ++i) {
          ins.push_back(Rec(next_new));
          live_.insert(next_new++);
        }
        ASSERT_TRUE(db->Upsert("s", ins, {}).ok());
        std::vector<Key> del;
        for (size_t i = 0; i < kDeletes / kRounds / 4; ++i) {
          del.push_back(deletes[next_delete]);
          live_.erase(deletes[next_delete++]);
        }
        ASSERT_EQ(*db->Delete("s", del, {}), del.size());
        const double r = Recall(Search(db.get()));
        EXPECT_GE(r, 0.9) << "round " << round << " slice " << slice << " (buffered)";
      }
      ASSERT_TRUE(db->FlushIndexUpdates("s").ok());
      auto info = db->DescribeCollection("s");
      EXPECT_EQ(info->unindexed_vectors, 0u);
      EXPECT_EQ(info->tombstones, 0u);
      EXPECT_EQ(info->num_vectors, live_.size());
      const double r = Recall(Search(db.get()));
      EXPECT_GE(r, 0.9) << "round " << round << " (all in postings)";
      std::printf("round %zu: recall@10 %.3f with every vector in the postings\n", round, r);
    }
    auto info = db->DescribeCollection("s");
    std::printf("postings %lu (build %lu), splits %lu, merges %lu, reassigned %lu\n",
                info->postings, postings_at_build, info->posting_splits, info->posting_merges,
                info->vectors_reassigned);
    EXPECT_GT(info->posting_splits, 0u);
    EXPECT_GT(info->posting_merges, 0u);
    EXPECT_GT(info->vectors_reassigned, 0u);
    before = Search(db.get());
  }
  auto db = Open();
  EXPECT_EQ(Search(db.get()), before);
  EXPECT_EQ(db->DescribeCollection("s")->unindexed_vectors, 0u);
  // Rewriting a key replaces its vector: the old one is never returned again.
  const float* q0 = ds_.test.Row(0);
  std::vector<Record> moved = {{uint64_t{kOld}, std::vector<float>(q0, q0 + 32)}};
  ASSERT_TRUE(db->Upsert("s", moved, {.sync = true}).ok());
  ASSERT_TRUE(db->FlushIndexUpdates("s").ok());
  auto hits = Search(db.get());
  ASSERT_FALSE(hits[0].empty());
  EXPECT_EQ(hits[0][0].key, Key(uint64_t{kOld}));
  EXPECT_EQ(hits[0][0].distance, 0.0f);
  for (const auto& q : hits) {
    EXPECT_LE(std::count_if(q.begin(), q.end(),
                            [](const Hit& h) { return h.key == Key(uint64_t{kOld}); }),
              1);
  }
}

// With no maintenance thread every write stays in the exact buffer; once it holds more than the
// collection scans whole (kExactBufferFloats), a search scans the buffer's buckets of the query's
// nearest tree leaves instead: recall stays, a buffered vector is found by itself, and deleted or
// replaced buffered vectors are never returned.
TEST_P(SpannUpdatesTest, LargeBufferIsSearchedThroughItsNearestLeaves) {
  auto db = Open(/*update_threads=*/0);
  ASSERT_TRUE(db->CreateCollection({"s", 32, Metric::kL2}).ok());
  std::vector<Record> batch;
  for (size_t i = 0; i < kOld; ++i) {
    batch.push_back(Rec(i));
    live_.insert(i);
  }
  ASSERT_TRUE(db->Upsert("s", batch, {}).ok());
  ASSERT_TRUE(db->BuildIndex("s", "spann:centroid_ratio=0.02,replicas=4," + GetParam()).ok());
  batch.clear();
  for (size_t i = kOld; i < kOld + kNew; ++i) {
    batch.push_back(Rec(i));
    live_.insert(i);
  }
  ASSERT_TRUE(db->Upsert("s", batch, {}).ok());
  std::vector<Key> del;
  for (size_t i = 0; i < kNew; i += 10) {  // buffered rows, and old ones
    del.push_back(uint64_t{kOld + i});
    del.push_back(uint64_t{i});
    live_.erase(kOld + i);
    live_.erase(i);
  }
  ASSERT_TRUE(db->Delete("s", del, {}).ok());
  const size_t buffered = kNew - kNew / 10;  // 9000 x 32 floats > 2^18
  EXPECT_EQ(db->DescribeCollection("s")->unindexed_vectors, buffered);
  const double r = Recall(Search(db.get()));
  std::printf("recall@10 %.3f with %zu vectors buffered\n", r, buffered);
  EXPECT_GE(r, 0.9);
  // A buffered vector is its own nearest neighbour; replacing it moves it.
  const Record probe = Rec(kOld + 1);
  auto hits = db->Search("s", probe.vector, kParams);
  ASSERT_TRUE(hits.ok());
  ASSERT_FALSE((*hits)[0].empty());
  EXPECT_EQ((*hits)[0][0].key, Key(uint64_t{kOld + 1}));
  EXPECT_EQ((*hits)[0][0].distance, 0.0f);
  std::vector<float> elsewhere(32, 100.0f);
  ASSERT_TRUE(db->Upsert("s", std::vector<Record>{{uint64_t{kOld + 1}, elsewhere}}, {}).ok());
  hits = db->Search("s", probe.vector, kParams);
  ASSERT_TRUE(hits.ok());
  for (const Hit& h : (*hits)[0]) EXPECT_NE(h.key, Key(uint64_t{kOld + 1}));
  hits = db->Search("s", elsewhere, kParams);
  ASSERT_TRUE(hits.ok());
  ASSERT_FALSE((*hits)[0].empty());
  EXPECT_EQ((*hits)[0][0].key, Key(uint64_t{kOld + 1}));
}

// Writers, searches, the maintenance thread and its publisher all at once, with an index rebuild
// in the middle (publications of the old index may still be queued): every acknowledged write
// is found the moment it is acknowledged, no deleted key comes back, and afterwards Verify is
// clean and every live vector is its own nearest neighbour.
TEST_P(SpannUpdatesTest, ConcurrentWritesMaintenanceAndARebuildLoseNothing) {
  // Wide enough that a vector's own postings (or buffer bucket) are always among those scanned:
  // the check is that nothing is lost, not the index's recall.
  const SearchParams kWide{.k = 10, .max_postings = 16};
  auto db = Open();
  ASSERT_TRUE(db->CreateCollection({"s", 32, Metric::kL2}).ok());
  std::vector<Record> batch;
  for (size_t i = 0; i < kOld; ++i) batch.push_back(Rec(i));
  ASSERT_TRUE(db->Upsert("s", batch, {}).ok());
  const std::string spec = "spann:centroid_ratio=0.02,replicas=4," + GetParam();
  ASSERT_TRUE(db->BuildIndex("s", spec).ok());
  // Writer w inserts rows kOld + w, kOld + w + 2, ... and deletes old rows w, w + 2, ...
  constexpr size_t kWriters = 2, kPerWriter = 3000, kBatch = 50;
  std::atomic<int> failures{0};
  auto writer = [&](size_t w) {
    for (size_t b = 0; b < kPerWriter; b += kBatch) {
      std::vector<Record> recs;
      std::vector<Key> del;
      for (size_t i = b; i < b + kBatch; ++i) {
        recs.push_back(Rec(kOld + w + 2 * i));
        del.push_back(uint64_t{w + 2 * i});
      }
      if (!db->Upsert("s", recs, {}).ok() || !db->Delete("s", del, {}).ok()) ++failures;
      // Read your writes: the last record of the batch is its own nearest neighbour at once,
      // and the last deleted key is gone.
      auto hits = db->Search("s", recs.back().vector, kWide);
      if (!hits.ok() || (*hits)[0].empty() || (*hits)[0][0].key != recs.back().key) ++failures;
      auto gone = db->Search("s", Rec(w + 2 * (b + kBatch - 1)).vector, kWide);
      if (!gone.ok()) ++failures;
      for (const Hit& h : gone.ok() ? (*gone)[0] : std::vector<Hit>{}) {
        if (h.key == del.back()) ++failures;
      }
    }
  };
  std::thread w0(writer, 0), w1(writer, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(db->BuildIndex("s", spec).ok());
  w0.join();
  w1.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_TRUE(db->FlushIndexUpdates("s").ok());
  EXPECT_EQ(db->DescribeCollection("s")->unindexed_vectors, 0u);
  VerifyReport report;
  ASSERT_TRUE(db->Verify("s", &report).ok());
  EXPECT_TRUE(report.ok()) << ::testing::PrintToString(report.problems);
  for (size_t i = 0; i < kOld + kWriters * kPerWriter; i += 7) {  // a sample of every kind
    const bool live = i >= kWriters * kPerWriter;
    auto hits = db->Search("s", Rec(i).vector, kWide);
    ASSERT_TRUE(hits.ok());
    if (live) {
      EXPECT_FALSE((*hits)[0].empty()) << i;
      if ((*hits)[0].empty()) continue;
      EXPECT_EQ((*hits)[0][0].key, Key(uint64_t{i})) << i;
    } else {
      for (const Hit& h : (*hits)[0]) EXPECT_NE(h.key, Key(uint64_t{i})) << i;
    }
  }
}

// The quantized tiers rerank from full vectors: those of fresh inserts are cached as the
// maintenance writes them, so searching them after a flush reads none back from the SSD (the
// full-vector tier keeps no such cache; its postings hold the vectors).
TEST_P(SpannUpdatesTest, FreshVectorsAreRerankedFromRam) {
  auto db = Open();
  ASSERT_TRUE(db->CreateCollection({"s", 32, Metric::kL2}).ok());
  std::vector<Record> batch;
  for (size_t i = 0; i < kOld; ++i) batch.push_back(Rec(i));
  ASSERT_TRUE(db->Upsert("s", batch, {}).ok());
  ASSERT_TRUE(db->BuildIndex("s", "spann:centroid_ratio=0.02,replicas=4," + GetParam()).ok());
  // Fresh vectors far from the built ones: a search for one reranks only fresh candidates.
  auto fresh = [&](size_t i) {
    Record r = Rec(i);
    for (float& x : r.vector) x += 1000.0f;
    return r;
  };
  batch.clear();
  for (size_t i = kOld; i < kOld + 2000; ++i) batch.push_back(fresh(i));
  ASSERT_TRUE(db->Upsert("s", batch, {}).ok());
  ASSERT_TRUE(db->FlushIndexUpdates("s").ok());
  ASSERT_EQ(db->DescribeCollection("s")->unindexed_vectors, 0u);
  SearchStats stats;
  SearchParams p = kParams;
  p.stats = &stats;
  size_t found = 0;
  for (size_t i = kOld; i < kOld + 2000; i += 50) {
    const Record r = fresh(i);
    auto hits = db->Search("s", r.vector, p);
    ASSERT_TRUE(hits.ok()) << hits.status();
    found += !(*hits)[0].empty() && (*hits)[0][0].key == r.key;
  }
  EXPECT_EQ(found, 40u);
  EXPECT_EQ(stats.full_vectors_read, 0u);
}

INSTANTIATE_TEST_SUITE_P(Tiers, SpannUpdatesTest,
                         ::testing::Values("quant=none", "quant=sq8", "quant=rabitq:bits=4"),
                         [](const auto& info) {
                           std::string name = info.param.substr(6);
                           std::replace_if(
                               name.begin(), name.end(), [](char c) { return !isalnum(c); }, '_');
                           return name;
                         });

}  // namespace
}  // namespace shoal

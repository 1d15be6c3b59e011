// The SSD-resident index through the public API: recall, reopen, corruption, io backends,
// RAM bound, and writes after a build.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "index/flat/flat_index.h"
#include "shoal/dataset.h"
#include "shoal/db.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string TempDir(const std::string& name) {
  std::string tmpl = ::testing::TempDir() + name + "_XXXXXX";
  EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

std::unique_ptr<DB> OpenDb(const std::string& dir, Options o = {}) {
  auto db = DB::Open(dir, o);
  EXPECT_TRUE(db.ok()) << db.status();
  return db.ok() ? *std::move(db) : nullptr;
}

void Load(DB* db, const std::string& name, const Matrix& m, Metric metric = Metric::kL2) {
  ASSERT_TRUE(db->CreateCollection({name, uint32_t(m.cols), metric}).ok());
  for (size_t begin = 0; begin < m.rows; begin += 5000) {
    std::vector<Record> batch;
    for (size_t i = begin; i < std::min(m.rows, begin + 5000); ++i) {
      batch.push_back({uint64_t(i), std::vector<float>(m.Row(i), m.Row(i) + m.cols)});
    }
    ASSERT_TRUE(db->Upsert(name, batch, {}).ok());
  }
}

// Exact top-k ids (as keys = row numbers) of each query.
std::vector<std::vector<uint64_t>> Truth(const Matrix& base, const Matrix& queries, size_t nq,
                                         size_t k) {
  index::FlatIndex flat(base.cols, index::Metric::kL2);
  for (size_t i = 0; i < base.rows; ++i) flat.Add(i, base.Row(i));
  auto found = flat.Search(queries.data.data(), nq, k, 0);
  std::vector<std::vector<uint64_t>> out(nq);
  for (size_t q = 0; q < nq; ++q) {
    for (const auto& nb : found[q]) out[q].push_back(nb.id);
  }
  return out;
}

double Recall(const std::vector<std::vector<Hit>>& hits,
              const std::vector<std::vector<uint64_t>>& truth) {
  size_t found = 0, total = 0;
  for (size_t q = 0; q < truth.size(); ++q) {
    for (uint64_t id : truth[q]) {
      ++total;
      for (const Hit& h : hits[q]) found += std::get<uint64_t>(h.key) == id;
    }
  }
  return double(found) / double(total);
}

std::span<const float> Queries(const Matrix& m, size_t n) { return {m.data.data(), n * m.cols}; }

TEST(SpannTest, FashionMnistRecallAtTenReaches095) {
  auto ds = LoadDataset("fashion-mnist");
  if (absl::IsNotFound(ds.status())) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  ASSERT_TRUE(ds.ok()) << ds.status();
  const std::string dir = TempDir("spann_fmnist");
  auto db = OpenDb(dir);
  Load(db.get(), "f", ds->train);
  ASSERT_TRUE(db->BuildIndex("f", "spann:centroid_ratio=0.02,replicas=4").ok());
  constexpr size_t kQueries = 1000;
  auto truth = Truth(ds->train, ds->test, kQueries, 10);
  double best = 0;
  for (uint32_t m : {8u, 16u, 32u, 64u}) {
    SearchStats stats;
    auto hits =
        db->Search("f", Queries(ds->test, kQueries), {.k = 10, .max_postings = m, .stats = &stats});
    ASSERT_TRUE(hits.ok()) << hits.status();
    const double r = Recall(*hits, truth);
    std::printf("max_postings=%u recall@10=%.4f postings/query=%.1f scored/query=%.0f\n", m, r,
                double(stats.postings_read) / kQueries, double(stats.vectors_scored) / kQueries);
    best = std::max(best, r);
  }
  EXPECT_GE(best, 0.95);
  auto info = db->DescribeCollection("f");
  EXPECT_THAT(info->index, HasSubstr("spann:"));
  EXPECT_EQ(info->num_vectors, 60000u);
  db.reset();
  fs::remove_all(dir);
}

class SpannSyntheticTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ds = LoadDataset("synthetic:n=20000,d=24,q=200,clusters=50,seed=7");
    ASSERT_TRUE(ds.ok()) << ds.status();
    ds_ = *std::move(ds);
    dir_ = TempDir("spann_syn");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<std::vector<Hit>> MustSearch(DB* db, SearchParams p = {.k = 10, .max_postings = 16}) {
    auto hits = db->Search("s", Queries(ds_.test, ds_.test.rows), p);
    EXPECT_TRUE(hits.ok()) << hits.status();
    return hits.ok() ? *hits : std::vector<std::vector<Hit>>{};
  }
  AnnDataset ds_;
  std::string dir_;
};

TEST_F(SpannSyntheticTest, ReopenGivesIdenticalResults) {
  std::vector<std::vector<Hit>> before;
  {
    auto db = OpenDb(dir_);
    Load(db.get(), "s", ds_.train);
    ASSERT_TRUE(db->BuildIndex("s", "spann:centroid_ratio=0.05").ok());
    before = MustSearch(db.get());
    EXPECT_GE(Recall(before, Truth(ds_.train, ds_.test, ds_.test.rows, 10)), 0.9);
  }
  auto db = OpenDb(dir_);
  EXPECT_EQ(MustSearch(db.get()), before);
  EXPECT_THAT(db->DescribeCollection("s")->index, HasSubstr("centroid_ratio=0.05"));
}

TEST_F(SpannSyntheticTest, IoUringAndPreadGiveIdenticalResults) {
  {
    auto db = OpenDb(dir_);
    Load(db.get(), "s", ds_.train);
    ASSERT_TRUE(db->BuildIndex("s", "spann:centroid_ratio=0.05").ok());
  }
  Options uring, pread;
  uring.io = Options::Io::kIoUring;
  pread.io = Options::Io::kPread;
  uring.posting_cache_bytes = pread.posting_cache_bytes = 0;  // every posting read from disk
  std::vector<std::vector<Hit>> a, b;
  SearchStats sa, sb;
  {
    auto db = OpenDb(dir_, uring);
    a = MustSearch(db.get(), {.k = 10, .max_postings = 16, .stats = &sa});
  }
  {
    auto db = OpenDb(dir_, pread);
    b = MustSearch(db.get(), {.k = 10, .max_postings = 16, .stats = &sb});
  }
  EXPECT_EQ(a, b);
  EXPECT_GT(sa.bytes_read, 0u);
  EXPECT_EQ(sa.bytes_read, sb.bytes_read);
}

TEST_F(SpannSyntheticTest, FlippedPostingByteIsDataLossNamingFileAndOffset) {
  {
    auto db = OpenDb(dir_);
    Load(db.get(), "s", ds_.train);
    ASSERT_TRUE(db->BuildIndex("s", "spann:centroid_ratio=0.01").ok());
  }
  std::string postings;
  for (const auto& e : fs::recursive_directory_iterator(dir_)) {
    if (e.path().filename() == "postings.dat") postings = e.path();
  }
  ASSERT_FALSE(postings.empty());
  {
    std::fstream f(postings, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(4096 * 3 + 100);
    char c = 0;
    f.read(&c, 1);
    c ^= 0x5a;
    f.seekp(4096 * 3 + 100);
    f.write(&c, 1);
  }
  Options o;
  o.posting_cache_bytes = 0;
  auto db = OpenDb(dir_, o);
  // Scanning every posting must reach the corrupt page.
  auto hits = db->Search("s", Queries(ds_.test, 1), {.k = 10, .max_postings = 100000});
  ASSERT_FALSE(hits.ok());
  EXPECT_EQ(hits.status().code(), absl::StatusCode::kDataLoss) << hits.status();
  EXPECT_THAT(hits.status().message(), HasSubstr(postings));
  EXPECT_THAT(hits.status().message(), HasSubstr("12288"));  // the page's offset
}

TEST_F(SpannSyntheticTest, IndexRamStaysUnderTheConfiguredBound) {
  Options o;
  o.index_ram_bytes_limit = 512 << 10;
  auto db = OpenDb(dir_, o);
  Load(db.get(), "s", ds_.train);
  ASSERT_TRUE(db->BuildIndex("s", "spann:centroid_ratio=0.02").ok());
  for (int i = 0; i < 3; ++i) MustSearch(db.get(), {.k = 10, .max_postings = 64});
  auto info = db->DescribeCollection("s");
  EXPECT_GT(info->index_ram_bytes, 0u);
  EXPECT_LE(info->index_ram_bytes, o.index_ram_bytes_limit);
  // Centroids alone over the bound: refused, and the old index keeps serving.
  auto too_many = db->BuildIndex("s", "spann:centroid_ratio=0.5");
  EXPECT_EQ(too_many.code(), absl::StatusCode::kResourceExhausted) << too_many;
  EXPECT_THAT(db->DescribeCollection("s")->index, HasSubstr("centroid_ratio=0.02"));
}

TEST_F(SpannSyntheticTest, WritesAfterBuildAreSearchableAndSurviveReopen) {
  Options no_updates;  // writes stay in the exact buffer (spann_updates_test covers the rest)
  no_updates.index_update_threads = 0;
  {
    auto db = OpenDb(dir_, no_updates);
    Load(db.get(), "s", ds_.train);
    ASSERT_TRUE(db->BuildIndex("s", "spann:centroid_ratio=0.05").ok());
    // Move key 0 onto query 0, delete the true nearest neighbour of query 1, add a new key.
    const float* q0 = ds_.test.Row(0);
    std::vector<Record> recs = {
        {uint64_t{0}, std::vector<float>(q0, q0 + ds_.test.cols)},
        {uint64_t{999999}, std::vector<float>(ds_.test.Row(2), ds_.test.Row(2) + 24)}};
    ASSERT_TRUE(db->Upsert("s", recs, {}).ok());
    auto truth = Truth(ds_.train, ds_.test, 2, 1);
    std::vector<Key> gone = {truth[1][0]};
    ASSERT_EQ(*db->Delete("s", gone, {}), 1u);
    EXPECT_EQ(db->DescribeCollection("s")->unindexed_vectors, 2u);
  }
  for (int round = 0; round < 2; ++round) {
    auto db = OpenDb(dir_, no_updates);
    auto hits = MustSearch(db.get());
    EXPECT_EQ(hits[0][0].key, Key(uint64_t{0}));
    EXPECT_EQ(hits[0][0].distance, 0.0f);
    EXPECT_EQ(hits[2][0].key, Key(uint64_t{999999}));
    auto truth = Truth(ds_.train, ds_.test, 2, 1);
    for (const Hit& h : hits[1]) EXPECT_NE(h.key, Key(truth[1][0]));
    for (const auto& q : hits) {  // key 0's old vector is never returned twice
      EXPECT_LE(
          std::count_if(q.begin(), q.end(), [](const Hit& h) { return h.key == Key(uint64_t{0}); }),
          1);
    }
    EXPECT_EQ(db->DescribeCollection("s")->num_vectors, 20000u);
    if (round == 0) {
      // A rebuild folds the writes into the index.
      ASSERT_TRUE(db->BuildIndex("s", "spann:centroid_ratio=0.05").ok());
      EXPECT_EQ(db->DescribeCollection("s")->unindexed_vectors, 0u);
    }
  }
}

TEST_F(SpannSyntheticTest, BadSpecNamesTheKey) {
  auto db = OpenDb(dir_);
  Load(db.get(), "s", ds_.train);
  auto s = db->BuildIndex("s", "spann:replicas=0");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("spec.replicas"));
  EXPECT_THAT(db->BuildIndex("s", "spann:bogus=1").message(), HasSubstr("spec.bogus"));
  EXPECT_THAT(db->BuildIndex("s", "hnsw").message(), HasSubstr("spec"));
  ASSERT_TRUE(db->BuildIndex("s", "flat").ok());
}

TEST_F(SpannSyntheticTest, BuildReportsItsPhasesWithAFractionThatNeverDecreases) {
  auto db = OpenDb(dir_);
  Load(db.get(), "s", ds_.train);
  std::vector<IndexBuildProgress> seen;
  auto built = db->BuildIndex("s", "spann:centroid_ratio=0.05,quant=sq8",
                              [&](const IndexBuildProgress& p) { seen.push_back(p); });
  ASSERT_TRUE(built.ok()) << built;
  std::vector<std::string> phases;
  for (size_t i = 0; i < seen.size(); ++i) {
    if (i > 0) {
      EXPECT_GE(seen[i].fraction, seen[i - 1].fraction) << seen[i].phase;
    }
    if (phases.empty() || phases.back() != seen[i].phase) phases.push_back(seen[i].phase);
  }
  EXPECT_EQ(phases, (std::vector<std::string>{"reading", "clustering", "assigning", "encoding",
                                              "writing", "calibrating", "committing"}));
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().fraction, 1.0);
  EXPECT_GT(seen.size(), 10u);  // the reading and writing steps report as they advance
}

// Under a RAM bound too small for every code, codes stay in postings.dat and are read per query:
// the answers are the ones the all-in-RAM index gives.
TEST_F(SpannSyntheticTest, CodesReadFromSsdWhenTheyDoNotFitGiveTheSameAnswers) {
  const std::string spec = "spann:centroid_ratio=0.05,quant=rabitq:bits=2";
  std::vector<std::vector<Hit>> resident;
  {
    auto db = OpenDb(dir_, Options());
    Load(db.get(), "s", ds_.train);
    auto built = db->BuildIndex("s", spec);
    ASSERT_TRUE(built.ok()) << built;
    resident = MustSearch(db.get());
  }
  Options bounded;
  bounded.index_ram_bytes_limit = 1 << 20;  // the codes alone take ~1.8 MB
  bounded.io = Options::Io::kPread;
  auto db = OpenDb(dir_, bounded);
  SearchStats stats;
  auto from_ssd = MustSearch(db.get(), {.k = 10, .max_postings = 16, .stats = &stats});
  EXPECT_EQ(from_ssd, resident);
  EXPECT_GT(stats.bytes_read, 0u);
  auto info = db->DescribeCollection("s");
  ASSERT_TRUE(info.ok());
  EXPECT_LE(info->index_ram_bytes, bounded.index_ram_bytes_limit);
}

}  // namespace
}  // namespace shoal

namespace shoal {
namespace {

TEST_F(SpannSyntheticTest, QuantizedTiersRecallAndBoundedRerank) {
  Options o;
  o.posting_cache_bytes = 0;  // every full vector comes from vectors.dat
  auto db = OpenDb(dir_, o);
  Load(db.get(), "s", ds_.train);
  ASSERT_TRUE(db->BuildIndex("s", "spann:centroid_ratio=0.05").ok());
  auto exact = MustSearch(db.get(), {.k = 10, .max_postings = 16});
  const auto truth = Truth(ds_.train, ds_.test, ds_.test.rows, 10);
  for (const std::string quant : {"sq8", "rabitq:bits=1", "rabitq:bits=4"}) {
    SCOPED_TRACE(quant);
    auto built = db->BuildIndex("s", "spann:centroid_ratio=0.05,quant=" + quant);
    ASSERT_TRUE(built.ok()) << built;
    EXPECT_THAT(db->DescribeCollection("s")->index, HasSubstr("quant=" + quant));
    SearchStats stats;
    auto hits = MustSearch(db.get(), {.k = 10, .max_postings = 16, .stats = &stats});
    const double recall = Recall(hits, truth);
    std::printf("%s: recall %.4f, scored %.0f, full vectors read %.1f per query\n", quant.c_str(),
                recall, double(stats.vectors_scored) / ds_.test.rows,
                double(stats.full_vectors_read) / ds_.test.rows);
    EXPECT_GE(recall, 0.9);
    EXPECT_GE(stats.full_vectors_read, 10u * ds_.test.rows);
    EXPECT_LT(stats.full_vectors_read, stats.vectors_scored / 2);
    EXPECT_GT(stats.bytes_read, 0u);
    // The bound rarely drops a neighbour the full-vector tier finds in the same postings.
    size_t same = 0;
    for (size_t q = 0; q < hits.size(); ++q) same += hits[q] == exact[q];
    EXPECT_GE(same, hits.size() * 95 / 100);
  }
}

}  // namespace
}  // namespace shoal

namespace shoal {
namespace {

// With nothing cached, the rerank reads its candidates in rounds, nearest lower bound first, and
// stops once the next bound exceeds the k-th exact distance; reading every survivor in one batch
// (as before) read 2.3x as many full vectors (150.4 per query against 65.6; recall 0.999 both).
TEST_F(SpannSyntheticTest, UncachedRerankStopsOnceTheBoundsRuleTheRestOut) {
  Options o;
  o.posting_cache_bytes = 0;  // no vector cache: every candidate scored is read
  auto db = OpenDb(dir_, o);
  Load(db.get(), "s", ds_.train);
  ASSERT_TRUE(db->BuildIndex("s", "spann:centroid_ratio=0.05,quant=rabitq:bits=1").ok());
  const auto truth = Truth(ds_.train, ds_.test, ds_.test.rows, 10);
  SearchStats stats;
  auto hits = MustSearch(db.get(), {.k = 10, .max_postings = 16, .stats = &stats});
  const double recall = Recall(hits, truth);
  const double per_query = double(stats.full_vectors_read) / ds_.test.rows;
  std::printf("recall %.4f, full vectors read %.1f, read batches %.2f per query\n", recall,
              per_query, double(stats.read_batches) / ds_.test.rows);
  EXPECT_GE(recall, 0.9);
  EXPECT_LT(per_query, 100);                     // 65.6 in rounds; 150.4 in one batch
  EXPECT_GT(stats.read_batches, ds_.test.rows);  // some queries needed a second round
}

}  // namespace
}  // namespace shoal

namespace shoal {
namespace {

// Codes on the SSD: the index prepares each posting's centroid as it scans it and keeps no
// prepared (rotated, padded) copy of every centroid, so its RAM is about that of the full-vector
// tier over the same postings; a copy would add 1,000 postings x 64 floats (256 KiB) here.
TEST_F(SpannSyntheticTest, CodesOnSsdKeepNoPreparedCentroids) {
  Options bounded;
  bounded.index_ram_bytes_limit = 1 << 20;  // the codes alone take ~1.8 MB
  auto db = OpenDb(dir_, bounded);
  Load(db.get(), "s", ds_.train);
  // Each index measured just after a reopen: no cache holds anything yet.
  auto ram_after_reopen = [&](const std::string& spec) -> uint64_t {
    EXPECT_TRUE(db->BuildIndex("s", spec).ok()) << spec;
    db.reset();
    db = OpenDb(dir_, bounded);
    return db->DescribeCollection("s")->index_ram_bytes;
  };
  const uint64_t full_vector_tier = ram_after_reopen("spann:centroid_ratio=0.05");
  const uint64_t codes_on_ssd = ram_after_reopen("spann:centroid_ratio=0.05,quant=rabitq:bits=2");
  std::printf("index RAM: full-vector tier %lu B, codes on SSD %lu B\n",
              static_cast<unsigned long>(full_vector_tier),
              static_cast<unsigned long>(codes_on_ssd));
  EXPECT_LT(codes_on_ssd, full_vector_tier + (64u << 10));
  auto hits = db->Search("s", Queries(ds_.test, 10), {.k = 10, .max_postings = 16});
  EXPECT_TRUE(hits.ok()) << hits.status();
}

}  // namespace
}  // namespace shoal

// Defaults that need no tuning, through the public API: BuildIndex("auto") picks the index from
// the data and calibrates target recall at build time; searches with a target (or none: the
// index's 0.95) return recall at or above it on held-out queries, for every metric; the
// calibration survives a reopen; old spec strings still build.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/test_temp_dir.h"
#include "index/flat/flat_index.h"
#include "shoal/dataset.h"
#include "shoal/db.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

// Leave-one-out calibration on 200 sampled vectors vs 300 held-out queries: both estimates
// carry sampling error (about +-0.01 at 0.95 here), hence the tolerance.
constexpr double kTolerance = 0.03;
constexpr size_t kQueries = 300;

// The vectors as the index sees them: unit length for cosine.
Matrix IndexForm(const Matrix& m, Metric metric) {
  Matrix out = m;
  if (metric != Metric::kCosine) return out;
  for (size_t i = 0; i < out.rows; ++i) {
    float* r = out.data.data() + i * out.cols;
    double s = 0;
    for (size_t j = 0; j < out.cols; ++j) s += double(r[j]) * r[j];
    const float inv = s > 0 ? float(1 / std::sqrt(s)) : 0;
    for (size_t j = 0; j < out.cols; ++j) r[j] *= inv;
  }
  return out;
}

// A metric and a dimension: 48-d (the low-dimension rules) and 1024-d (2-bit codes, 256 vectors
// per posting).
struct Shape {
  Metric metric;
  size_t dim;
};

class AutoSpecTest : public ::testing::TestWithParam<Shape> {
 protected:
  Metric metric() const { return GetParam().metric; }

  void SetUp() override {
    const bool angular = metric() != Metric::kL2;
    auto ds = LoadDataset(absl::StrCat("embedding:n=6000,d=", GetParam().dim, ",q=", kQueries,
                                       ",seed=3,distance=", angular ? "angular" : "euclidean"));
    ASSERT_TRUE(ds.ok()) << ds.status();
    data_ = *std::move(ds);
    auto db = DB::Open(dir_.path(), Options{});
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
    ASSERT_TRUE(db_->CreateCollection({"c", uint32_t(data_.train.cols), metric()}).ok());
    std::vector<Record> batch;
    for (size_t i = 0; i < data_.train.rows; ++i) {
      const float* v = data_.train.Row(i);
      batch.push_back({uint64_t(i), std::vector<float>(v, v + data_.train.cols)});
    }
    ASSERT_TRUE(db_->Upsert("c", batch, {}).ok());
    // Exact answers of the held-out queries (never indexed).
    const index::Metric im =
        metric() == Metric::kL2 ? index::Metric::kL2 : index::Metric::kInnerProduct;
    const Matrix base = IndexForm(data_.train, metric());
    const Matrix queries = IndexForm(data_.test, metric());
    index::FlatIndex flat(base.cols, im);
    for (size_t i = 0; i < base.rows; ++i) flat.Add(i, base.Row(i));
    for (const auto& hits : flat.Search(queries.data.data(), kQueries, 10, 0)) {
      truth_.emplace_back();
      for (const auto& nb : hits) truth_.back().push_back(nb.id);
    }
  }

  double Recall(const SearchParams& params, SearchStats* stats = nullptr) {
    SearchParams p = params;
    p.stats = stats;
    auto hits = db_->Search("c", {data_.test.data.data(), kQueries * data_.test.cols}, p);
    EXPECT_TRUE(hits.ok()) << hits.status();
    if (!hits.ok()) return 0;
    size_t found = 0;
    for (size_t q = 0; q < kQueries; ++q) {
      for (uint64_t id : truth_[q]) {
        for (const Hit& h : (*hits)[q]) found += std::get<uint64_t>(h.key) == id;
      }
    }
    return double(found) / double(kQueries * 10);
  }

  AnnDataset data_;
  base::TestTempDir dir_{"auto_spec"};  // outlives db_
  std::unique_ptr<DB> db_;
  std::vector<std::vector<uint64_t>> truth_;
};

TEST_P(AutoSpecTest, AutoSpecMeetsItsTargetRecall) {
  ASSERT_TRUE(db_->BuildIndex("c", "auto").ok());
  auto info = db_->DescribeCollection("c");
  ASSERT_TRUE(info.ok());
  if (GetParam().dim == 48) {
    EXPECT_THAT(info->index, HasSubstr("quant=rabitq:bits=5"));  // the low-dimension rule
  } else {                                                       // 1024-d: 2-bit codes
    EXPECT_THAT(info->index, HasSubstr("quant=rabitq:bits=2"));
  }
  EXPECT_THAT(info->index, HasSubstr("calibration_queries=1000"));  // at every dimension
  EXPECT_THAT(info->index, HasSubstr("centroids=data"));            // the posting size measured
  EXPECT_THAT(info->index, HasSubstr("target_recall=0.95"));
  // The default search: the index's calibrated target.
  SearchStats default_stats;
  const double recall = Recall({}, &default_stats);
  EXPECT_GE(recall, 0.95 - kTolerance);
  for (float target : {0.8f, 0.9f, 0.99f}) {
    SCOPED_TRACE(target);
    EXPECT_GE(Recall({.target_recall = target}), target - kTolerance);
  }
  // The calibration picks fewer postings for a lower target: scans are not all the same.
  SearchStats low_stats;
  Recall({.target_recall = 0.8f}, &low_stats);
  EXPECT_LT(low_stats.postings_read, default_stats.postings_read);
  // max_postings (experts) still overrides the target.
  SearchStats one;
  Recall({.max_postings = 1, .target_recall = 0.99f}, &one);
  EXPECT_EQ(one.postings_read, kQueries);
}

INSTANTIATE_TEST_SUITE_P(Metrics, AutoSpecTest,
                         ::testing::Values(Shape{Metric::kL2, 48}, Shape{Metric::kInnerProduct, 48},
                                           Shape{Metric::kCosine, 48}, Shape{Metric::kL2, 1024},
                                           Shape{Metric::kCosine, 1024}),
                         [](const auto& info) {
                           return absl::StrCat(info.param.metric == Metric::kL2 ? "L2"
                                               : info.param.metric == Metric::kCosine
                                                   ? "Cosine"
                                                   : "InnerProduct",
                                               "_", info.param.dim);
                         });

TEST(AutoSpecDbTest, CalibrationSurvivesReopenAndBadTargetsAreRejected) {
  auto ds = LoadDataset("embedding:n=3000,d=40,q=50,seed=5,distance=euclidean");
  ASSERT_TRUE(ds.ok());
  const base::TestTempDir temp("auto_spec_reopen");
  const std::string& dir = temp.path();
  std::vector<std::vector<Hit>> before;
  const std::span<const float> queries(ds->test.data.data(), ds->test.data.size());
  SearchStats stats_before;
  {
    auto db = DB::Open(dir, Options{});
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->CreateCollection({"c", 40, Metric::kL2}).ok());
    std::vector<Record> batch;
    for (size_t i = 0; i < ds->train.rows; ++i) {
      batch.push_back({uint64_t(i), std::vector<float>(ds->train.Row(i), ds->train.Row(i) + 40)});
    }
    ASSERT_TRUE((*db)->Upsert("c", batch, {}).ok());
    // An explicit spec is calibrated too; "spann:auto,key=value" overrides the choice.
    ASSERT_TRUE((*db)->BuildIndex("c", "spann:auto,replicas=2,target_recall=0.9").ok());
    auto info = (*db)->DescribeCollection("c");
    ASSERT_TRUE(info.ok());
    EXPECT_THAT(info->index, HasSubstr("replicas=2"));
    EXPECT_THAT(info->index, HasSubstr("target_recall=0.9"));
    auto hits = (*db)->Search("c", queries, {.stats = &stats_before});
    ASSERT_TRUE(hits.ok());
    before = *std::move(hits);
    for (float bad : {-0.1f, 1.5f, std::nanf("")}) {
      auto s = (*db)->Search("c", queries, {.target_recall = bad});
      EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(s.status().message(), HasSubstr("target_recall"));
    }
    EXPECT_THAT((*db)->BuildIndex("c", "spann:auto,target_recall=2").message(),
                HasSubstr("spec.target_recall"));
  }
  auto db = DB::Open(dir, Options{});
  ASSERT_TRUE(db.ok());
  SearchStats stats_after;
  auto after = (*db)->Search("c", queries, {.stats = &stats_after});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, before);
  EXPECT_EQ(stats_after.postings_read, stats_before.postings_read);
  // Fewer postings than the spec's max_postings (32): the calibrated choice was reloaded.
  EXPECT_LT(stats_after.postings_read, 32 * ds->test.rows);
}

}  // namespace
}  // namespace shoal

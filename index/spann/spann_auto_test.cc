#include "index/spann/spann_auto.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "base/test_seed.h"
#include "index/spann/spann_calibration.h"
#include "index/topk.h"

namespace shoal::index {
namespace {

using ::testing::HasSubstr;

TEST(SpannAutoTest, BitsFollowTheDimensionAndRamBudget) {
  EXPECT_EQ(AutoSpannOptions({.n = 60000, .dim = 1536}).quant, "rabitq:bits=2");
  EXPECT_EQ(AutoSpannOptions({.n = 60000, .dim = 784}).quant, "rabitq:bits=3");
  EXPECT_EQ(AutoSpannOptions({.n = 60000, .dim = 256}).quant, "rabitq:bits=4");
  EXPECT_EQ(AutoSpannOptions({.n = 60000, .dim = 100}).quant, "rabitq:bits=5");
  EXPECT_EQ(AutoSpannOptions({.n = 60000, .dim = 16}).quant, "none");
  const SpannOptions roomy = AutoSpannOptions({.n = 1000000, .dim = 768});
  EXPECT_EQ(roomy.replicas, 4u);
  // 1M x 768-d: 4 replicas of 3-bit codes take about 1.3 GB; with a 1 GiB budget (codes get
  // half) replicas halve (0.63 GB) and bits drop to 2 (0.44 GB); with 256 MiB even 1-bit codes
  // (0.25 GB) would take over half: they stay on the SSD, at two bits fewer, at least 2.
  const SpannOptions tight =
      AutoSpannOptions({.n = 1000000, .dim = 768, .ram_budget_bytes = 1ull << 30});
  EXPECT_EQ(tight.replicas, 2u);
  EXPECT_EQ(tight.quant, "rabitq:bits=2");
  EXPECT_TRUE(tight.centroids_from_data);
  const SpannOptions tighter =
      AutoSpannOptions({.n = 1000000, .dim = 768, .ram_budget_bytes = 256ull << 20});
  EXPECT_EQ(tighter.replicas, 2u);
  EXPECT_EQ(tighter.quant, "rabitq:bits=2");
  EXPECT_NEAR(roomy.centroid_ratio, 1.0 / 64, 1e-9);
  EXPECT_TRUE(roomy.centroids_from_data);  // the ratio is the fallback
}

// The SSD regime (2M x 128-d under a RAM budget of 10% of the raw vectors): 2 replicas of 1-bit
// codes would take 176 MB of the 102 MB budget, so the codes are read from the SSD with their
// postings: 3 bits, two fewer than 128-d's 5 in RAM (at 2M x 128 reads per query at recall 0.95
// were 75 / 62 / 67 / 73 for 2 / 3 / 4 / 5 bits), and the rule's posting size, not the one
// measured for CPU (128 per posting there: 87 reads against the rule's 73; docs/PERFORMANCE.md).
TEST(SpannAutoTest, CodesOnTheSsdTakeFewerBitsAndTheRulesPostingSize) {
  const SpannOptions ssd =
      AutoSpannOptions({.n = 2000000, .dim = 128, .ram_budget_bytes = 102400000});
  EXPECT_EQ(ssd.quant, "rabitq:bits=3");
  EXPECT_EQ(ssd.replicas, 2u);
  EXPECT_FALSE(ssd.centroids_from_data);
  EXPECT_NEAR(ssd.centroid_ratio, 1.0 / 64, 1e-12);
  // At least 2 bits: 960-d takes 3 in RAM.
  EXPECT_EQ(AutoSpannOptions({.n = 2000000, .dim = 960, .ram_budget_bytes = 76800000}).quant,
            "rabitq:bits=2");
  // Where 1-bit codes fit in half the budget, bits still drop until they fit: 2M x 128-d with
  // 400 MB holds 2 replicas of 1-bit (176 MB) but not of 2-bit (240 MB) codes.
  const SpannOptions fits =
      AutoSpannOptions({.n = 2000000, .dim = 128, .ram_budget_bytes = 400000000});
  EXPECT_EQ(fits.quant, "rabitq:bits=1");
  EXPECT_TRUE(fits.centroids_from_data);
}

TEST(SpannAutoTest, CalibrationSamplesAThousandQueriesWhateverNAndDimension) {
  // The sample's standard error, not the ground truth's cost, decides: a large n gets as many
  // queries as a small one (200 at 10M x 128 let target 0.95 land at 0.9455).
  for (size_t n : {50000, 100000, 2000000, 10000000}) {
    for (size_t dim : {100, 128, 256, 639, 784, 1536}) {
      EXPECT_EQ(AutoSpannOptions({.n = n, .dim = dim}).calibration_queries, 1000u)
          << n << " " << dim;
    }
  }
  EXPECT_EQ(AutoSpannOptions({.n = 10000000, .dim = 128, .ram_budget_bytes = 512000000})
                .calibration_queries,
            1000u);
}

TEST(SpannAutoTest, PostingsHoldMoreVectorsFrom1024Dimensions) {
  // 64 vectors per posting below 1024-d (Fashion-MNIST's 784-d, the 960-d set), 256 from it.
  for (size_t dim : {100, 784, 960, 1023}) {
    EXPECT_NEAR(AutoSpannOptions({.n = 50000, .dim = dim}).centroid_ratio, 1.0 / 64, 1e-12) << dim;
  }
  for (size_t dim : {1024, 1536, 3072}) {
    EXPECT_NEAR(AutoSpannOptions({.n = 50000, .dim = dim}).centroid_ratio, 1.0 / 256, 1e-12) << dim;
  }
  // Explicit keys still win over the rule.
  auto o = ResolveSpannSpec("spann:auto,centroid_ratio=0.02", {.n = 50000, .dim = 1536});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_NEAR(o->centroid_ratio, 0.02, 1e-12);
}

TEST(SpannAutoTest, ResolveAppliesExplicitKeysOverTheChoice) {
  const DataShape shape{.n = 60000, .dim = 100, .metric = Metric::kInnerProduct};
  for (const char* spec : {"", "auto", "spann:auto"}) {
    auto o = ResolveSpannSpec(spec, shape);
    ASSERT_TRUE(o.ok()) << spec << ": " << o.status();
    EXPECT_EQ(o->quant, "rabitq:bits=5") << spec;
  }
  auto o = ResolveSpannSpec("spann:auto,replicas=2,quant=sq8", shape);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->replicas, 2u);
  EXPECT_EQ(o->quant, "sq8");
  // Not auto: the plain defaults.
  auto plain = ResolveSpannSpec("spann:replicas=2", shape);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->quant, "none");
  EXPECT_THAT(ResolveSpannSpec("spann:auto,replicas=99", shape).status().message(),
              HasSubstr("spec.replicas"));
  EXPECT_THAT(ResolveSpannSpec("autox", shape).status().message(), HasSubstr("unknown index"));
}

TEST(SpannCalibrationTest, PicksTheSmallestSettingThatMetTheTarget) {
  const std::vector<CalibrationPoint> table = {{1, 0.5f}, {2, 0.8f}, {4, 0.93f}, {8, 0.97f}};
  EXPECT_EQ(MaxPostingsForRecall(table, 0.5f), 1u);
  EXPECT_EQ(MaxPostingsForRecall(table, 0.9f), 4u);
  EXPECT_EQ(MaxPostingsForRecall(table, 0.95f), 8u);
  EXPECT_EQ(MaxPostingsForRecall(table, 0.99f), 8u);  // none met it: the best measured
  EXPECT_EQ(MaxPostingsForRecall({}, 0.9f), 0u);
}

TEST(SpannCalibrationTest, EstimateRecallGivesTheMeanAndItsStandardError) {
  const RecallEstimate none = EstimateRecall({});
  EXPECT_EQ(none.mean, 0);
  EXPECT_EQ(none.se, 0);
  const std::vector<double> same = {0.9, 0.9, 0.9};
  EXPECT_NEAR(EstimateRecall(same).mean, 0.9, 1e-12);
  EXPECT_NEAR(EstimateRecall(same).se, 0, 1e-12);
  // {1, 0.8}: mean 0.9, sample sd sqrt(0.02), se sqrt(0.02 / 2) = 0.1.
  const std::vector<double> two = {1.0, 0.8};
  EXPECT_NEAR(EstimateRecall(two).mean, 0.9, 1e-12);
  EXPECT_NEAR(EstimateRecall(two).se, 0.1, 1e-12);
}

// An index whose recall grows with max_postings at a rate that differs per query: a query equal
// to row r returns itself and its exact nearest neighbours up to rank m * (r % 4 + 1) / 4 (of
// 10). It records the rows of the first batch it is asked (the calibration's sample).
class StepIndex final : public VectorIndex {
 public:
  StepIndex(const std::vector<float>* data, size_t dim, Metric metric = Metric::kL2)
      : data_(data), dim_(dim), metric_(metric) {}
  size_t dimension() const override { return dim_; }
  size_t MemoryBytes() const override { return 0; }
  absl::Status Add(std::span<const uint64_t>, const float*, std::span<const uint32_t>) override {
    return absl::UnimplementedError("Add");
  }
  absl::Status Remove(std::span<const uint64_t>) override {
    return absl::UnimplementedError("Remove");
  }
  absl::StatusOr<std::vector<std::vector<Neighbor>>> Search(
      const float* queries, size_t n, const SearchParameters& p) const override {
    std::vector<std::vector<Neighbor>> out(n);
    const size_t rows = data_->size() / dim_;
    const bool first = sample_.empty();
    for (size_t j = 0; j < n; ++j) {
      TopK<uint64_t> top(p.k);
      for (size_t r = 0; r < rows; ++r) {
        top.Push(Distance(metric_, queries + j * dim_, data_->data() + r * dim_, dim_), r);
      }
      const std::vector<TopK<uint64_t>::Entry> sorted = top.TakeSorted();
      const uint64_t self = sorted[0].id;  // distance 0
      if (first) sample_.push_back(self);
      asked_.insert(self);
      // With pruning, a query scans at most Cap(row, ratio) postings.
      const uint32_t scanned = p.pruning_ratio > 0
                                   ? std::min(p.max_postings, Cap(self, p.pruning_ratio))
                                   : p.max_postings;
      if (p.stats != nullptr) p.stats->postings_read += scanned;
      const size_t keep = 1 + Kept(self, scanned);
      for (const auto& e : sorted) {
        if (out[j].size() < keep) out[j].push_back({e.id, e.distance});
      }
    }
    return out;
  }
  static size_t Kept(uint64_t row, uint32_t m) {
    return std::min<size_t>(10, m * (row % 4 + 1) / 4);
  }
  static uint32_t Cap(uint64_t row, float ratio) {
    return static_cast<uint32_t>(ratio * 10) * static_cast<uint32_t>(row % 3 + 1);
  }
  const std::vector<uint64_t>& sample() const { return sample_; }
  const std::set<uint64_t>& asked() const { return asked_; }  // every query's row

 private:
  const std::vector<float>* data_;
  size_t dim_;
  Metric metric_;
  mutable std::vector<uint64_t> sample_;
  mutable std::set<uint64_t> asked_;
};

// 400 Gaussian 8-d rows behind a StepIndex, calibrated with 100 queries and 60 postings.
class StepCalibrationTest : public ::testing::Test {
 protected:
  static constexpr size_t kDim = 8, kRows = 400;
  StepCalibrationTest() : data(kRows * kDim), ids(kRows), index(&data, kDim) {
    std::mt19937_64 rng(7);
    std::normal_distribution<float> g;
    for (float& x : data) x = g(rng);
    for (size_t i = 0; i < kRows; ++i) ids[i] = i;
    in.queries = 100;
  }
  std::vector<float> data;
  std::vector<uint64_t> ids;
  StepIndex index;
  CalibrationInput in{&index, ids, data.data(), kDim, Metric::kL2, /*num_postings=*/60};
};

// The pruned ladders: per ratio, each row's recall is the mean less one standard error at the
// postings each query scanned (pruning caps them), its postings their mean; a ladder ends once
// every query is capped (when recall 0.999 does not end it first).
TEST_F(StepCalibrationTest, PrunedLaddersCountThePostingsEachQueryScanned) {
  const std::vector<float> ratios = {1.2f, 2.0f};
  std::vector<PrunedCalibration> pruned;
  auto table = CalibrateSpann(in, ratios, &pruned);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(pruned.size(), 2u);
  ASSERT_EQ(index.asked().size(), 100u);  // the unpruned ladder's sample, asked again
  for (const PrunedCalibration& c : pruned) {
    SCOPED_TRACE(c.ratio);
    ASSERT_FALSE(c.table.empty());
    uint32_t widest = 0;  // the largest cap in the sample: where every query is capped
    for (uint64_t row : index.asked()) widest = std::max(widest, StepIndex::Cap(row, c.ratio));
    for (const PrunedPoint& p : c.table) {
      std::vector<double> per_query;
      double postings = 0;
      for (uint64_t row : index.asked()) {
        const uint32_t scanned = std::min(p.max_postings, StepIndex::Cap(row, c.ratio));
        per_query.push_back(StepIndex::Kept(row, scanned) / 10.0);
        postings += scanned;
      }
      const RecallEstimate e = EstimateRecall(per_query);
      EXPECT_NEAR(p.recall, std::max(0.0, e.mean - e.se), 1e-6) << p.max_postings;
      EXPECT_NEAR(p.postings, postings / 100, 1e-4) << p.max_postings;
    }
    // Ratio 1.2 caps every query at 12-36 postings: its ladder ends at the first rung past the
    // widest cap. Ratio 2.0 caps them at 20-60, and a query capped at 20 that needs 40 keeps
    // recall below 0.999: that ladder ends once its recall stayed flat for 4 rungs (from 40, where
    // the last uncapped queries found their 10), short of the last posting.
    if (c.ratio < 1.5f) {
      EXPECT_GT(c.table.back().max_postings, widest);
      EXPECT_LE(c.table[c.table.size() - 2].max_postings, widest);
    } else {
      ASSERT_GE(c.table.size(), 6u);
      const size_t last = c.table.size() - 1;
      EXPECT_LT(c.table.back().max_postings, 60u);
      EXPECT_EQ(c.table[last].recall, c.table[last - 4].recall);
      EXPECT_LT(c.table[last - 5].recall, c.table[last - 4].recall);
    }
  }
}

TEST_F(StepCalibrationTest, LadderIsFineAndEachRowIsTheMeanLessOneStandardError) {
  auto table = CalibrateSpann(in);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(index.sample().size(), 100u);
  // Recall 1 for every query needs m >= 40 (rows with r % 4 == 0 keep m / 4 neighbours), or
  // less when the sample has none of them.
  ASSERT_GE(table->size(), 16u);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ((*table)[i].max_postings, i + 1);
  for (size_t i = 16; i < table->size(); ++i) {
    const uint32_t prev = (*table)[i - 1].max_postings, m = (*table)[i].max_postings;
    EXPECT_GT(m, prev);
    EXPECT_LE(m - prev, std::max(1u, prev / 16));
  }
  auto expected = [&](uint32_t m) {
    std::vector<double> per_query;
    for (uint64_t row : index.sample()) per_query.push_back(StepIndex::Kept(row, m) / 10.0);
    return EstimateRecall(per_query);
  };
  EXPECT_EQ(table->back().max_postings, 40u);  // the first rung where every query found its 10
  for (const CalibrationPoint& row : *table) {
    const RecallEstimate e = expected(row.max_postings);
    EXPECT_NEAR(row.recall, std::max(0.0, e.mean - e.se), 1e-6) << row.max_postings;
    if (e.se > 0) {
      EXPECT_LT(row.recall, e.mean) << row.max_postings;
    }
  }
  // So a target is met only where the mean clears it by the margin.
  const RecallEstimate at = expected(MaxPostingsForRecall(*table, 0.9f));
  EXPECT_GE(at.mean - at.se, 0.9);
}

// The CPU backend, counting its AssignTopM calls.
class CountingBackend final : public ClusteringBackend {
 public:
  std::string name() const override { return "counting"; }
  absl::Status AssignTopM(const float* points, size_t n, const float* centroids, size_t k, size_t d,
                          size_t m, const float* bias, uint32_t* labels,
                          float* distances) override {
    ++calls;
    return cpu_->AssignTopM(points, n, centroids, k, d, m, bias, labels, distances);
  }
  int calls = 0;

 private:
  std::unique_ptr<ClusteringBackend> cpu_ = MakeCpuClusteringBackend(2);
};

TEST(SpannCalibrationTest, TheBackendsGroundTruthGivesTheScansTable) {
  constexpr size_t kDim = 16, kRows = 3000;
  std::mt19937_64 rng(base::TestSeed());
  std::normal_distribution<float> g;
  std::vector<float> data(kRows * kDim);
  for (float& x : data) x = g(rng);
  for (size_t j = 0; j < kDim; ++j) data[7 * kDim + j] = data[5 * kDim + j];  // a duplicate row
  std::vector<uint64_t> ids(kRows);
  for (size_t i = 0; i < kRows; ++i) ids[i] = i;  // StepIndex answers rows
  StepIndex scanned(&data, kDim), kernel(&data, kDim);
  CalibrationInput in{&scanned, ids, data.data(), kDim, Metric::kL2, /*num_postings=*/60};
  in.queries = 300;
  in.seed = rng();
  auto by_scan = CalibrateSpann(in);
  ASSERT_TRUE(by_scan.ok()) << by_scan.status();
  CountingBackend backend;
  in.index = &kernel;
  in.backend = &backend;
  auto by_kernel = CalibrateSpann(in);
  ASSERT_TRUE(by_kernel.ok()) << by_kernel.status();
  EXPECT_EQ(backend.calls, 1);
  auto same_table = [&](const std::vector<CalibrationPoint>& table) {
    ASSERT_EQ(table.size(), by_scan->size());
    for (size_t i = 0; i < table.size(); ++i) {
      EXPECT_EQ(table[i].max_postings, (*by_scan)[i].max_postings);
      EXPECT_FLOAT_EQ(table[i].recall, (*by_scan)[i].recall) << i;
    }
  };
  same_table(*by_kernel);
  // In blocks of rows (the last one shorter than the kernel's 11), merged per query.
  in.backend_block_rows = 299;  // 10 blocks of 299 rows and one of 10
  StepIndex blocked(&data, kDim);
  in.index = &blocked;
  auto by_blocks = CalibrateSpann(in);
  ASSERT_TRUE(by_blocks.ok()) << by_blocks.status();
  EXPECT_EQ(backend.calls, 1 + 11);
  same_table(*by_blocks);
  // Inner product keeps the scan (the kernel ranks by L2)...
  in.metric = Metric::kInnerProduct;
  ASSERT_TRUE(CalibrateSpann(in).ok());
  EXPECT_EQ(backend.calls, 12);
  // ...unless every vector has unit length (cosine's index form): the L2 order is then the inner
  // product's, and the kernel's ground truth gives the scan's table.
  for (size_t i = 0; i < kRows; ++i) {
    float norm = 0;
    for (size_t j = 0; j < kDim; ++j) norm += data[i * kDim + j] * data[i * kDim + j];
    for (size_t j = 0; j < kDim; ++j) data[i * kDim + j] /= std::sqrt(norm);
  }
  StepIndex ip_scanned(&data, kDim, Metric::kInnerProduct),
      ip_kernel(&data, kDim, Metric::kInnerProduct);
  in.index = &ip_scanned;
  in.backend = nullptr;
  auto ip_by_scan = CalibrateSpann(in);
  ASSERT_TRUE(ip_by_scan.ok()) << ip_by_scan.status();
  in.index = &ip_kernel;
  in.backend = &backend;
  in.unit_norm = true;
  auto ip_by_kernel = CalibrateSpann(in);
  ASSERT_TRUE(ip_by_kernel.ok()) << ip_by_kernel.status();
  EXPECT_EQ(backend.calls, 12 + 11);  // still in blocks of 299 rows
  ASSERT_EQ(ip_by_kernel->size(), ip_by_scan->size());
  for (size_t i = 0; i < ip_by_scan->size(); ++i) {
    EXPECT_EQ((*ip_by_kernel)[i].max_postings, (*ip_by_scan)[i].max_postings);
    EXPECT_FLOAT_EQ((*ip_by_kernel)[i].recall, (*ip_by_scan)[i].recall) << i;
  }
}

}  // namespace
}  // namespace shoal::index

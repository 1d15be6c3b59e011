// Tests of the bench's measuring helpers: recall@k, latency percentiles, CSV rows.
#include <atomic>
#include <cmath>
#include <fstream>
#include <sstream>

#include "bench/dataset_export.h"
#include "bench/recall.h"
#include "bench/report.h"
#include "bench/sweep.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/dataset.h"

namespace shoal::bench {
namespace {

Neighbors Make(std::vector<std::vector<int64_t>> rows, std::vector<std::vector<float>> dist = {}) {
  Neighbors n(rows.size(), rows[0].size());
  for (size_t q = 0; q < rows.size(); ++q) {
    for (size_t j = 0; j < n.k; ++j) {
      n.Ids(q)[j] = rows[q][j];
      n.Distances(q)[j] = dist.empty() ? 0 : dist[q][j];
    }
  }
  return n;
}

TEST(RecallTest, CountsIdsInTheTruthsTopKIgnoringOrder) {
  Neighbors truth = Make({{1, 2, 3}, {4, 5, 6}});
  EXPECT_DOUBLE_EQ(RecallAtK(Make({{3, 2, 1}, {4, 5, 6}}), truth, 3), 1.0);
  EXPECT_DOUBLE_EQ(RecallAtK(Make({{1, 9, -1}, {7, 8, 6}}), truth, 3), 2.0 / 6);
  EXPECT_DOUBLE_EQ(RecallAtK(Make({{1, 9, 9}, {4, 9, 9}}), truth, 1), 1.0);
}

TEST(RecallTest, TiesAtTheKthDistanceCountWhenAsked) {
  Neighbors truth = Make({{1, 2}}, {{1.0f, 2.0f}});
  Neighbors found = Make({{1, 7}}, {{1.0f, 2.0f}});  // 7 is as close as 2
  EXPECT_DOUBLE_EQ(RecallAtK(found, truth, 2), 0.5);
  EXPECT_DOUBLE_EQ(RecallAtK(found, truth, 2, 1e-4), 1.0);
}

TEST(ReportTest, PercentilesUseNearestRank) {
  BatchTiming t;
  for (int i = 100; i >= 1; --i) t.call_us.push_back(i);
  EXPECT_EQ(t.CallPercentileUs(50), 50);
  EXPECT_EQ(t.CallPercentileUs(99), 99);
  EXPECT_EQ(t.CallPercentileUs(100), 100);
}

TEST(ReportTest, TimeBatchesCoversEveryQueryOnceAndStopsOnError) {
  std::vector<int> seen(10, 0);
  absl::StatusOr<BatchTiming> t = TimeBatches(10, 4, [&](size_t first, size_t n) {
    for (size_t i = first; i < first + n; ++i) ++seen[i];
    return absl::OkStatus();
  });
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->call_us.size(), 3u);
  EXPECT_EQ(seen, std::vector<int>(10, 1));
  absl::StatusOr<BatchTiming> bad =
      TimeBatches(10, 4, [](size_t, size_t) { return absl::InternalError("boom"); });
  EXPECT_EQ(bad.status().message(), "boom");
}

TEST(ReportTest, CsvWritesHeaderOnceAndEmptyFieldsForUnset) {
  const std::string path = ::testing::TempDir() + "bench_helpers_test.csv";
  std::remove(path.c_str());
  for (int i = 0; i < 2; ++i) {
    CsvWriter csv;
    ASSERT_TRUE(csv.Open(path).ok());
    ResultRow row;
    row.system = "s";
    row.params = "a=1;b=2";
    row.threads = 2;
    row.qps = 10;
    ASSERT_TRUE(csv.Write(row).ok());
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), std::string(CsvWriter::kHeader) + "\ns,a=1;b=2,2,,10,,,,,,\n" +
                            "s,a=1;b=2,2,,10,,,,,,\n");
}

TEST(ReportTest, CsvFullVectorReadsIsTheLastColumn) {
  const std::string path = ::testing::TempDir() + "bench_helpers_test_full.csv";
  std::remove(path.c_str());
  {
    CsvWriter csv;
    ASSERT_TRUE(csv.Open(path).ok());
    ASSERT_TRUE(csv.Write({.system = "s", .qps = 1, .full_vector_reads_per_query = 40}).ok());
  }
  std::ifstream in(path);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_TRUE(header.ends_with(",full_vector_reads_per_query")) << header;
  EXPECT_EQ(row, "s,,1,,1,,,,,,40");
}

TEST(AnnRecallTest, HitWhenWithinTheTrueKthDistancePlusEpsilon) {
  // True 2nd distances 2.0 and 5.0; epsilon 1e-3 as ann-benchmarks.
  const std::vector<double> kth = {2.0, 5.0};
  Neighbors found = Make({{10, 11}, {20, 21}}, {{1.0f, 2.0009f}, {5.0f, 5.002f}});
  // Query 0: both within 2.001. Query 1: 5.0 is, 5.002 is not.
  EXPECT_DOUBLE_EQ(AnnBenchmarksRecall(found, kth, 2), (1.0 + 0.5) / 2);
  // Ids do not matter, only distances: a different point at the same distance is a hit.
  EXPECT_DOUBLE_EQ(AnnBenchmarksRecall(found, kth, 2, /*epsilon=*/0.01), 1.0);
}

TEST(AnnRecallTest, PaddingAndRepeatedIdsAreMisses) {
  const std::vector<double> kth = {3.0};
  EXPECT_DOUBLE_EQ(AnnBenchmarksRecall(Make({{1, -1, -1}}, {{0.0f, 0.0f, 0.0f}}), kth, 3), 1.0 / 3);
  EXPECT_DOUBLE_EQ(AnnBenchmarksRecall(Make({{1, 1, 2}}, {{1.0f, 1.0f, 2.0f}}), kth, 3), 2.0 / 3);
}

TEST(AnnRecallTest, TrueDistancesAreEuclideanNotSquared) {
  Matrix base{.rows = 2, .cols = 2, .data = {0, 0, 3, 4}};
  Matrix queries{.rows = 1, .cols = 2, .data = {0, 0}};
  Neighbors found = Make({{1, 0, -1}}, {{25.0f, 0.0f, 9.0f}});  // squared, as a system returns
  SetTrueDistances(base, queries, Metric::kL2, &found);
  EXPECT_FLOAT_EQ(found.Distances(0)[0], 5.0f);
  EXPECT_FLOAT_EQ(found.Distances(0)[1], 0.0f);
  EXPECT_FLOAT_EQ(found.Distances(0)[2], 0.0f);  // padding
  const float a[] = {1, 0}, b[] = {1, 1};
  EXPECT_NEAR(TrueDistance(a, b, 2, Metric::kCosine), 1 - 1 / std::sqrt(2.0), 1e-12);
  EXPECT_DOUBLE_EQ(TrueDistance(a, b, 2, Metric::kInnerProduct), -1.0);
}

TEST(QpsAtRecallTest, BestQpsAmongPointsReachingTheRecall) {
  const std::vector<RecallQps> curve = {{0.80, 9000}, {0.91, 5000}, {0.96, 3000}, {0.93, 6000}};
  EXPECT_EQ(QpsAtRecall(curve, 0.90), 6000);  // not the first point above 0.90: the fastest
  EXPECT_EQ(QpsAtRecall(curve, 0.95), 3000);
  EXPECT_EQ(QpsAtRecall(curve, 0.96), 3000);  // inclusive
  EXPECT_EQ(QpsAtRecall(curve, 0.99), std::nullopt);
  EXPECT_EQ(QpsAtRecall({}, 0.5), std::nullopt);
}

TEST(ReportTest, TimeClientsSplitsQueriesOverThreadsOnce) {
  std::vector<std::atomic<int>> seen(103);
  std::vector<std::atomic<int>> started(3);
  absl::StatusOr<BatchTiming> t = TimeClients(
      103, 1, 3, [&](int thread) { ++started[thread]; },
      [&](int thread, size_t first, size_t n) {
        EXPECT_EQ(n, 1u);
        // Contiguous slices: thread t owns [103 t / 3, 103 (t + 1) / 3).
        EXPECT_GE(first, 103u * thread / 3);
        EXPECT_LT(first, 103u * (thread + 1) / 3);
        ++seen[first];
        return absl::OkStatus();
      });
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->call_us.size(), 103u);
  EXPECT_EQ(t->queries, 103u);
  for (const auto& s : seen) EXPECT_EQ(s.load(), 1);
  for (const auto& s : started) EXPECT_EQ(s.load(), 1);
}

TEST(QpsAtRecallTest, CpuQpsReadsTheCpuColumnAndSkipsUnmeasuredPoints) {
  const std::vector<RecallQps> curve = {{0.96, 3000, 4000}, {0.97, 2000, 0}, {0.93, 6000, 7000}};
  EXPECT_EQ(CpuQpsAtRecall(curve, 0.90), 7000);
  EXPECT_EQ(CpuQpsAtRecall(curve, 0.95), 4000);
  EXPECT_EQ(CpuQpsAtRecall(curve, 0.97), std::nullopt);  // reached, but no CPU time measured
}

TEST(ReportTest, TimeClientsCountsTheClientsCpuTime) {
  // Each call spins ~2 ms of this thread's CPU time: CPU time is at least that, per call and in
  // all, and a pass asked for no per-call CPU times has none.
  auto spin = [](int, size_t, size_t) {
    const double until = ThreadCpuSeconds() + 0.002;
    while (ThreadCpuSeconds() < until) {
    }
    return absl::OkStatus();
  };
  absl::StatusOr<BatchTiming> t = TimeClients(
      6, 1, 2, [](int) {}, spin, /*per_call_cpu=*/true);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->call_cpu_us.size(), 6u);
  for (double us : t->call_cpu_us) EXPECT_GE(us, 2000);
  EXPECT_GE(t->cpu_seconds, 0.012);
  EXPECT_GT(t->CpuQps(), 0);
  absl::StatusOr<BatchTiming> plain = TimeClients(
      2, 1, 1, [](int) {}, spin);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->call_cpu_us.empty());
  EXPECT_GE(plain->cpu_seconds, 0.004);
}

TEST(ReportTest, TimeClientsReturnsAThreadsError) {
  absl::StatusOr<BatchTiming> t = TimeClients(
      50, 4, 2, [](int) {},
      [](int thread, size_t first, size_t) {
        return thread == 1 ? absl::InternalError("client 1 failed") : absl::OkStatus();
      });
  EXPECT_EQ(t.status().message(), "client 1 failed");
}

TEST(SweepTest, GridIsTheCrossProductFirstKeySlowest) {
  absl::StatusOr<std::vector<GridPoint>> grid = ParseGrid("max_postings=4,8; pruning_ratio=0,1.5");
  ASSERT_TRUE(grid.ok()) << grid.status();
  ASSERT_EQ(grid->size(), 4u);
  EXPECT_EQ(GridPointString((*grid)[0]), "max_postings=4;pruning_ratio=0");
  EXPECT_EQ(GridPointString((*grid)[1]), "max_postings=4;pruning_ratio=1.5");
  EXPECT_EQ(GridPointString((*grid)[3]), "max_postings=8;pruning_ratio=1.5");
}

TEST(SweepTest, RejectsMalformedLists) {
  EXPECT_FALSE(ParseGrid("max_postings").ok());
  EXPECT_FALSE(ParseGrid("a=1;a=2").ok());
  EXPECT_FALSE(ParseGrid("a=1,x").ok());
  EXPECT_FALSE(ParseNumberList("", "--hnsw-ef").ok());
  absl::StatusOr<std::vector<double>> efs = ParseNumberList("10, 20,40", "--hnsw-ef");
  ASSERT_TRUE(efs.ok());
  EXPECT_EQ(*efs, (std::vector<double>{10, 20, 40}));
}

// The exported files read back through shoal's own readers (the layout SPTAG reads as DEFAULT).
TEST(DatasetExportTest, FbinAndIbinRoundTripThroughTheReaders) {
  Matrix m{.rows = 3, .cols = 2, .data = {1.5f, -2, 3, 4, 5, 6.25f}};
  const std::string base = ::testing::TempDir() + "export_test_base.fbin";
  ASSERT_TRUE(WriteFbin(base, m).ok());
  absl::StatusOr<Matrix> back = ReadVectors(base);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->rows, 3u);
  EXPECT_EQ(back->cols, 2u);
  EXPECT_EQ(back->data, m.data);

  const std::string first = ::testing::TempDir() + "export_test_first.fbin";
  ASSERT_TRUE(WriteFbinRows(first, m, 2).ok());
  back = ReadVectors(first);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->rows, 2u);
  EXPECT_EQ(back->data, (std::vector<float>{1.5f, -2, 3, 4}));

  const std::string after = ::testing::TempDir() + "export_test_after.fbin";  // warmup.fbin
  ASSERT_TRUE(WriteFbinRows(after, m, 2, 1).ok());
  back = ReadVectors(after);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->rows, 2u);
  EXPECT_EQ(back->data, (std::vector<float>{3, 4, 5, 6.25f}));

  const std::string truth = ::testing::TempDir() + "export_test_truth.ibin";
  Neighbors n = Make({{7, 1, 0}, {2, 2000000, 5}});
  ASSERT_TRUE(WriteIbin(truth, n).ok());
  absl::StatusOr<IntMatrix> ids = ReadIntVectors(truth);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->rows, 2u);
  EXPECT_EQ(ids->cols, 3u);
  EXPECT_EQ(ids->data, (std::vector<int32_t>{7, 1, 0, 2, 2000000, 5}));
}

TEST(DatasetExportTest, RejectsMoreRowsThanTheMatrixAndIdsOutsideInt32) {
  Matrix m{.rows = 1, .cols = 2, .data = {1, 2}};
  const std::string path = ::testing::TempDir() + "export_test_bad.fbin";
  absl::Status s = WriteFbinRows(path, m, 2);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("rows 2"));
  EXPECT_EQ(WriteFbinRows(path, m, 1, 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteFbinRows(path, m, 0, 2).code(), absl::StatusCode::kInvalidArgument);
  Neighbors n = Make({{int64_t{1} << 40}});
  s = WriteIbin(::testing::TempDir() + "export_test_bad.ibin", n);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("outside int32"));
}

TEST(DatasetExportTest, UnwritablePathIsInternalNamingThePath) {
  Matrix m{.rows = 1, .cols = 1, .data = {1}};
  absl::Status s = WriteFbin("/nonexistent_dir_for_export_test/x.fbin", m);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("/nonexistent_dir_for_export_test/x.fbin"));
}

}  // namespace
}  // namespace shoal::bench

// Tests of the bench's measuring helpers: recall@k, latency percentiles, CSV rows.
#include <fstream>
#include <sstream>

#include "bench/recall.h"
#include "bench/report.h"
#include "gtest/gtest.h"

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
  EXPECT_EQ(text.str(), std::string(CsvWriter::kHeader) + "\ns,a=1;b=2,2,,10,,,,,\n" +
                            "s,a=1;b=2,2,,10,,,,,\n");
}

}  // namespace
}  // namespace shoal::bench

// Exact search through the public API on Fashion-MNIST agrees with FAISS IndexFlatL2 on the top-10
// of 1000 queries, up to ties (ids may differ only where exact distances are equal).
#include <faiss/IndexFlat.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>

#include "shoal/dataset.h"
#include "shoal/db.h"

namespace shoal {
namespace {

constexpr size_t kQueries = 1000;
constexpr size_t kK = 10;

double ExactL2(const float* a, const float* b, size_t d) {
  double s = 0;
  for (size_t i = 0; i < d; ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return s;
}

TEST(FlatFaissTest, FashionMnistTop10MatchesIndexFlatL2) {
  auto ds = LoadDataset("fashion-mnist");
  if (absl::IsNotFound(ds.status())) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  ASSERT_TRUE(ds.ok()) << ds.status();
  const size_t d = ds->train.cols, n = ds->train.rows;
  ASSERT_EQ(d, 784u);
  ASSERT_GE(ds->test.rows, kQueries);

  std::string tmpl = ::testing::TempDir() + "flat_faiss_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  auto db = DB::Open(tmpl, Options{});
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)->CreateCollection({"fmnist", uint32_t(d), Metric::kL2}).ok());
  for (size_t begin = 0; begin < n; begin += 5000) {
    std::vector<Record> batch;
    for (size_t i = begin; i < std::min(n, begin + 5000); ++i) {
      batch.push_back({uint64_t(i), std::vector<float>(ds->train.Row(i), ds->train.Row(i) + d)});
    }
    ASSERT_TRUE((*db)->Upsert("fmnist", batch, {}).ok());
  }
  std::span<const float> queries(ds->test.data.data(), kQueries * d);
  auto ours = (*db)->Search("fmnist", queries, {.k = kK});
  ASSERT_TRUE(ours.ok()) << ours.status();

  faiss::IndexFlatL2 flat(d);
  flat.add(n, ds->train.data.data());
  std::vector<float> fd(kQueries * kK);
  std::vector<faiss::Index::idx_t> fi(kQueries * kK);
  flat.search(kQueries, ds->test.data.data(), kK, fd.data(), fi.data());

  size_t identical = 0;
  for (size_t q = 0; q < kQueries; ++q) {
    const float* qv = ds->test.Row(q);
    ASSERT_EQ((*ours)[q].size(), kK);
    std::vector<double> a, b;
    std::vector<int64_t> ids;
    for (size_t j = 0; j < kK; ++j) {
      const uint64_t id = std::get<uint64_t>((*ours)[q][j].key);
      ids.push_back(int64_t(id));
      a.push_back(ExactL2(qv, ds->train.Row(id), d));
      b.push_back(ExactL2(qv, ds->train.Row(fi[q * kK + j]), d));
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    for (size_t j = 0; j < kK; ++j) {
      ASSERT_NEAR(a[j], b[j], 1e-6 * std::max(1.0, b[j])) << "query " << q << " rank " << j;
    }
    identical += std::equal(ids.begin(), ids.end(), fi.begin() + q * kK);
  }
  std::printf("identical top-10 id lists: %zu / %zu\n", identical, kQueries);
  EXPECT_GE(identical, kQueries * 99 / 100);
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace shoal

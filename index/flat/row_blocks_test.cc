#include "index/flat/row_blocks.h"

#include <random>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"

namespace shoal::index {
namespace {

// Row i holds i in every dimension, norm i / 2 and id 3i: any mix-up of block or offset shows.
void AppendNumbered(RowBlocks& rows, size_t n) {
  std::vector<float> v(rows.dim());
  for (size_t i = rows.size(); i < n; ++i) {
    std::fill(v.begin(), v.end(), static_cast<float>(i));
    rows.Append(3 * i, v.data(), static_cast<float>(i) / 2);
  }
}

TEST(RowBlocksTest, RowsAndRunsMatchAcrossBlockBoundaries) {
  const size_t dim = 3, n = 3 * RowBlocks::kBlockRows + 11;
  RowBlocks rows(dim);
  AppendNumbered(rows, n);
  ASSERT_EQ(rows.size(), n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(rows.row(i)[dim - 1], static_cast<float>(i)) << i;
    ASSERT_EQ(rows.norm(i), static_cast<float>(i) / 2) << i;
    ASSERT_EQ(rows.id(i), 3 * i) << i;
  }
  std::mt19937 rng(base::TestSeed());
  std::vector<std::pair<size_t, size_t>> ranges = {{0, n}, {0, 0}, {63, 65}, {4095, 4097}};
  for (int r = 0; r < 50; ++r) {
    const size_t a = rng() % (n + 1), b = rng() % (n + 1);
    ranges.emplace_back(std::min(a, b), std::max(a, b));
  }
  for (const auto& [begin, end] : ranges) {
    size_t next = begin;
    rows.ForEachRun(begin, end,
                    [&](size_t first, const float* vectors, const float* norms, const uint64_t* ids,
                        size_t count) {
                      ASSERT_EQ(first, next);
                      ASSERT_GT(count, 0u);
                      for (size_t j = 0; j < count; ++j) {
                        ASSERT_EQ(vectors[j * dim], static_cast<float>(first + j));
                        ASSERT_EQ(norms[j], static_cast<float>(first + j) / 2);
                        ASSERT_EQ(ids[j], 3 * (first + j));
                      }
                      next += count;
                    });
    EXPECT_EQ(next, end) << begin << ".." << end;
  }
}

TEST(RowBlocksTest, RemoveMovesTheLastRowAndFreesEmptyBlocksWithOneSpare) {
  RowBlocks rows(4);
  AppendNumbered(rows, 2 * RowBlocks::kBlockRows);
  const size_t full = rows.MemoryBytes();
  rows.RemoveByMovingLast(5);
  EXPECT_EQ(rows.size(), 2 * RowBlocks::kBlockRows - 1);
  EXPECT_EQ(rows.id(5), 3 * (2 * RowBlocks::kBlockRows - 1));
  EXPECT_EQ(rows.row(5)[0], static_cast<float>(2 * RowBlocks::kBlockRows - 1));
  while (rows.size() > 1) rows.RemoveByMovingLast(rows.size() - 1);
  EXPECT_LT(rows.MemoryBytes(), full / 8);
  AppendNumbered(rows, RowBlocks::kBlockRows + 1);  // blocks come back
  EXPECT_EQ(rows.row(RowBlocks::kBlockRows)[0], static_cast<float>(RowBlocks::kBlockRows));
  rows.RemoveByMovingLast(0);
  EXPECT_EQ(rows.id(0), 3 * RowBlocks::kBlockRows);
}

}  // namespace
}  // namespace shoal::index

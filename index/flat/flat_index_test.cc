#include "index/flat/flat_index.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"
#include "index/flat/row_blocks.h"
#include "index/id_filter.h"

namespace shoal::index {
namespace {

uint32_t Seed() { return base::TestSeed(); }

struct Ref {
  double distance;
  uint64_t id;
};

// Naive oracle in double precision over (id, vector) pairs; ties by smaller id.
std::vector<Ref> NaiveSearch(const std::vector<std::pair<uint64_t, std::vector<float>>>& rows,
                             const float* q, size_t k, Metric metric) {
  std::vector<Ref> all;
  for (const auto& [id, v] : rows) {
    double s = 0;
    for (size_t d = 0; d < v.size(); ++d) {
      s += metric == Metric::kL2 ? (double(q[d]) - v[d]) * (double(q[d]) - v[d])
                                 : -double(q[d]) * v[d];
    }
    all.push_back({s, id});
  }
  std::sort(all.begin(), all.end(), [](const Ref& a, const Ref& b) {
    return a.distance < b.distance || (a.distance == b.distance && a.id < b.id);
  });
  all.resize(std::min(k, all.size()));
  return all;
}

class Dataset {
 public:
  Dataset(size_t dim, Metric metric) : index_(dim, metric), dim_(dim), metric_(metric) {}
  void Add(uint64_t id, std::vector<float> v) {
    index_.Add(id, v.data());
    std::erase_if(rows_, [id](const auto& r) { return r.first == id; });
    rows_.emplace_back(id, std::move(v));
  }
  bool Remove(uint64_t id) {
    std::erase_if(rows_, [id](const auto& r) { return r.first == id; });
    return index_.Remove(id);
  }
  const FlatIndex& index() const { return index_; }
  std::vector<Ref> Naive(const float* q, size_t k, const IdFilter* allow = nullptr) const {
    if (allow == nullptr) return NaiveSearch(rows_, q, k, metric_);
    std::vector<std::pair<uint64_t, std::vector<float>>> allowed;
    for (const auto& r : rows_) {
      if (allow->Allows(r.first)) allowed.push_back(r);
    }
    return NaiveSearch(allowed, q, k, metric_);
  }
  const std::vector<std::pair<uint64_t, std::vector<float>>>& rows() const { return rows_; }
  size_t dim() const { return dim_; }

 private:
  FlatIndex index_;
  std::vector<std::pair<uint64_t, std::vector<float>>> rows_;
  size_t dim_;
  Metric metric_;
};

// Our result must equal the oracle up to ties: the same count, each rank's distance equal
// within `rel` (relative to the distance scale), and every id a true member at that distance.
void ExpectMatches(const std::vector<Neighbor>& got, const std::vector<Ref>& want, double scale,
                   double rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t r = 0; r < got.size(); ++r) {
    EXPECT_NEAR(got[r].distance, want[r].distance, rel * scale) << what << " rank " << r;
  }
  if (rel == 0) {
    for (size_t r = 0; r < got.size(); ++r)
      EXPECT_EQ(got[r].id, want[r].id) << what << " rank " << r;
  }
}

std::vector<float> RandomVector(std::mt19937& rng, size_t dim, float lo, float hi, bool integer) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(dim);
  for (auto& x : v) x = integer ? std::floor(u(rng)) : u(rng);
  return v;
}

// Small integers keep every sum exact in float: results must match the oracle exactly,
// ids and tie-breaking included. Many duplicates force ties (and the exact fallback).
void CheckExactOnIntegers(Metric metric, size_t threads) {
  std::mt19937 rng(Seed());
  const size_t dim = 37;
  Dataset data(dim, metric);
  std::vector<std::vector<float>> distinct;
  for (int i = 0; i < 40; ++i) distinct.push_back(RandomVector(rng, dim, 0, 4, true));
  for (uint64_t id = 0; id < 1500; ++id) data.Add(id * 3 + 1, distinct[rng() % distinct.size()]);
  std::vector<float> queries;
  const size_t nq = 45;
  for (size_t i = 0; i < nq; ++i) {
    const auto q = RandomVector(rng, dim, 0, 4, true);
    queries.insert(queries.end(), q.begin(), q.end());
  }
  for (size_t k : {1, 10, 50}) {
    const auto got = data.index().Search(queries.data(), nq, k, threads);
    for (size_t i = 0; i < nq; ++i) {
      ExpectMatches(got[i], data.Naive(&queries[i * dim], k), 1, 0,
                    "k " + std::to_string(k) + " query " + std::to_string(i));
    }
  }
}

TEST(FlatIndexTest, L2ExactWithTiesBySmallerId) { CheckExactOnIntegers(Metric::kL2, 1); }
TEST(FlatIndexTest, InnerProductExactWithTiesBySmallerId) {
  CheckExactOnIntegers(Metric::kInnerProduct, 1);
}
TEST(FlatIndexTest, ExactWithTiesMultiThreaded) { CheckExactOnIntegers(Metric::kL2, 3); }

// Fashion-MNIST-like scale (values 0..255, dim 784): squared distances ~1e7 where the norm
// expansion loses digits; results must still equal the double-precision oracle up to ties.
void CheckLargeValues(Metric metric) {
  std::mt19937 rng(Seed());
  const size_t dim = 784, n = 2500, nq = 60, k = 10;
  Dataset data(dim, metric);
  // Clustered: a few prototypes plus noise, so near neighbours are close and ranks are tight.
  std::vector<std::vector<float>> protos;
  for (int i = 0; i < 8; ++i) protos.push_back(RandomVector(rng, dim, 0, 256, true));
  std::uniform_int_distribution<int> noise(-20, 20);
  auto sample = [&] {
    std::vector<float> v = protos[rng() % protos.size()];
    for (auto& x : v) x = std::clamp<float>(x + noise(rng), 0, 255);
    return v;
  };
  for (uint64_t id = 0; id < n; ++id) data.Add(1000 + id, sample());
  std::vector<float> queries;
  for (size_t i = 0; i < nq; ++i) {
    const auto q = sample();
    queries.insert(queries.end(), q.begin(), q.end());
  }
  const auto got = data.index().Search(queries.data(), nq, k, 2);
  for (size_t i = 0; i < nq; ++i) {
    const auto want = data.Naive(&queries[i * dim], k);
    ExpectMatches(got[i], want, std::abs(want[0].distance) + 1, 1e-5, "query " + std::to_string(i));
    // The batched path (norm-ordered, pruned) must give exactly the per-query path's answer.
    const auto single = data.index().Search(&queries[i * dim], 1, k, 1)[0];
    ASSERT_EQ(single.size(), got[i].size());
    for (size_t r = 0; r < single.size(); ++r) {
      EXPECT_EQ(single[r].id, got[i][r].id) << "query " << i << " rank " << r;
      EXPECT_EQ(single[r].distance, got[i][r].distance) << "query " << i << " rank " << r;
    }
  }
}

TEST(FlatIndexTest, L2MatchesDoubleOracleAtLargeValues) { CheckLargeValues(Metric::kL2); }
TEST(FlatIndexTest, InnerProductMatchesDoubleOracleAtLargeValues) {
  CheckLargeValues(Metric::kInnerProduct);
}

TEST(FlatIndexTest, BatchThreadsAndSingleQueriesAgreeExactly) {
  std::mt19937 rng(Seed());
  const size_t dim = 100, nq = 70;
  for (Metric metric : {Metric::kL2, Metric::kInnerProduct}) {
    FlatIndex index(dim, metric);
    for (uint64_t id = 0; id < 3001; ++id)
      index.Add(id, RandomVector(rng, dim, -1, 1, false).data());
    std::vector<float> queries;
    for (size_t i = 0; i < nq; ++i) {
      const auto q = RandomVector(rng, dim, -1, 1, false);
      queries.insert(queries.end(), q.begin(), q.end());
    }
    const auto one = index.Search(queries.data(), nq, 20, 1);
    for (size_t threads : {2, 3, 0}) {
      const auto many = index.Search(queries.data(), nq, 20, threads);
      for (size_t i = 0; i < nq; ++i) {
        ASSERT_EQ(many[i].size(), one[i].size());
        for (size_t r = 0; r < one[i].size(); ++r) {
          EXPECT_EQ(many[i][r].id, one[i][r].id);
          EXPECT_EQ(many[i][r].distance, one[i][r].distance);
        }
      }
    }
    for (size_t i = 0; i < nq; i += 7) {
      const auto single = index.Search(&queries[i * dim], 1, 20, 1);
      ASSERT_EQ(single[0].size(), one[i].size());
      for (size_t r = 0; r < one[i].size(); ++r) {
        EXPECT_EQ(single[0][r].id, one[i][r].id);
        EXPECT_EQ(single[0][r].distance, one[i][r].distance);
      }
    }
  }
}

TEST(FlatIndexTest, AddReplacesAndRemoveSwapsWithLast) {
  std::mt19937 rng(Seed());
  const size_t dim = 19;
  Dataset data(dim, Metric::kL2);
  for (uint64_t id = 0; id < 300; ++id) data.Add(id * 7, RandomVector(rng, dim, 0, 8, true));
  for (uint64_t id = 0; id < 300; id += 3) data.Add(id * 7, RandomVector(rng, dim, 0, 8, true));
  for (uint64_t id = 0; id < 300; id += 4) EXPECT_TRUE(data.Remove(id * 7));
  EXPECT_FALSE(data.Remove(0));
  EXPECT_FALSE(data.Remove(5));
  EXPECT_EQ(data.index().size(), 300u - 75u);
  EXPECT_FALSE(data.index().Contains(0));
  EXPECT_TRUE(data.index().Contains(7));
  EXPECT_GT(data.index().MemoryBytes(), data.index().size() * dim * sizeof(float));
  std::vector<float> queries;
  for (size_t i = 0; i < 20; ++i) {
    const auto q = RandomVector(rng, dim, 0, 8, true);
    queries.insert(queries.end(), q.begin(), q.end());
  }
  const auto got = data.index().Search(queries.data(), 20, 15, 2);
  for (size_t i = 0; i < 20; ++i) {
    ExpectMatches(got[i], data.Naive(&queries[i * dim], 15), 1, 0, "query " + std::to_string(i));
  }
  // Re-adding a removed id works and is found.
  data.Add(0, std::vector<float>(queries.begin(), queries.begin() + dim));
  const auto again = data.index().Search(queries.data(), 1, 1, 1);
  ASSERT_EQ(again[0].size(), 1u);
  EXPECT_EQ(again[0][0].id, 0u);
  EXPECT_EQ(again[0][0].distance, 0.0f);
}

TEST(FlatIndexTest, KLargerThanSizeReturnsEverythingSorted) {
  std::mt19937 rng(Seed());
  Dataset data(5, Metric::kInnerProduct);
  for (uint64_t id = 0; id < 7; ++id) data.Add(id, RandomVector(rng, 5, 0, 8, true));
  std::vector<float> queries;
  for (size_t i = 0; i < 33; ++i) {
    const auto q = RandomVector(rng, 5, 0, 8, true);
    queries.insert(queries.end(), q.begin(), q.end());
  }
  const auto got = data.index().Search(queries.data(), 33, 100, 2);
  for (size_t i = 0; i < 33; ++i) {
    ExpectMatches(got[i], data.Naive(&queries[i * 5], 100), 1, 0, "query " + std::to_string(i));
    EXPECT_EQ(got[i].size(), 7u);
  }
}

TEST(FlatIndexTest, NanQueriesFindNothingAndDoNotDisturbOthers) {
  std::mt19937 rng(Seed());
  const size_t dim = 24, nq = 40;
  Dataset data(dim, Metric::kL2);
  for (uint64_t id = 0; id < 500; ++id) data.Add(id, RandomVector(rng, dim, 0, 8, true));
  std::vector<float> queries;
  for (size_t i = 0; i < nq; ++i) {
    auto q = RandomVector(rng, dim, 0, 8, true);
    if (i % 3 == 0) q[i % dim] = std::numeric_limits<float>::quiet_NaN();
    queries.insert(queries.end(), q.begin(), q.end());
  }
  const auto got = data.index().Search(queries.data(), nq, 5, 2);
  for (size_t i = 0; i < nq; ++i) {
    if (i % 3 == 0) {
      EXPECT_TRUE(got[i].empty()) << i;
    } else {
      ExpectMatches(got[i], data.Naive(&queries[i * dim], 5), 1, 0, "query " + std::to_string(i));
    }
  }
}

TEST(FlatIndexTest, EmptyIndexAndZeroKGiveEmptyResults) {
  FlatIndex index(4, Metric::kL2);
  const float q[4] = {1, 2, 3, 4};
  EXPECT_TRUE(index.Search(q, 1, 10, 1)[0].empty());
  index.Add(1, q);
  const auto r = index.Search(q, 1, 0, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].empty());
  EXPECT_TRUE(index.Search(q, 0, 10, 1).empty());
}

// Rows sit in blocks (64, 64, 128, ..., 2048, then kBlockRows rows each): every search path,
// filtered or not, must give the oracle's exact answer at and across block boundaries, also after
// Removes have moved rows from the last block into holes in earlier ones.
TEST(FlatIndexTest, ExactAcrossBlockBoundariesThroughRemoves) {
  std::mt19937 rng(Seed());
  const size_t dim = 12, block = RowBlocks::kBlockRows, nq = 20, k = 10;
  std::vector<float> queries;
  for (size_t i = 0; i < nq; ++i) {
    const auto q = RandomVector(rng, dim, 0, 8, true);
    queries.insert(queries.end(), q.begin(), q.end());
  }
  IdBitmap allowed;
  for (uint64_t id = 0; id < 20 * block; id += 3) allowed.Set(id * 5);
  auto check = [&](const Dataset& data, const std::string& what) {
    ASSERT_EQ(data.index().size(), data.rows().size()) << what;
    for (const auto& [id, v] : data.rows()) {
      const float* stored = data.index().Vector(id);
      ASSERT_NE(stored, nullptr) << what << " id " << id;
      ASSERT_TRUE(std::equal(v.begin(), v.end(), stored)) << what << " id " << id;
    }
    for (const IdFilter* allow :
         {static_cast<const IdFilter*>(nullptr), static_cast<const IdFilter*>(&allowed)}) {
      const std::string how = what + (allow != nullptr ? " filtered" : "");
      const auto batch = data.index().Search(queries.data(), nq, k, 2, allow);  // >= 16 queries
      for (size_t i = 0; i < nq; ++i) {
        const auto want = data.Naive(&queries[i * dim], k, allow);
        ExpectMatches(batch[i], want, 1, 0, how + " batch query " + std::to_string(i));
        const auto single = data.index().Search(&queries[i * dim], 1, k, 1, allow)[0];
        ExpectMatches(single, want, 1, 0, how + " single query " + std::to_string(i));
      }
    }
  };
  for (size_t n : {size_t{64}, size_t{65}, block - 1, block, block + 1, 3 * block + 77}) {
    const std::string what = "n " + std::to_string(n);
    Dataset data(dim, Metric::kL2);
    for (uint64_t id = 0; id < n; ++id) data.Add(id * 5, RandomVector(rng, dim, 0, 8, true));
    check(data, what);
    // Remove every 7th row, early blocks included: the last rows move into those holes; then
    // grow past the old end again so the moved-from slots are reused.
    for (uint64_t id = 0; id < n; id += 7) ASSERT_TRUE(data.Remove(id * 5)) << what;
    check(data, what + " after removes");
    for (uint64_t id = n; id < n + n / 5; ++id) {
      data.Add(id * 5, RandomVector(rng, dim, 0, 8, true));
    }
    check(data, what + " after removes and adds");
  }
}

// New guarantee of the block layout: Add never moves a stored row (the old single array moved
// every row at each doubling), and replacing a vector overwrites it in place.
TEST(FlatIndexTest, VectorPointersStayPutThroughAddsAcrossBlocks) {
  std::mt19937 rng(Seed());
  const size_t dim = 16;
  FlatIndex index(dim, Metric::kL2);
  std::vector<std::vector<float>> vectors;
  for (size_t i = 0; i < 4 * RowBlocks::kBlockRows + 3; ++i) {
    vectors.push_back(RandomVector(rng, dim, -1, 1, false));
  }
  index.Add(0, vectors[0].data());
  index.Add(1, vectors[1].data());
  const float* first = index.Vector(0);
  const float* second = index.Vector(1);
  for (uint64_t id = 2; id < vectors.size(); ++id) index.Add(id, vectors[id].data());
  const uint64_t late = RowBlocks::kBlockRows + 10;
  const float* later = index.Vector(late);
  EXPECT_EQ(index.Vector(0), first);
  EXPECT_EQ(index.Vector(1), second);
  EXPECT_TRUE(std::equal(vectors[0].begin(), vectors[0].end(), first));
  // Replacing writes in place, and may read from a stored row.
  index.Add(1, index.Vector(late));
  EXPECT_EQ(index.Vector(1), second);
  EXPECT_TRUE(std::equal(vectors[late].begin(), vectors[late].end(), second));
  EXPECT_EQ(index.Vector(late), later);
  // Remove moves the last row into the hole (the documented exception).
  const uint64_t last = vectors.size() - 1;
  ASSERT_TRUE(index.Remove(0));
  EXPECT_EQ(index.Vector(last), first);
  EXPECT_TRUE(std::equal(vectors[last].begin(), vectors[last].end(), index.Vector(last)));
  EXPECT_EQ(index.Vector(0), nullptr);
}

}  // namespace
}  // namespace shoal::index

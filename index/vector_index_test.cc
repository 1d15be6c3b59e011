// Every search structure through the one interface db/ sees (index/vector_index.h).
#include "index/vector_index.h"

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "base/test_seed.h"
#include "gtest/gtest.h"
#include "index/clustering/kmeans.h"
#include "index/flat/flat_index.h"
#include "index/flat/leaf_buckets.h"
#include "index/spann/spann_builder.h"
#include "index/spann/spann_calibration.h"
#include "index/spann/spann_index.h"
#include "index/spann/spann_options.h"

namespace shoal::index {
namespace {

constexpr size_t kDim = 8;

std::vector<float> Gaussian(size_t n, std::mt19937* rng) {
  std::normal_distribution<float> g;
  std::vector<float> v(n * kDim);
  for (float& x : v) x = g(*rng);
  return v;
}

std::vector<uint64_t> Iota(size_t n) {
  std::vector<uint64_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = i;
  return ids;
}

// The same batch through FlatIndex and (every bucket) LeafBuckets gives the same answers.
TEST(VectorIndexTest, FlatAndLeafBucketsAgreeThroughTheInterface) {
  std::mt19937 rng(11);
  const std::vector<float> rows = Gaussian(300, &rng);
  const std::vector<uint64_t> ids = Iota(300);
  std::vector<uint32_t> leaves(300);
  for (size_t i = 0; i < 300; ++i) leaves[i] = i % 7;
  FlatIndex flat(kDim, Metric::kL2);
  LeafBuckets buckets(kDim, Metric::kL2, 7);
  std::vector<VectorIndex*> all = {&flat, &buckets};
  for (VectorIndex* index : all) {
    ASSERT_TRUE(index->Add(ids, rows.data(), leaves).ok());
    const std::vector<uint64_t> gone = {5, 6};
    ASSERT_TRUE(index->Remove(gone).ok());
    EXPECT_EQ(index->dimension(), kDim);
    EXPECT_GT(index->MemoryBytes(), 0u);
  }
  SearchParameters p;
  p.k = 10;
  const std::vector<float> q = Gaussian(4, &rng);
  auto a = flat.Search(q.data(), 4, p);
  auto b = buckets.Search(q.data(), 4, p);
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_EQ((*a)[i].size(), 10u);
    for (size_t j = 0; j < 10; ++j) EXPECT_EQ((*a)[i][j].id, (*b)[i][j].id);
  }
}

TEST(VectorIndexTest, LeafBucketsNeedEachVectorsLeaf) {
  LeafBuckets buckets(kDim, Metric::kL2, 2);
  std::vector<float> rows(2 * kDim, 1.0f);
  const std::vector<uint64_t> ids = {1, 2};
  const std::vector<uint32_t> one = {0};
  const std::vector<uint32_t> out_of_range = {0, 2};
  EXPECT_EQ(buckets.Add(ids, rows.data(), one).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(buckets.Add(ids, rows.data(), out_of_range).code(), absl::StatusCode::kInvalidArgument);
}

TEST(VectorIndexTest, LeafBucketsScanOnlyTheLeavesAQueryIsGiven) {
  LeafBuckets buckets(kDim, Metric::kL2, 3);
  std::mt19937 rng(3);
  const std::vector<float> rows = Gaussian(30, &rng);
  std::vector<uint32_t> leaves(30);
  for (size_t i = 0; i < 30; ++i) leaves[i] = i % 3;
  ASSERT_TRUE(buckets.Add(Iota(30), rows.data(), leaves).ok());
  const std::vector<std::vector<uint32_t>> only = {{1}};
  SearchParameters p;
  p.k = 30;
  p.leaves = &only;
  auto found = buckets.Search(rows.data(), 1, p);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ((*found)[0].size(), 10u);
  for (const Neighbor& nb : (*found)[0]) EXPECT_EQ(nb.id % 3, 1u);
}

// Allows the postings that descend from one tree leaf.
class OneLeafScope : public PostingScope {
 public:
  explicit OneLeafScope(uint32_t leaf) : leaf_(leaf) {}
  bool AllowsPosting(uint32_t /*posting*/, uint32_t leaf) const override { return leaf == leaf_; }

 private:
  uint32_t leaf_;
};

class SpannThroughTheInterfaceTest : public ::testing::Test {
 protected:
  virtual std::string Spec() const { return "spann:centroid_ratio=0.02,navigator=tree"; }
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "vector_index_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    rng_.seed(base::TestSeed());
    rows_ = Gaussian(2000, &rng_);
    const std::vector<uint64_t> ids = Iota(2000);
    auto options = ParseSpannSpec(Spec());
    ASSERT_TRUE(options.ok()) << options.status();
    SpannBuildInput input{ids, rows_.data(), kDim, Metric::kL2, 2000, /*generation=*/1};
    auto backend = MakeCpuClusteringBackend(1);
    auto built = BuildSpann(input, *options, dir_, *backend, 1);
    ASSERT_TRUE(built.ok()) << built.status();
    auto index = SpannIndex::Open(dir_, built->manifest, built->postings, {});
    ASSERT_TRUE(index.ok()) << index.status();
    spann_ = *std::move(index);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  std::mt19937 rng_;
  std::vector<float> rows_;
  std::unique_ptr<SpannIndex> spann_;
};

TEST_F(SpannThroughTheInterfaceTest, ScopeKeepsTheQueryInTheAllowedPostings) {
  const VectorIndex& index = *spann_;
  // The query's own nearest leaf is not its scope: the navigator must go looking for it.
  const uint32_t leaf = static_cast<uint32_t>(spann_->tree().num_leaves() - 1);
  const OneLeafScope scope(leaf);
  std::vector<std::vector<uint32_t>> visited;
  SearchStats stats;
  SearchParameters p;
  p.k = 5;
  p.max_postings = 4;
  p.scope = &scope;
  p.visited_leaves = &visited;
  p.stats = &stats;
  auto found = index.Search(rows_.data(), 3, p);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(visited.size(), 3u);
  for (const auto& v : visited) {
    ASSERT_FALSE(v.empty());
    for (uint32_t l : v) EXPECT_EQ(l, leaf);
  }
  EXPECT_GT(stats.postings_read, 0u);
  for (const auto& hits : *found) EXPECT_FALSE(hits.empty());
}

// Every leaf allowed, each weighing `weight` of the scope's vectors.
class WeightedScope : public PostingScope {
 public:
  explicit WeightedScope(uint32_t weight) : weight_(weight) {}
  bool AllowsPosting(uint32_t /*posting*/, uint32_t /*leaf*/) const override { return true; }
  bool weighted() const override { return true; }
  uint32_t LeafWeight(uint32_t /*leaf*/) const override { return weight_; }

 private:
  uint32_t weight_;
};

TEST_F(SpannThroughTheInterfaceTest, WeightedScopeScansUntilItsLeavesHoldTheBudget) {
  SearchParameters p;
  p.k = 5;
  p.max_postings = 4;
  const SpannKnobs knobs{.max_postings = 4};
  // Built without a restricted calibration: the same budget at every density.
  const size_t budget = static_cast<size_t>(spann_->WeightedScopeBudget(knobs).At(1));
  ASSERT_GT(budget, 0u);
  EXPECT_EQ(spann_->WeightedScopeBudget(knobs).At(0.01), budget);
  auto postings_read = [&](uint32_t weight) {
    const WeightedScope scope(weight);
    SearchStats stats;
    p.scope = &scope;
    p.stats = &stats;
    auto found = spann_->Search(rows_.data(), 1, p);
    EXPECT_TRUE(found.ok()) << found.status();
    return stats.postings_read;
  };
  // One leaf holds the whole budget: one posting. Leaves a tenth as full: ten times the postings
  // (the tree has more than that many leaves), never past kMaxWidening x max_postings.
  EXPECT_EQ(postings_read(static_cast<uint32_t>(budget)), 1u);
  const uint32_t tenth = static_cast<uint32_t>((budget + 9) / 10);
  const size_t leaves = spann_->tree().num_leaves();
  EXPECT_EQ(postings_read(tenth), std::min<size_t>(leaves, (budget + tenth - 1) / tenth));
  EXPECT_EQ(postings_read(1), std::min<size_t>(leaves, 4 * PostingScope::kMaxWidening));
}

// A weighted scope of every `stride`-th tree leaf, each holding `weight` of its vectors, that lists
// its leaves; it counts the navigator's questions about nodes and postings.
class ListedLeavesScope : public PostingScope {
 public:
  ListedLeavesScope(size_t leaves, uint32_t stride, uint32_t weight)
      : stride_(stride), weight_(weight) {
    for (uint32_t l = 0; l < leaves; l += stride) leaves_.push_back(l);
  }
  bool Listed(uint32_t leaf) const { return leaf % stride_ == 0; }
  bool AllowsPosting(uint32_t /*posting*/, uint32_t leaf) const override {
    ++asked_;
    return Listed(leaf);
  }
  bool AllowsNode(uint32_t /*node*/) const override {
    ++asked_;
    return true;
  }
  bool weighted() const override { return true; }
  uint32_t LeafWeight(uint32_t leaf) const override { return Listed(leaf) ? weight_ : 0; }
  std::pair<uint64_t, uint32_t> Extent() const override {
    return {uint64_t{weight_} * leaves_.size(), static_cast<uint32_t>(leaves_.size())};
  }
  std::span<const uint32_t> Leaves() const override { return leaves_; }
  size_t asked() const { return asked_; }

 private:
  uint32_t stride_, weight_;
  std::vector<uint32_t> leaves_;
  mutable size_t asked_ = 0;
};

// Over 256 leaves the navigator is chosen by cost: 8-d centroids make a scope's own postings,
// scored flat, cheaper than the tree's descent.
class ScopeNavigationTest : public SpannThroughTheInterfaceTest {
 protected:
  std::string Spec() const override { return "spann:centroid_ratio=0.2,navigator=auto"; }
};

// A scope that lists its leaves (PostingScope::Leaves) has those leaves' postings scored on their
// float centroids instead of the descent: the query scans exactly the nearest of them, and no
// node or posting is asked about.
TEST_F(ScopeNavigationTest, AScopeThatListsItsLeavesHasThemScannedFlat) {
  const size_t leaves = spann_->tree().num_leaves();
  ASSERT_GT(leaves, 256u);
  const ListedLeavesScope scope(leaves, 7, 1);
  std::vector<std::pair<float, uint32_t>> by_distance;
  for (size_t i = 0; i < 20; ++i) {
    const float* q = rows_.data() + i * 97 * kDim;
    std::vector<std::vector<uint32_t>> visited;
    SearchParameters p;
    p.k = 5;
    p.max_postings = 4;
    p.scope = &scope;
    p.visited_leaves = &visited;
    ASSERT_TRUE(spann_->Search(q, 1, p).ok());
    ASSERT_EQ(visited.size(), 1u);
    ASSERT_FALSE(visited[0].empty());
    spann_->tree().ScanLeaves(q, leaves, &by_distance, CentroidScoring::kFloat);
    std::vector<uint32_t> nearest;  // the scope's leaves, nearest first
    for (const auto& [d, leaf] : by_distance) {
      if (scope.Listed(leaf) && nearest.size() < visited[0].size()) nearest.push_back(leaf);
    }
    EXPECT_EQ(visited[0], nearest) << "query " << i;
  }
  EXPECT_EQ(scope.asked(), 0u);
}

TEST(ScopeBudgetTest, InterpolatesInLogDensityAndHoldsItsEnds) {
  ScopeBudget b;
  EXPECT_TRUE(b.empty());
  b.Add(1, 1000);
  b.Add(0.25, 400);
  b.Add(1.0 / 16, 100);
  EXPECT_DOUBLE_EQ(b.At(2), 1000);
  EXPECT_DOUBLE_EQ(b.At(1), 1000);
  EXPECT_NEAR(b.At(0.5), std::sqrt(1000.0 * 400), 1e-6);
  EXPECT_NEAR(b.At(0.25), 400, 1e-9);
  EXPECT_NEAR(b.At(0.125), 200, 1e-9);
  EXPECT_DOUBLE_EQ(b.At(0.001), 100);
}

// With a restricted calibration, each density's level is the candidates its search met at the
// max_postings that reached the target there (interpolated between rows); a fixed max_postings
// reads the levels at the recall it reached unrestricted.
TEST_F(SpannThroughTheInterfaceTest, WeightedScopeBudgetReadsTheRestrictedCalibration) {
  const double per_leaf = spann_->VectorsPerLeaf();
  spann_->SetCalibration({{4, 0.9f}, {8, 0.96f}}, {{0.25f, {{6, 0.9f}, {12, 0.96f}}}});
  const ScopeBudget at95 = spann_->WeightedScopeBudget({.target_recall = 0.95f});
  // 0.95 is 5/6 of the way from 0.9 to 0.96: 4 + 5/6 x 4 postings, and 6 + 5/6 x 6 at 0.25.
  EXPECT_NEAR(at95.At(1), (4 + 4 * 5.0 / 6) * per_leaf, 1e-3);
  EXPECT_NEAR(at95.At(0.25), 11 * per_leaf * 0.25, 1e-3);
  const ScopeBudget fixed = spann_->WeightedScopeBudget({.max_postings = 4});
  EXPECT_NEAR(fixed.At(0.25), 6 * per_leaf * 0.25, 1e-3);
}

// ChoosePruning: the pruned row that reached the target with the fewest postings scanned, when
// fewer than the unpruned max_postings; else no pruning.
TEST(ChoosePruningTest, FewestPostingsThatReachTheTarget) {
  const std::vector<PrunedCalibration> pruned = {
      {1.2f, {{4, 0.85f, 2.0f}, {8, 0.88f, 2.5f}}},                      // never reaches 0.95
      {1.3f, {{4, 0.90f, 3.0f}, {8, 0.951f, 4.5f}, {12, 0.97f, 5.0f}}},  // 4.5 at 0.95
      {1.7f, {{4, 0.93f, 3.9f}, {6, 0.96f, 5.5f}}}};
  const PruningChoice c = ChoosePruning(pruned, 0.95f, 10);
  EXPECT_EQ(c.max_postings, 8u);
  EXPECT_FLOAT_EQ(c.ratio, 1.3f);
  EXPECT_FLOAT_EQ(c.postings, 4.5f);
  // Unpruned cheaper (4 postings), or nothing pruned reaches the target: no pruning.
  EXPECT_FLOAT_EQ(ChoosePruning(pruned, 0.95f, 4).ratio, 0.0f);
  EXPECT_EQ(ChoosePruning(pruned, 0.95f, 4).max_postings, 4u);
  EXPECT_FLOAT_EQ(ChoosePruning(pruned, 0.99f, 20).ratio, 0.0f);
  EXPECT_FLOAT_EQ(ChoosePruning({}, 0.95f, 10).ratio, 0.0f);
}

// A target-recall search takes the pruned calibration's choice; one that names max_postings, a
// pruning ratio or a scope of its own does not.
TEST_F(SpannThroughTheInterfaceTest, TargetRecallSearchTakesTheCalibratedPruning) {
  const std::vector<float> q(rows_.begin(), rows_.begin() + kDim);
  auto postings = [&](SearchParameters p) {
    SearchStats stats;
    p.stats = &stats;
    EXPECT_TRUE(spann_->Search(q.data(), 1, p).ok());
    return stats.postings_read;
  };
  spann_->SetCalibration({{4, 0.9f}, {12, 0.96f}}, {}, {{1.0f, {{6, 0.96f, 1.0f}}}});
  // Ratio 1: only postings as near as the nearest one (ties aside, just it).
  EXPECT_EQ(postings({.target_recall = 0.95f}), 1u);
  EXPECT_EQ(postings({.max_postings = 12}), 12u);
  EXPECT_EQ(postings({.target_recall = 0.95f, .pruning_ratio = 0}), 12u);
  struct AllowAll final : IdFilter {
    bool Allows(uint64_t) const override { return true; }
  } all;
  EXPECT_EQ(postings({.filter = &all, .target_recall = 0.95f}), 12u);
  // Unpruned cheaper at the target: no pruning.
  spann_->SetCalibration({{4, 0.96f}}, {}, {{1.0f, {{6, 0.96f, 5.0f}}}});
  EXPECT_EQ(postings({.target_recall = 0.95f}), 4u);
}

// A scope of `vectors` spread evenly over every leaf.
class EvenScope : public PostingScope {
 public:
  EvenScope(uint64_t vectors, uint32_t leaves) : vectors_(vectors), leaves_(leaves) {}
  bool AllowsPosting(uint32_t /*posting*/, uint32_t /*leaf*/) const override { return true; }
  bool weighted() const override { return true; }
  uint32_t LeafWeight(uint32_t /*leaf*/) const override {
    return static_cast<uint32_t>(vectors_ / leaves_);
  }
  std::pair<uint64_t, uint32_t> Extent() const override { return {vectors_, leaves_}; }

 private:
  uint64_t vectors_;
  uint32_t leaves_;
};

// The exact path is chosen while its full vectors cost fewer bytes than the postings the scoped
// search is expected to scan: so for few ids, not for many, and for more ids when the scope is
// thin (its search scans farther for the same ids).
TEST_F(SpannThroughTheInterfaceTest, ExactIsCheaperForFewIdsAndThinScopes) {
  const uint32_t leaves = static_cast<uint32_t>(spann_->tree().num_leaves());
  const SpannKnobs knobs{.max_postings = 4};
  const EvenScope dense(2000, leaves), thin(200, leaves);
  EXPECT_TRUE(spann_->ExactIsCheaper(20, 10, dense, knobs));
  EXPECT_FALSE(spann_->ExactIsCheaper(2000, 10, dense, knobs));
  size_t dense_limit = 0, thin_limit = 0;
  while (spann_->ExactIsCheaper(dense_limit + 1, 10, dense, knobs)) ++dense_limit;
  while (thin_limit < 100000 && spann_->ExactIsCheaper(thin_limit + 1, 10, thin, knobs))
    ++thin_limit;
  EXPECT_GT(dense_limit, 0u);
  EXPECT_GT(thin_limit, dense_limit);
  // A scope without a size (or not weighted) has no scoped estimate: exact.
  const WeightedScope unsized(1);
  EXPECT_TRUE(spann_->ExactIsCheaper(1000, 10, unsized, knobs));
}

TEST_F(SpannThroughTheInterfaceTest, SkipAndFilterKeepIdsOut) {
  base::PagedIdSet skip;
  skip.Insert(0);
  IdBitmap allowed;
  for (uint64_t id = 0; id < 2000; id += 2) allowed.Set(id);
  SearchParameters p;
  p.k = 10;
  p.skip = &skip;
  p.filter = &allowed;
  auto found = spann_->Search(rows_.data(), 1, p);  // query: vector 0 itself
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_FALSE((*found)[0].empty());
  for (const Neighbor& nb : (*found)[0]) {
    EXPECT_NE(nb.id, 0u);
    EXPECT_EQ(nb.id % 2, 0u);
  }
}

// Quantized, with a vector cache that holds every vector: a weighted scope (a tenant) takes the
// postings where it holds few vectors members first (SpannIndex::TakeMembers), listing their ids
// through the filter in one call (IdFilter::AppendAllowed), and the stale set still keeps ids out.
class MembersFirstTest : public SpannThroughTheInterfaceTest {
 protected:
  std::string Spec() const override {
    return "spann:centroid_ratio=0.02,navigator=tree,quant=rabitq:bits=4";
  }
};

// A filter's exact path by bytes (SearchPlanner, past its count threshold): only while the
// vector cache can hold every vector and the codes are resident (this quantized index's; a
// full-vector index has none: never); then for the ids whose full vectors weigh less than the
// codes of the postings its scan would read, more of them the more postings.
TEST_F(MembersFirstTest, FilterExactIsCheaperByBytesWhileEveryVectorIsCacheable) {
  spann_->SetCacheBudget(0);
  EXPECT_FALSE(spann_->FilterExactIsCheaper(1, 1000));
  spann_->SetCacheBudget(size_t{64} << 20);
  EXPECT_TRUE(spann_->FilterExactIsCheaper(0, 1));
  size_t few = 0, many = 0;
  while (few < 100000 && spann_->FilterExactIsCheaper(few + 1, 4)) ++few;
  while (many < 100000 && spann_->FilterExactIsCheaper(many + 1, 40)) ++many;
  EXPECT_GT(few, 0u);
  EXPECT_GT(many, few);
  EXPECT_LT(many, 100000u);
}

TEST_F(MembersFirstTest, SkipAndFilterKeepIdsOutOfTheMembers) {
  spann_->SetCacheBudget(size_t{64} << 20);
  base::PagedIdSet skip;
  IdBitmap allowed;
  for (uint64_t id = 0; id < 2000; id += 10) allowed.Set(id);
  for (uint64_t id = 0; id < 2000; id += 20) skip.Insert(id);  // half the allowed ones
  const WeightedScope scope(1);  // a leaf holds 1 of its vectors: every posting members first
  SearchParameters p;
  p.k = 10;
  p.max_postings = 4;
  p.skip = &skip;
  p.filter = &allowed;
  p.scope = &scope;
  for (size_t q = 0; q < 20; ++q) {
    SearchStats stats;
    p.stats = &stats;
    const uint64_t self = 10 * q + 10;  // allowed; skipped for even q
    auto found = spann_->Search(rows_.data() + self * kDim, 1, p);
    ASSERT_TRUE(found.ok()) << found.status();
    ASSERT_FALSE((*found)[0].empty());
    for (const Neighbor& nb : (*found)[0]) {
      EXPECT_EQ(nb.id % 10, 0u) << nb.id;
      EXPECT_NE(nb.id % 20, 0u) << nb.id;
    }
    // Scored: the members, not every code of the postings.
    EXPECT_LT(stats.vectors_scored, 2000u / 10);
    if (self % 20 != 0) {
      EXPECT_EQ((*found)[0][0].id, self);  // itself, scored exactly
    }
  }
}

TEST_F(SpannThroughTheInterfaceTest, ChangesOnlyThroughItsUpdater) {
  const std::vector<uint64_t> ids = {1};
  EXPECT_EQ(spann_->Add(ids, rows_.data(), {}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(spann_->Remove(ids).code(), absl::StatusCode::kFailedPrecondition);
}

// The CPU backend standing in for a device: it claims every assignment, so BuildSpann assigns
// the vectors to their leaves through it, and it records those calls (m > 1: k-means asks m = 1).
class DeviceLikeBackend : public ClusteringBackend {
 public:
  struct Call {
    size_t n, k, m;
    std::vector<uint32_t> labels;
  };
  std::string name() const override { return "device-like"; }
  absl::Status AssignTopM(const float* points, size_t n, const float* centroids, size_t k, size_t d,
                          size_t m, const float* bias, uint32_t* labels,
                          float* distances) override {
    SHOAL_RETURN_IF_ERROR(cpu_->AssignTopM(points, n, centroids, k, d, m, bias, labels, distances));
    if (m > 1) calls.push_back({n, k, m, std::vector<uint32_t>(labels, labels + n * m)});
    return absl::OkStatus();
  }
  bool AssignsOnDevice(size_t, size_t, size_t, size_t) const override { return true; }

  std::vector<Call> calls;

 private:
  std::unique_ptr<ClusteringBackend> cpu_ = MakeCpuClusteringBackend(1);
};

TEST(SpannBuildTest, ABackendOnADeviceAssignsEachVectorToItsExactNearestLeaves) {
  std::string tmpl = ::testing::TempDir() + "spann_device_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  std::mt19937 rng(base::TestSeed());
  constexpr size_t kRows = 3000;
  const std::vector<float> rows = Gaussian(kRows, &rng);
  const std::vector<uint64_t> ids = Iota(kRows);
  auto options = ParseSpannSpec("spann:centroid_ratio=0.02,navigator=flat");
  ASSERT_TRUE(options.ok()) << options.status();
  SpannBuildInput input{ids, rows.data(), kDim, Metric::kL2, kRows, /*generation=*/1};
  DeviceLikeBackend backend;
  auto built = BuildSpann(input, *options, dir, backend, 1);
  ASSERT_TRUE(built.ok()) << built.status();
  auto index = SpannIndex::Open(dir, built->manifest, built->postings, {});
  ASSERT_TRUE(index.ok()) << index.status();
  const CentroidTree& tree = (*index)->tree();
  const size_t leaves = tree.num_leaves();
  ASSERT_GT(leaves, 8u);

  // One call over all vectors and all leaves (not a tree descent), each vector's first label
  // its nearest leaf by brute force.
  ASSERT_EQ(backend.calls.size(), 1u);
  const DeviceLikeBackend::Call& call = backend.calls[0];
  EXPECT_EQ(call.n, kRows);
  EXPECT_EQ(call.k, leaves);
  EXPECT_EQ(call.m, std::min<size_t>(leaves, 2 * options->replicas));
  auto l2 = [&](size_t i, uint32_t leaf) {
    double d = 0;
    for (size_t j = 0; j < kDim; ++j) {
      const double diff = double{rows[i * kDim + j]} - tree.leaf_centroids()[leaf * kDim + j];
      d += diff * diff;
    }
    return d;
  };
  for (size_t i = 0; i < kRows; ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (uint32_t l = 0; l < leaves; ++l) best = std::min(best, l2(i, l));
    const uint32_t label = call.labels[i * call.m];
    ASSERT_LT(label, leaves);
    ASSERT_LE(l2(i, label), best * (1 + 1e-5) + 1e-9) << "vector " << i;  // float rounding
  }
  // The labels are the index's posting ids: each vector is found among the few postings nearest
  // to it (its primary, which the cap never drops, is the nearest).
  SearchParameters p;
  p.k = 1;
  p.max_postings = 3;
  auto found = (*index)->Search(rows.data(), kRows, p);
  ASSERT_TRUE(found.ok()) << found.status();
  for (size_t i = 0; i < kRows; ++i) {
    ASSERT_FALSE((*found)[i].empty()) << "vector " << i;
    EXPECT_EQ((*found)[i][0].id, i);
  }
  std::filesystem::remove_all(dir);
}

// The build's threads share out the clustering and the choice of each vector's replicas: the
// index written is byte for byte the same whatever their number.
TEST(SpannBuildTest, TheThreadCountDoesNotChangeTheIndex) {
  std::mt19937 rng(base::TestSeed());
  constexpr size_t kRows = 20000;  // several threads' worth of replica choices
  const std::vector<float> rows = Gaussian(kRows, &rng);
  const std::vector<uint64_t> ids = Iota(kRows);
  auto options = ParseSpannSpec("spann:centroid_ratio=0.02");
  ASSERT_TRUE(options.ok()) << options.status();
  SpannBuildInput input{ids, rows.data(), kDim, Metric::kL2, kRows, /*generation=*/1};
  auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  std::vector<std::string> postings, centroids;
  for (uint32_t threads : {1u, 4u}) {
    std::string tmpl = ::testing::TempDir() + "spann_threads_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    auto backend = MakeCpuClusteringBackend(threads);
    auto built = BuildSpann(input, *options, tmpl, *backend, threads);
    ASSERT_TRUE(built.ok()) << built.status();
    postings.push_back(read(tmpl + "/" + kPostingFileName));
    centroids.push_back(read(tmpl + "/" + kCentroidFileName));
    std::filesystem::remove_all(tmpl);
  }
  ASSERT_FALSE(postings[0].empty());
  EXPECT_TRUE(postings[0] == postings[1]) << "postings differ between 1 and 4 threads";
  EXPECT_TRUE(centroids[0] == centroids[1]) << "centroid trees differ between 1 and 4 threads";
}

}  // namespace
}  // namespace shoal::index

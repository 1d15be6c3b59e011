// SpannUpdater in isolation (tests/engine/spann_updates_test.cc drives it through the DB): what
// a change says about the postings, in the index's own terms, and what an observer is told.
#include "index/spann/spann_updater.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"
#include "index/clustering/kmeans.h"
#include "index/spann/spann_builder.h"
#include "index/spann/spann_options.h"

namespace shoal::index {
namespace {

constexpr size_t kDim = 8;

class RecordingObserver : public PostingObserver {
 public:
  void OnPublished(const DirectoryChange& change) override { changes.push_back(change); }
  std::vector<DirectoryChange> changes;
};

class SpannUpdaterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "spann_updater_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    rng_.seed(base::TestSeed());
    Build("spann:centroid_ratio=0.02,posting_cap=64");
  }
  // index_ := 2000 Gaussian rows (ids 0..1999) built with `spec` in dir_ (replacing any).
  void Build(const std::string& spec) {
    index_.reset();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    constexpr size_t kRows = 2000;
    std::vector<uint64_t> ids(kRows);
    std::vector<float> rows = Gaussian(kRows, /*center=*/0);
    for (size_t i = 0; i < kRows; ++i) ids[i] = i;
    auto options = ParseSpannSpec(spec);
    ASSERT_TRUE(options.ok()) << options.status();
    SpannBuildInput input{ids, rows.data(), kDim, Metric::kL2, kRows, /*generation=*/1};
    auto backend = MakeCpuClusteringBackend(1);
    auto built = BuildSpann(input, *options, dir_, *backend, 1);
    ASSERT_TRUE(built.ok()) << built.status();
    auto index = SpannIndex::Open(dir_, built->manifest, built->postings, {});
    ASSERT_TRUE(index.ok()) << index.status();
    index_ = *std::move(index);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::vector<float> Gaussian(size_t n, float center) {
    std::normal_distribution<float> g(center, 1.0f);
    std::vector<float> v(n * kDim);
    for (float& x : v) x = g(rng_);
    return v;
  }

  std::string dir_;
  std::mt19937 rng_;
  std::unique_ptr<SpannIndex> index_;
};

// An opened index holds the leaf centroids once (its directory reads the tree's in place) and
// not the build points' leaves (4 B per vector, only the builder's).
TEST_F(SpannUpdaterTest, AnOpenedIndexHoldsLeafCentroidsOnceAndNoPointLeaves) {
  const CentroidTree& tree = index_->tree();
  EXPECT_TRUE(tree.point_leaf().empty());
  const auto dir = index_->directory();
  ASSERT_EQ(dir->size(), tree.num_leaves());
  for (uint32_t p = 0; p < dir->size(); ++p) {
    EXPECT_EQ(dir->centroid(p), tree.leaf_centroids() + size_t{p} * kDim) << p;
  }
}

TEST_F(SpannUpdaterTest, ChangeNamesWrittenPostingsSplitsAndMovesAndTheObserverSeesIt) {
  RecordingObserver observer;
  UpdaterOptions o;
  o.sync = false;
  o.observer = &observer;
  auto updater = SpannUpdater::Open(index_.get(), dir_, o);
  ASSERT_TRUE(updater.ok()) << updater.status();
  // 600 vectors in one tight spot overfill the postings there (cap 64): they split.
  constexpr size_t kNew = 600;
  std::vector<uint64_t> ids(kNew);
  for (size_t i = 0; i < kNew; ++i) ids[i] = 2000 + i;
  std::vector<float> v = Gaussian(kNew, /*center=*/0.5f);
  for (float& x : v) x = 0.5f + 0.05f * (x - 0.5f);
  auto change = (*updater)->Insert(ids, v.data(), [](uint64_t) { return false; });
  ASSERT_TRUE(change.ok()) << change.status();
  const DirectoryChange& d = change->directory;
  ASSERT_FALSE(d.written.empty());
  EXPECT_FALSE(d.splits.empty());
  const PostingDirectory& next = *change->next;
  for (const PostingWrite& w : d.written) {
    ASSERT_LT(w.posting, next.size());
    EXPECT_TRUE(next.live[w.posting]);
    EXPECT_EQ(w.count, next.rows[w.posting].count);
    EXPECT_EQ(w.extent.first_page, next.rows[w.posting].first_page);
    EXPECT_EQ(w.origin, next.origin[w.posting]);
    EXPECT_EQ(w.centroid.size(), kDim);
    // Only a posting still centred on its tree leaf says so (its row may leave the centroid out).
    EXPECT_EQ(w.tree_centroid, next.own_slot[w.posting] == PostingDirectory::kTreeCentroid);
    if (w.tree_centroid) {
      EXPECT_TRUE(std::equal(w.centroid.begin(), w.centroid.end(),
                             index_->tree().leaf_centroids() + size_t{w.posting} * kDim));
    }
  }
  for (const PostingSplit& s : d.splits) {
    for (const PostingWrite& w : d.written) {
      if (w.posting == s.to) {
        EXPECT_FALSE(w.tree_centroid) << "new posting " << s.to;
      }
    }
  }
  for (const PostingSplit& s : d.splits) {
    EXPECT_TRUE(next.live[s.from]);
    EXPECT_TRUE(next.live[s.to]);
    EXPECT_EQ(next.origin[s.from], next.origin[s.to]);  // the new half descends from the same leaf
  }
  for (const VectorMove& m : d.moves) EXPECT_NE(m.from, m.to);
  EXPECT_TRUE(observer.changes.empty());  // told only once published
  const size_t splits = d.splits.size();
  (*updater)->Publish(*std::move(change));
  ASSERT_EQ(observer.changes.size(), 1u);
  EXPECT_EQ(observer.changes[0].splits.size(), splits);
  EXPECT_EQ((*updater)->stats().splits, splits);
}

// With nothing cached (no search ran), an insert reads the postings it appends to from the file,
// many in one batch: each posting gets its own entries back, plus the vectors placed in it.
TEST_F(SpannUpdaterTest, AnInsertIntoUncachedPostingsAddsOnlyTheVectorsPlacedThere) {
  Build("spann:centroid_ratio=0.02");  // the default cap: room for the new vectors
  UpdaterOptions o;
  o.sync = false;
  auto updater = SpannUpdater::Open(index_.get(), dir_, o);
  ASSERT_TRUE(updater.ok()) << updater.status();
  const auto before = index_->directory();
  constexpr size_t kNew = 40;  // spread like the build's rows: many postings
  std::vector<uint64_t> ids(kNew);
  for (size_t i = 0; i < kNew; ++i) ids[i] = 2000 + i;
  const std::vector<float> v = Gaussian(kNew, /*center=*/0);
  auto change = (*updater)->Insert(ids, v.data(), [](uint64_t) { return false; });
  ASSERT_TRUE(change.ok()) << change.status();
  // Postings a split or a move changed hold other entries too: only the others are counted.
  const DirectoryChange& d = change->directory;
  std::set<uint32_t> reshaped;
  for (const PostingSplit& s : d.splits) reshaped.insert({s.from, s.to});
  for (const VectorMove& m : d.moves) reshaped.insert({m.from, m.to});
  size_t counted = 0, added = 0;
  for (const PostingWrite& w : d.written) {
    if (reshaped.contains(w.posting)) continue;
    ASSERT_LT(w.posting, before->size());
    const uint32_t old_count = before->rows[w.posting].count;
    ASSERT_GT(w.count, old_count) << "posting " << w.posting;
    ASSERT_LE(w.count, old_count + kNew) << "posting " << w.posting;
    added += w.count - old_count;
    ++counted;
  }
  ASSERT_GE(counted, 2u);
  EXPECT_LE(added, kNew * index_->manifest().options.replicas);
}

}  // namespace
}  // namespace shoal::index

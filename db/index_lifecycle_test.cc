// IndexLifecycle alone: a RecordStore holding records, a CollectionState and an IndexMaintainer
// that is never started; builds, reopen, back to flat, a RAM bound too small and release.
#include "db/index_lifecycle.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "db/index_form.h"

namespace shoal::db {
namespace {

constexpr uint32_t kDim = 8;
constexpr uint64_t kRecords = 600;
constexpr char kSpec[] = "spann:centroid_ratio=0.05,seed=1";

Record R(uint64_t key) {
  Record r;
  r.key = key;
  for (uint32_t i = 0; i < kDim; ++i) {
    r.vector.push_back(static_cast<float>((key % 12) * 10 + (key * 7 + i * 3) % 5));
  }
  return r;
}

class IndexLifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "index_lifecycle_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto store = storage::RecordStore::Open(dir_ + "/rocksdb", {});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    auto meta = store_->CreateCollection({"c", kDim, Metric::kL2});
    ASSERT_TRUE(meta.ok()) << meta.status();
    meta_ = *meta;
    auto batch = store_->NewBatch();
    for (uint64_t k = 0; k < kRecords; ++k) batch.PutRecord(meta_.id, k, R(k), /*new_key=*/true);
    batch.SetNextInternalId(meta_.id, kRecords);
    ASSERT_TRUE(store_->Commit(batch, /*sync=*/false).ok());
    options_.build_threads = 1;
    Make();
  }
  void TearDown() override {
    lifecycle_.reset();
    maintainer_.reset();
    state_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // A fresh state, maintainer and lifecycle over the same store (as a reopen makes them).
  void Make() {
    lifecycle_.reset();
    maintainer_.reset();
    state_ = std::make_unique<CollectionState>(kDim, IndexMetric(Metric::kL2));
    maintainer_ = std::make_unique<IndexMaintainer>(state_.get(), store_.get(), meta_.id, "c",
                                                    options_, fs_, nullptr);
    lifecycle_ = std::make_unique<IndexLifecycle>(store_.get(), meta_, options_, dir_ + "/index",
                                                  fs_, state_.get(), maintainer_.get());
  }
  uint64_t Generation() {
    absl::ReaderMutexLock lock(&state_->mu);
    return state_->spann != nullptr ? state_->spann->manifest().generation : 0;
  }
  size_t Buffered() {
    absl::ReaderMutexLock lock(&state_->mu);
    return state_->buffer.size();
  }

  std::string dir_;
  storage::FileSystem* fs_ = storage::FileSystem::Default();
  Options options_;
  std::unique_ptr<storage::RecordStore> store_;
  storage::StoredCollection meta_;
  std::unique_ptr<CollectionState> state_;
  std::unique_ptr<IndexMaintainer> maintainer_;
  std::unique_ptr<IndexLifecycle> lifecycle_;
};

TEST_F(IndexLifecycleTest, BuildCommitsANewGenerationAndFreesTheOldOne) {
  std::vector<IndexBuildProgress> seen;
  ASSERT_TRUE(
      lifecycle_->Build(kSpec, kRecords, [&](const IndexBuildProgress& p) { seen.push_back(p); })
          .ok());
  EXPECT_EQ(Generation(), 1u);
  EXPECT_EQ(lifecycle_->last_generation(), 1u);
  EXPECT_EQ(lifecycle_->Dir(1), absl::StrCat(dir_, "/index/c", meta_.id, ".g1"));
  EXPECT_TRUE(std::filesystem::is_directory(lifecycle_->Dir(1)));
  EXPECT_FALSE(std::filesystem::exists(lifecycle_->Dir(1) + ".tmp"));
  ASSERT_FALSE(seen.empty());
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i].fraction, seen[i - 1].fraction);
  EXPECT_EQ(seen.back().phase, "committing");
  EXPECT_DOUBLE_EQ(seen.back().fraction, 1.0);
  {
    absl::ReaderMutexLock lock(&state_->mu);
    EXPECT_EQ(state_->indexed_below, kRecords);
  }
  EXPECT_EQ(Buffered(), 0u);  // every vector is in the postings
  auto stored = store_->LoadIndex(meta_.id);
  ASSERT_TRUE(stored.ok() && stored->has_value());

  ASSERT_TRUE(lifecycle_->Build(kSpec, kRecords, nullptr).ok());
  EXPECT_EQ(Generation(), 2u);
  EXPECT_FALSE(std::filesystem::exists(lifecycle_->Dir(1)));  // freed after the commit
  EXPECT_TRUE(std::filesystem::is_directory(lifecycle_->Dir(2)));
}

TEST_F(IndexLifecycleTest, OpenFindsTheCommittedIndexAfterAReopen) {
  ASSERT_TRUE(lifecycle_->Build(kSpec, kRecords, nullptr).ok());
  const uint32_t postings = state_->spann->manifest().num_postings;
  Make();
  EXPECT_EQ(Generation(), 0u);
  auto stored = store_->LoadIndex(meta_.id);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  {
    absl::MutexLock lock(&state_->mu);
    ASSERT_TRUE(lifecycle_->Open(**stored).ok());
    EXPECT_EQ(state_->indexed_below, kRecords);
  }
  EXPECT_EQ(Generation(), 1u);
  EXPECT_EQ(state_->spann->manifest().num_postings, postings);
  // A later build in this process never reuses the generation in use.
  ASSERT_TRUE(lifecycle_->Build(kSpec, kRecords, nullptr).ok());
  EXPECT_EQ(Generation(), 2u);
}

TEST_F(IndexLifecycleTest, FlattenDropsTheIndexAndBuffersEveryVector) {
  ASSERT_TRUE(lifecycle_->Build(kSpec, kRecords, nullptr).ok());
  ASSERT_TRUE(lifecycle_->Flatten().ok());
  EXPECT_EQ(Generation(), 0u);
  EXPECT_EQ(Buffered(), kRecords);
  EXPECT_FALSE(std::filesystem::exists(lifecycle_->Dir(1)));
  auto stored = store_->LoadIndex(meta_.id);
  ASSERT_TRUE(stored.ok());
  EXPECT_FALSE(stored->has_value());
  EXPECT_TRUE(lifecycle_->Flatten().ok());  // already flat
}

TEST_F(IndexLifecycleTest, CentroidsOverTheRamBoundAreRefusedAndLeaveNoDirectory) {
  options_.index_ram_bytes_limit = 1;
  Make();
  absl::Status s = lifecycle_->Build(kSpec, kRecords, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("index_ram_bytes_limit"), std::string::npos) << s;
  EXPECT_EQ(Generation(), 0u);
  EXPECT_TRUE(std::filesystem::is_empty(dir_ + "/index"));
}

// Under a RAM limit the caches take what the limit leaves (not a fixed 256 MiB: at 10M x 128 with
// a 512 MB limit that left 90 MB unused); a posting_cache_bytes set by the user caps them.
TEST(IndexCacheBudgetTest, TheLimitDecidesUnlessTheUserCapsTheCaches) {
  constexpr size_t kMiB = size_t{1} << 20, kGiB = size_t{1} << 30;
  Options o;
  EXPECT_EQ(IndexCacheBudget(o, 100, 0, 16 * kGiB), 256 * kMiB);
  o.index_ram_bytes_limit = kGiB;
  EXPECT_EQ(IndexCacheBudget(o, 100 * kMiB, 800 * kMiB, 16 * kGiB), 924 * kMiB);
  EXPECT_EQ(IndexCacheBudget(o, 2 * kGiB, 800 * kMiB, 16 * kGiB), 0u);
  o.posting_cache_bytes = 8 * kMiB;
  EXPECT_EQ(IndexCacheBudget(o, 100 * kMiB, 800 * kMiB, 16 * kGiB), 8 * kMiB);
  EXPECT_EQ(IndexCacheBudget(o, kGiB - 5, 800 * kMiB, 16 * kGiB), 5u);
  o.index_ram_bytes_limit = 0;
  EXPECT_EQ(IndexCacheBudget(o, 100 * kMiB, 800 * kMiB, 16 * kGiB), 8 * kMiB);
}

// Without a limit the default holds every vector and a quarter more (a tenant's search scores
// its members in place of postings only then), from 256 MiB up to a quarter of the machine.
TEST(IndexCacheBudgetTest, TheDefaultHoldsEveryVectorUpToAQuarterOfTheMachine) {
  constexpr size_t kMiB = size_t{1} << 20, kGiB = size_t{1} << 30;
  const Options o;
  EXPECT_EQ(IndexCacheBudget(o, 100, 100 * kMiB, 16 * kGiB), 256 * kMiB);
  EXPECT_EQ(IndexCacheBudget(o, 100, 800 * kMiB, 16 * kGiB), 1000 * kMiB);
  EXPECT_EQ(IndexCacheBudget(o, 100, 40 * kGiB, 16 * kGiB), 4 * kGiB);
  EXPECT_EQ(IndexCacheBudget(o, 100, 800 * kMiB, 0), 1000 * kMiB);  // memory unknown
  EXPECT_EQ(IndexCacheBudget(o, 100, 800 * kMiB, 512 * kMiB), 256 * kMiB);
}

TEST(IndexCacheBudgetTest, MachineMemoryIsKnownAndAtMostThePhysicalMemory) {
  const size_t physical =
      static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGE_SIZE));
  EXPECT_GT(MachineMemoryBytes(), 0u);
  EXPECT_LE(MachineMemoryBytes(), physical);
}

TEST_F(IndexLifecycleTest, ABadSpecIsInvalidArgument) {
  EXPECT_EQ(lifecycle_->Build("spann:no_such_knob=1", kRecords, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(lifecycle_->last_generation(), 0u);
}

TEST_F(IndexLifecycleTest, ReleaseRemovesTheIndexDirectory) {
  ASSERT_TRUE(lifecycle_->Build(kSpec, kRecords, nullptr).ok());
  {
    absl::MutexLock lock(&state_->mu);
    lifecycle_->Release();
  }
  EXPECT_EQ(Generation(), 0u);
  EXPECT_FALSE(std::filesystem::exists(lifecycle_->Dir(1)));
}

TEST(IndexFormTest, AppendIndexFormAppendsEachVectorAfterThoseBefore) {
  std::vector<float> forms;
  AppendIndexForm(Metric::kCosine, {3, 4}, &forms);
  AppendIndexForm(Metric::kL2, {3, 4}, &forms);
  AppendIndexForm(Metric::kCosine, {0, 2}, &forms);
  EXPECT_EQ(forms, (std::vector<float>{0.6f, 0.8f, 3, 4, 0, 1}));
  std::vector<float> scratch;
  const std::vector<float> v = {1, 2, 2};
  const float* expected = IndexForm(Metric::kCosine, v, &scratch);
  forms.clear();
  AppendIndexForm(Metric::kCosine, v, &forms);
  EXPECT_EQ(forms, std::vector<float>(expected, expected + 3));
}

}  // namespace
}  // namespace shoal::db

#include "index/spann/posting_size.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "base/test_seed.h"
#include "index/spann/spann_options.h"

namespace shoal::index {
namespace {

using ::testing::HasSubstr;

// n points: in `clusters` tight Gaussian clusters (spread 0.05 around centres spread 1), or
// isotropic (clusters = 0).
std::vector<float> Points(size_t n, size_t dim, size_t clusters, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> centres(std::max<size_t>(clusters, 1) * dim);
  for (float& c : centres) c = g(rng);
  std::vector<float> x(n * dim);
  for (size_t i = 0; i < n; ++i) {
    const float* c = &centres[(clusters == 0 ? 0 : rng() % clusters) * dim];
    for (size_t j = 0; j < dim; ++j)
      x[i * dim + j] = clusters == 0 ? g(rng) : c[j] + 0.05f * g(rng);
  }
  return x;
}

SpannOptions Options() {
  auto o = ParseSpannSpec("spann:centroids=data,quant=rabitq:bits=5,target_recall=0.95");
  EXPECT_TRUE(o.ok()) << o.status();
  return *o;
}

TEST(PostingSizeTest, PostingsFollowTheSizeOfTheDatasNaturalClusters) {
  const uint32_t seed = base::TestSeed();
  auto backend = MakeCpuClusteringBackend(2);
  const size_t n = 4096, dim = 96;
  // Clusters of ~24 points: a query's 10 neighbours sit in one, and a posting larger than a
  // cluster only adds entries. Clusters of ~1,000: large postings cost one fixed cost where
  // small ones cost many.
  auto small = ChoosePostingSize(*backend, Points(n, dim, n / 24, seed).data(), n, dim, Metric::kL2,
                                 Options());
  auto large =
      ChoosePostingSize(*backend, Points(n, dim, 4, seed).data(), n, dim, Metric::kL2, Options());
  ASSERT_TRUE(small.ok() && large.ok());
  for (const auto* c : {&*small, &*large}) {
    std::cout << "chose 1/" << 1 / c->centroid_ratio << ":";
    const PostingSizeCandidate* want = nullptr;  // the rule: from the largest down
    for (const auto& k : c->candidates) {
      std::cout << " " << k.vectors_per_posting << " (P " << k.postings << ", C " << k.entries
                << ", cost " << k.cost << ")";
      EXPECT_GE(k.recall, 0.95);
    }
    for (auto k = c->candidates.rbegin(); k != c->candidates.rend(); ++k) {
      if (want == nullptr || k->cost < want->cost * (1 - kPostingSizeSmallerGain)) want = &*k;
    }
    std::cout << "\n";
    ASSERT_NE(want, nullptr);
    EXPECT_EQ(c->centroid_ratio, 1.0 / want->vectors_per_posting);
  }
  EXPECT_EQ(1 / small->centroid_ratio, 32);
  EXPECT_GE(1 / large->centroid_ratio, 128);
}

// Past one sample's rows, sizes are measured in regions at the data's own density. Clusters of
// ~24 in 32,768 rows: at full density a query's 10 neighbours are its cluster's, and the smallest
// posting holds them; a random sample of 8,192 rows (a quarter of the density) keeps ~6 of each
// cluster, so the sample's 10 neighbours are mostly other clusters' rows, found only by scanning
// many postings of any size, and the larger postings cost less (the measurement before regions
// chose 512 here).
TEST(PostingSizeTest, LargeDataIsMeasuredAtItsOwnDensity) {
  const uint32_t seed = base::TestSeed();
  auto backend = MakeCpuClusteringBackend(2);
  const size_t n = 4 * kPostingSizeSample, dim = 96;
  auto c = ChoosePostingSize(*backend, Points(n, dim, n / 24, seed).data(), n, dim, Metric::kL2,
                             Options());
  ASSERT_TRUE(c.ok()) << c.status();
  for (const auto& k : c->candidates) {
    std::cout << " " << k.vectors_per_posting << " (P " << k.postings << ", C " << k.entries
              << ", cost " << k.cost << ")";
  }
  std::cout << "\n";
  EXPECT_EQ(1 / c->centroid_ratio, 32);
}

TEST(PostingSizeTest, SameSeedSameChoiceAndBadSpecNamesTheKey) {
  auto backend = MakeCpuClusteringBackend(1);
  const auto x = Points(3000, 16, 8, 7);
  auto a = ChoosePostingSize(*backend, x.data(), 3000, 16, Metric::kL2, Options());
  auto b = ChoosePostingSize(*backend, x.data(), 3000, 16, Metric::kL2, Options());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->centroid_ratio, b->centroid_ratio);
  EXPECT_THAT(ParseSpannSpec("spann:centroids=gmm").status().message(),
              HasSubstr("spec.centroids"));
  auto o = ParseSpannSpec(SpannSpecString(Options()));
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->centroids_from_data);
}

}  // namespace
}  // namespace shoal::index

#include "index/spann/spann_auto.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "index/spann/spann_calibration.h"

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
  // half) replicas halve (0.63 GB) and bits drop to 2 (0.44 GB); with 256 MiB bits go to 1.
  const SpannOptions tight =
      AutoSpannOptions({.n = 1000000, .dim = 768, .ram_budget_bytes = 1ull << 30});
  EXPECT_EQ(tight.replicas, 2u);
  EXPECT_EQ(tight.quant, "rabitq:bits=2");
  const SpannOptions tighter =
      AutoSpannOptions({.n = 1000000, .dim = 768, .ram_budget_bytes = 256ull << 20});
  EXPECT_EQ(tighter.replicas, 2u);
  EXPECT_EQ(tighter.quant, "rabitq:bits=1");
  EXPECT_NEAR(roomy.centroid_ratio, 1.0 / 64, 1e-9);
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

}  // namespace
}  // namespace shoal::index

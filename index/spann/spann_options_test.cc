#include "index/spann/spann_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace shoal::index {
namespace {

using ::testing::HasSubstr;

TEST(SpannOptionsTest, ParsesKeysAndKeepsDefaults) {
  auto o = ParseSpannSpec("spann:centroid_ratio=0.1,replicas=8,navigator=tree,pruning_ratio=2");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_DOUBLE_EQ(o->centroid_ratio, 0.1);
  EXPECT_EQ(o->replicas, 8u);
  EXPECT_EQ(o->navigator, "tree");
  EXPECT_FLOAT_EQ(o->pruning_ratio, 2);
  EXPECT_EQ(o->max_postings, SpannOptions().max_postings);
  EXPECT_TRUE(ParseSpannSpec("spann").ok());
  EXPECT_TRUE(ParseSpannSpec("spann:").ok());
}

TEST(SpannOptionsTest, RejectsBadSpecsNamingTheKey) {
  EXPECT_THAT(ParseSpannSpec("ivf:nlist=3").status().message(), HasSubstr("unknown index 'ivf'"));
  EXPECT_THAT(ParseSpannSpec("spann:replicas=0").status().message(), HasSubstr("spec.replicas"));
  EXPECT_THAT(ParseSpannSpec("spann:replicas=2.5").status().message(), HasSubstr("integer"));
  EXPECT_THAT(ParseSpannSpec("spann:nope=1").status().message(), HasSubstr("spec.nope"));
  EXPECT_THAT(ParseSpannSpec("spann:seed").status().message(), HasSubstr("key=value"));
  EXPECT_THAT(ParseSpannSpec("spann:centroid_ratio=abc").status().message(),
              HasSubstr("not a number"));
  EXPECT_THAT(ParseSpannSpec("spann:pruning_ratio=0.5").status().message(),
              HasSubstr("spec.pruning_ratio"));
  EXPECT_THAT(ParseSpannSpec("spann:navigator=graph").status().message(),
              HasSubstr("spec.navigator"));
  EXPECT_THAT(ParseSpannSpec("spann:target_recall=1.5").status().message(),
              HasSubstr("spec.target_recall"));
}

TEST(SpannOptionsTest, AutoSpecs) {
  for (const char* spec : {"", "auto", "spann:auto", "spann:auto,replicas=2"}) {
    EXPECT_TRUE(IsAutoSpec(spec)) << spec;
  }
  for (const char* spec : {"spann", "spann:replicas=2", "flat", "spann:autox"}) {
    EXPECT_FALSE(IsAutoSpec(spec)) << spec;
  }
  SpannOptions base;
  base.quant = "sq8";
  auto o = ParseSpannSpec("spann:auto,replicas=2", base);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->quant, "sq8");
  EXPECT_EQ(o->replicas, 2u);
}

TEST(SpannOptionsTest, SpecStringAndManifestRoundTrip) {
  SpannOptions o;
  o.centroid_ratio = 0.0625;
  o.replicas = 3;
  o.seed = 42;
  o.quant = "rabitq:bits=2";
  auto back = ParseSpannSpec(SpannSpecString(o));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(SpannSpecString(*back), SpannSpecString(o));

  SpannManifest m;
  m.options = o;
  m.dimension = 784;
  m.metric = Metric::kInnerProduct;
  m.generation = 7;
  m.num_vectors = 60000;
  m.indexed_below = 60010;
  m.num_postings = 1200;
  m.posting_cap = 400;
  auto d = DecodeManifest(EncodeManifest(m), "t");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(EncodeManifest(*d), EncodeManifest(m));
  EXPECT_EQ(d->metric, Metric::kInnerProduct);
  EXPECT_EQ(DecodeManifest("garbage", "where").status().code(), absl::StatusCode::kDataLoss);

  // v2 carries the calibration table; v1 (written before it) still decodes, without one.
  m.calibration = {{1, 0.5f}, {4, 0.91f}, {9, 0.987f}};
  auto with = DecodeManifest(EncodeManifest(m), "t");
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(with->calibration, m.calibration);
  EXPECT_EQ(EncodeManifest(*with), EncodeManifest(m));
  const std::string v1 =
      "shoal-spann-v1\nspec=spann:replicas=2\ndimension=8\nmetric=0\ngeneration=3\n"
      "num_vectors=10\nindexed_below=10\nnum_postings=2\nposting_cap=16\n";
  auto old = DecodeManifest(v1, "old");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_TRUE(old->calibration.empty());
  EXPECT_EQ(old->options.replicas, 2u);
  std::string bad = EncodeManifest(m);
  bad.replace(bad.find("4:0.91"), 6, "4:1.91");
  EXPECT_EQ(DecodeManifest(bad, "t").status().code(), absl::StatusCode::kDataLoss);
  bad = EncodeManifest(m);
  bad.replace(bad.find("9:0.987"), 1, "3");  // not ascending
  EXPECT_EQ(DecodeManifest(bad, "t").status().code(), absl::StatusCode::kDataLoss);
  std::string broken = EncodeManifest(m);
  broken.replace(broken.find("dimension=784"), 13, "dimension=x");
  EXPECT_THAT(DecodeManifest(broken, "where").status().message(), HasSubstr("where"));

  // The restricted calibration: an optional line (v2 manifests written before it decode
  // without one), descending densities below 1.
  m.restricted = {{0.25f, {{2, 0.6f}, {9, 0.95f}}}, {0.0625f, {{3, 0.5f}, {20, 0.97f}}}};
  auto levels = DecodeManifest(EncodeManifest(m), "t");
  ASSERT_TRUE(levels.ok()) << levels.status();
  EXPECT_EQ(levels->restricted, m.restricted);
  std::string before = EncodeManifest(m);
  before.erase(before.find("restricted_calibration="));
  auto without = DecodeManifest(before, "t");
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_TRUE(without->restricted.empty());
  EXPECT_EQ(without->calibration, m.calibration);
  for (const char* wrong :
       {"0.0625@3:0.5|0.25@2:0.6", "1@2:0.6", "0.25@", "0.25@2:1.5", "x@2:0.6"}) {
    std::string text = EncodeManifest(m);
    const size_t at = text.find("restricted_calibration=") + 23;
    text.replace(at, text.find('\n', at) - at, wrong);
    EXPECT_EQ(DecodeManifest(text, "t").status().code(), absl::StatusCode::kDataLoss) << wrong;
  }

  // The pruned calibration: an optional line too, ascending ratios >= 1, each row's mean
  // postings at most its max_postings.
  m.pruned = {{1.3f, {{2, 0.7f, 1.5f}, {8, 0.96f, 4.25f}}}, {1.7f, {{4, 0.9f, 3.5f}}}};
  auto pruned = DecodeManifest(EncodeManifest(m), "t");
  ASSERT_TRUE(pruned.ok()) << pruned.status();
  EXPECT_EQ(pruned->pruned, m.pruned);
  std::string unpruned = EncodeManifest(m);
  unpruned.erase(unpruned.find("pruned_calibration="));
  auto no_line = DecodeManifest(unpruned, "t");
  ASSERT_TRUE(no_line.ok()) << no_line.status();
  EXPECT_TRUE(no_line->pruned.empty());
  EXPECT_EQ(no_line->restricted, m.restricted);
  for (const char* wrong : {"1.7@4:0.9:3.5|1.3@2:0.7:1.5", "0.5@2:0.7:1.5", "1.3@2:0.7:2.5",
                            "1.3@2:0.7", "1.3@", "1.3@4:0.9:3|1.3@8:0.9:3", "1.3@4:0.9:-1"}) {
    std::string text = EncodeManifest(m);
    const size_t at = text.find("pruned_calibration=") + 19;
    text.replace(at, text.find('\n', at) - at, wrong);
    EXPECT_EQ(DecodeManifest(text, "t").status().code(), absl::StatusCode::kDataLoss) << wrong;
  }
}

}  // namespace
}  // namespace shoal::index

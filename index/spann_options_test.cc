#include "index/spann_options.h"

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
  std::string broken = EncodeManifest(m);
  broken.replace(broken.find("dimension=784"), 13, "dimension=x");
  EXPECT_THAT(DecodeManifest(broken, "where").status().message(), HasSubstr("where"));
}

}  // namespace
}  // namespace shoal::index

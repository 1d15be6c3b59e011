#include "db/attribute_index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "base/test_seed.h"
#include "db/validation.h"

namespace shoal::db {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<uint64_t> Ids(const index::IdBitmap& bitmap) {
  std::vector<uint64_t> ids;
  bitmap.ForEach([&](uint64_t id) { ids.push_back(id); });
  return ids;
}

class AttributeIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    attrs_.Put(0, {{"n", int64_t{3}}, {"lang", std::string("en")}}, {"red"});
    attrs_.Put(1, {{"n", 3.0}, {"lang", std::string("de")}}, {"red", "blue"});
    attrs_.Put(2, {{"n", 3.5}, {"flag", true}}, {});
    attrs_.Put(5, {}, {"blue"});  // no attributes, but live (Not sees it)
  }
  AttributeIndex attrs_;
};

TEST_F(AttributeIndexTest, EqComparesNumbersAcrossIntAndDouble) {
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::Eq("n", int64_t{3}))), ElementsAre(0, 1));
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::Eq("n", 3.0))), ElementsAre(0, 1));
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::Eq("n", 3.5))), ElementsAre(2));
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::Eq("lang", "en"))), ElementsAre(0));
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::Eq("flag", true))), ElementsAre(2));
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::Eq("flag", int64_t{1}))), IsEmpty());  // bool != number
}

// A filter that can only match nothing says why, naming the attribute; one that can match
// says nothing, however few records it matches.
TEST_F(AttributeIndexTest, FilterWarningsNameWhatCanMatchNothing) {
  EXPECT_THAT(attrs_.FilterWarnings(shoal::Eq("lang", "fr")), IsEmpty());  // a value, not a type
  EXPECT_THAT(attrs_.FilterWarnings(shoal::Range("n", 100, 200)), IsEmpty());
  EXPECT_THAT(attrs_.FilterWarnings(shoal::Eq("flag", false)), IsEmpty());
  EXPECT_THAT(attrs_.FilterWarnings(shoal::HasTag("red")), IsEmpty());
  EXPECT_THAT(attrs_.FilterWarnings(shoal::Eq("lnag", "en")),
              ElementsAre("filter: no record has attribute 'lnag'"));
  EXPECT_THAT(attrs_.FilterWarnings(shoal::HasTag("green")),
              ElementsAre("filter: no record has tag 'green'"));
  EXPECT_THAT(attrs_.FilterWarnings(shoal::Eq("n", "3")),
              ElementsAre("filter: attribute 'n' holds only numbers, compared with a string: the "
                          "comparison matches no record"));
  EXPECT_THAT(attrs_.FilterWarnings(shoal::Range("lang", 0, 1)),
              ElementsAre("filter: attribute 'lang' holds only strings, compared with a number "
                          "range: the comparison matches no record"));
  EXPECT_THAT(attrs_.FilterWarnings(shoal::Eq("flag", int64_t{1})),
              ElementsAre("filter: attribute 'flag' holds only booleans, compared with a number: "
                          "the comparison matches no record"));
  // Leaves under And, Or and Not are all looked at, each warning once, in filter order.
  EXPECT_THAT(
      attrs_.FilterWarnings(
          shoal::And({shoal::Eq("lang", "en"),
                      shoal::Or({shoal::Eq("x", int64_t{1}), shoal::Not(shoal::HasTag("green"))}),
                      shoal::Eq("x", int64_t{2})})),
      ElementsAre("filter: no record has attribute 'x'", "filter: no record has tag 'green'"));
  // Once the last record holding an attribute is gone, so is the attribute.
  attrs_.Remove(2);
  EXPECT_THAT(attrs_.FilterWarnings(shoal::Eq("flag", true)),
              ElementsAre("filter: no record has attribute 'flag'"));
}

TEST_F(AttributeIndexTest, EqOfACharLiteralIsAString) {
  EXPECT_TRUE(std::holds_alternative<std::string>(shoal::Eq("lang", "en").value));
  EXPECT_TRUE(std::holds_alternative<int64_t>(shoal::Eq("n", 3).value));
}

TEST_F(AttributeIndexTest, RangeIsInclusiveAndNumericOnly) {
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::Range("n", 3, 3))), ElementsAre(0, 1));
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::Range("n", 3.1, 10))), ElementsAre(2));
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::Range("n", -inf, inf))), ElementsAre(0, 1, 2));
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::Range("lang", -inf, inf))), IsEmpty());
}

TEST(AttributeIndexExactTest, RangeComparesLargeIntsExactly) {
  AttributeIndex attrs;
  const int64_t big = (int64_t{1} << 53) + 1;  // not a double
  attrs.Put(1, {{"n", big}}, {});
  attrs.Put(2, {{"n", std::numeric_limits<int64_t>::max()}}, {});
  const double two53 = std::ldexp(1.0, 53);
  EXPECT_THAT(Ids(attrs.Evaluate(shoal::Range("n", two53, two53))), IsEmpty());
  EXPECT_THAT(Ids(attrs.Evaluate(shoal::Range("n", two53, two53 + 2))), ElementsAre(1));
  EXPECT_THAT(Ids(attrs.Evaluate(shoal::Range("n", 0, std::ldexp(1.0, 63)))), ElementsAre(1, 2));
  EXPECT_THAT(Ids(attrs.Evaluate(shoal::Eq("n", two53))), IsEmpty());
}

TEST_F(AttributeIndexTest, TagsAndCombinators) {
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::HasTag("blue"))), ElementsAre(1, 5));
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::And({shoal::HasTag("red"), shoal::HasTag("blue")}))),
              ElementsAre(1));
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::Or({shoal::Eq("lang", "en"), shoal::HasTag("blue")}))),
              ElementsAre(0, 1, 5));
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::Not(shoal::HasTag("red")))), ElementsAre(2, 5));
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::Not(shoal::Eq("nope", int64_t{1})))),
              ElementsAre(0, 1, 2, 5));
  EXPECT_EQ(attrs_.Count(shoal::HasTag("missing")), 0u);
}

TEST_F(AttributeIndexTest, PutReplacesAndRemoveForgets) {
  attrs_.Put(0, {{"lang", std::string("fr")}}, {"green"});
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::Eq("lang", "en"))), IsEmpty());
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::Eq("n", int64_t{3}))), ElementsAre(1));
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::HasTag("red"))), ElementsAre(1));
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::HasTag("green"))), ElementsAre(0));
  attrs_.Remove(1);
  attrs_.Remove(99);  // absent: no-op
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::HasTag("red"))), IsEmpty());
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::Not(shoal::HasTag("green")))), ElementsAre(2, 5));
  EXPECT_EQ(attrs_.size(), 3u);
  EXPECT_GT(attrs_.MemoryBytes(), 0u);
}

TEST_F(AttributeIndexTest, RepeatedTagIsOneMembership) {
  attrs_.Put(7, {}, {"x", "x"});
  attrs_.Remove(7);
  EXPECT_THAT(Ids(attrs_.Evaluate(shoal::HasTag("x"))), IsEmpty());
}

// Matches (one id at a time, for Scroll) and a Checker answer exactly as Evaluate on random
// records and random filters, int64/double cross-compares and large ints included.
Filter RandomFilter(std::mt19937& rng, int depth) {
  const std::vector<AttributeValue> values = {int64_t{1},
                                              int64_t{2},
                                              2.0,
                                              2.5,
                                              true,
                                              false,
                                              std::string("x"),
                                              int64_t{1} << 60,
                                              -0.0,
                                              (int64_t{1} << 53) + 1,
                                              9007199254740992.0};
  const int op = std::uniform_int_distribution<int>(0, depth > 2 ? 2 : 5)(rng);
  const std::string name = rng() % 2 ? "a" : "b";
  switch (op) {
    case 0:
      return shoal::Eq(name, values[rng() % values.size()]);
    case 1: {
      if (rng() % 2) {
        return shoal::Range(name, static_cast<double>(rng() % 4) - 0.5,
                            static_cast<double>(rng() % 4));
      }
      // Bounds at the edges of exactness: 2^53 and its neighbours, signed zeros, infinities.
      const double inf = std::numeric_limits<double>::infinity(), two53 = 9007199254740992.0;
      const std::vector<double> bounds = {
          -inf, -3, -0.0, 0.0, two53, std::nextafter(two53, inf), 1152921504606846976.0, inf};
      double lo = bounds[rng() % bounds.size()], hi = bounds[rng() % bounds.size()];
      if (lo > hi) std::swap(lo, hi);
      return shoal::Range(name, lo, hi);
    }
    case 2:
      return shoal::HasTag(rng() % 2 ? "t" : "u");
    case 3:
      return shoal::Not(RandomFilter(rng, depth + 1));
    default: {
      std::vector<Filter> ops;
      for (int i = 0, n = 1 + static_cast<int>(rng() % 3); i < n; ++i) {
        ops.push_back(RandomFilter(rng, depth + 1));
      }
      return op == 4 ? shoal::And(std::move(ops)) : shoal::Or(std::move(ops));
    }
  }
}

TEST(AttributeIndexMatchesTest, AgreesWithEvaluateOnRandomFilters) {
  const uint32_t seed = base::TestSeed();
  std::mt19937 rng(seed);
  const std::vector<AttributeValue> values = {int64_t{1},
                                              int64_t{2},
                                              2.0,
                                              2.5,
                                              0.75,
                                              true,
                                              false,
                                              std::string("x"),
                                              std::string("y"),
                                              int64_t{1} << 60,
                                              int64_t{-3},
                                              -0.0,
                                              0.0,
                                              (int64_t{1} << 53) + 1,
                                              9007199254740992.0};
  AttributeIndex attrs;
  auto put = [&](uint64_t id) {
    std::map<std::string, AttributeValue> a;
    if (rng() % 3) a["a"] = values[rng() % values.size()];
    if (rng() % 3) a["b"] = values[rng() % values.size()];
    std::vector<std::string> tags;
    if (rng() % 2) tags.push_back("t");
    attrs.Put(id, a, tags);
  };
  for (uint64_t id = 0; id < 200; ++id) {
    if (id % 7 != 3) put(id);  // some ids are never live
  }
  // Evaluate reads the values by value (ordered numbers, grouped strings and booleans), Matches
  // the record's own: checked after the first puts, then after replacements and removals.
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 300; ++i) {
      const Filter f = RandomFilter(rng, 0);
      const index::IdBitmap passing = attrs.Evaluate(f);
      const AttributeIndex::Checker checker = attrs.MakeChecker(f);
      for (uint64_t id = 0; id < 200; ++id) {
        ASSERT_EQ(attrs.Matches(f, id), passing.Test(id))
            << "seed " << seed << " round " << round << " filter " << i << " id " << id;
        checker.Prefetch(id);
        ASSERT_EQ(checker.Matches(id), passing.Test(id))
            << "checker, seed " << seed << " round " << round << " filter " << i << " id " << id;
      }
      // A leaf kept as one set of ids (a tag, an Eq of a string or a boolean) is that set.
      const tenants::CompactIdSet* set = nullptr;
      if (attrs.LeafIds(f, &set)) {
        std::vector<uint64_t> listed;
        if (set != nullptr) set->ForEach([&](uint64_t id) { listed.push_back(id); });
        EXPECT_EQ(listed, Ids(passing)) << "seed " << seed << " round " << round << " filter " << i;
      }
    }
    for (int change = 0; change < 300; ++change) {
      const uint64_t id = rng() % 200;
      if (id % 7 == 3) continue;
      if (rng() % 3 == 0) {
        attrs.Remove(id);
      } else {
        put(id);
      }
    }
  }
}

TEST(ValidateFilterTest, ErrorsNameTheNode) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto message = [](const Filter& f) { return std::string(ValidateFilter(f).message()); };
  EXPECT_TRUE(ValidateFilter(shoal::And({shoal::HasTag("a"), shoal::Range("p", 1, 2)})).ok());
  EXPECT_THAT(message(shoal::And({shoal::HasTag("a"), shoal::Range("p", nan, 2)})),
              HasSubstr("filter.and[1].range.lo: NaN"));
  EXPECT_THAT(message(shoal::Range("p", 3, 2)), HasSubstr("filter.range: lo 3 > hi 2"));
  EXPECT_THAT(message(shoal::Range("p", 1, nan)), HasSubstr("filter.range.hi"));
  EXPECT_THAT(message(shoal::Or({})), HasSubstr("filter.or: needs at least one operand"));
  EXPECT_THAT(message(Filter{}), HasSubstr("filter.and: needs at least one operand"));
  EXPECT_THAT(message(shoal::Not(shoal::Eq("bad name", int64_t{1}))),
              HasSubstr("filter.not.eq.name"));
  EXPECT_THAT(message(shoal::Eq("x", nan)), HasSubstr("filter.eq.value"));
  EXPECT_THAT(message(shoal::HasTag("")), HasSubstr("filter.has_tag"));
  Filter not_two = shoal::Not(shoal::HasTag("a"));
  not_two.operands.push_back(shoal::HasTag("b"));
  EXPECT_THAT(message(not_two), HasSubstr("filter.not: needs exactly one operand"));
  Filter leaf = shoal::HasTag("a");
  leaf.operands.push_back(shoal::HasTag("b"));
  EXPECT_THAT(message(leaf), HasSubstr("filter.has_tag: a leaf takes no operands"));
  Filter unknown;
  unknown.op = static_cast<Filter::Op>(42);
  EXPECT_THAT(message(unknown), HasSubstr("unknown filter op 42"));
  Filter deep = shoal::HasTag("a");
  for (size_t i = 0; i < kMaxFilterDepth + 1; ++i) deep = shoal::Not(deep);
  EXPECT_THAT(message(deep), HasSubstr("nested deeper than"));
  for (const auto& f : {shoal::Or({}), shoal::Range("p", 3, 2)}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ValidateFilter(f)));
  }
}

}  // namespace
}  // namespace shoal::db

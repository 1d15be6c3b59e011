#include "rpc/console/console_json.h"

#include <gtest/gtest.h>

#include <cmath>

namespace shoal::rpc::console {
namespace {

TEST(ConsoleJsonTest, KeysAreNumbersOrStrings) {
  EXPECT_EQ(*KeyFromJson(Json(7), "key"), Key(uint64_t{7}));
  EXPECT_EQ(*KeyFromJson(Json("7"), "key"), Key(std::string("7")));
  EXPECT_EQ(*KeyFromJson(Json(18446744073709551615ull), "key"),
            Key(uint64_t{18446744073709551615ull}));
  for (const Json& bad : {Json(-1), Json(1.5), Json(true), Json(nullptr), Json::array()}) {
    absl::Status status = KeyFromJson(bad, "keys[4]").status();
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << bad;
    EXPECT_EQ(status.message().rfind("keys[4]: ", 0), 0u) << status;
  }
  EXPECT_EQ(KeyToJson(Key(std::string("a"))), Json("a"));
  EXPECT_EQ(KeyToJson(Key(uint64_t{3})), Json(3));
}

TEST(ConsoleJsonTest, VectorsAndBodies) {
  EXPECT_EQ(*VectorFromJson(Json::parse("[1, 2.5, -3]"), "vector"),
            (std::vector<float>{1, 2.5f, -3}));
  EXPECT_EQ(VectorFromJson(Json::parse("[1, \"2\"]"), "vector").status().message().substr(0, 10),
            "vector[1]:");
  EXPECT_FALSE(VectorFromJson(Json(3), "vector").ok());
  EXPECT_TRUE(ParseBody("")->is_object());
  EXPECT_TRUE(absl::IsInvalidArgument(ParseBody("[1]").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseBody("{").status()));
}

TEST(ConsoleJsonTest, FiltersUseTheWireFormAndItsChecks) {
  absl::StatusOr<Filter> filter =
      FilterFromJson(Json::parse(R"({"all_of": {"filters": [{"has_tag": "new"},
                     {"range": {"name": "price", "lo": 1}}]}})"),
                     "filter");
  ASSERT_TRUE(filter.ok()) << filter.status();
  EXPECT_EQ(filter->op, Filter::Op::kAnd);
  ASSERT_EQ(filter->operands.size(), 2u);
  EXPECT_EQ(filter->operands[1].lo, 1);
  EXPECT_TRUE(std::isinf(filter->operands[1].hi));
  absl::Status unset = FilterFromJson(Json::object(), "filter").status();
  EXPECT_EQ(unset.message().rfind("filter", 0), 0u) << unset;
  EXPECT_FALSE(FilterFromJson(Json::parse(R"({"nope": 1})"), "filter").ok());
  EXPECT_FALSE(FilterFromJson(Json(1), "filter").ok());
}

TEST(ConsoleJsonTest, OptionalMembersAndStatusMapping) {
  Json body = {{"k", 5}, {"name", "x"}, {"bad", -1}};
  EXPECT_EQ(*OptionalUint(body, "k", 10, 1, 100), 5u);
  EXPECT_EQ(*OptionalUint(body, "missing", 10, 1, 100), 10u);
  EXPECT_EQ(OptionalUint(body, "bad", 10, 1, 100).status().message().rfind("bad: ", 0), 0u);
  EXPECT_FALSE(OptionalUint(body, "k", 10, 6, 100).ok());
  EXPECT_EQ(*OptionalString(body, "name"), "x");
  EXPECT_FALSE(OptionalString(body, "k").ok());
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kUnauthenticated), 401);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kPermissionDenied), 403);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kDataLoss), 500);
  EXPECT_EQ(ErrorToJson(absl::NotFoundError("x"))["error"]["code"], "NOT_FOUND");
}

}  // namespace
}  // namespace shoal::rpc::console

#include "cluster/shard_map.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shoal::cluster {
namespace {

TEST(ShardMapTest, EncodesAndDecodesEveryField) {
  ShardMap map{.spec = {.name = "docs",
                        .dimension = 8,
                        .metric = Metric::kCosine,
                        .shards = 3,
                        .replication = 2},
               .version = 7,
               .replicas = {{"a", "b"}, {"b", "c"}, {"c", "a"}},
               .stream_replicas = 1,
               .incarnation = 0x1234567890abcdefULL};
  absl::StatusOr<ShardMap> back = DecodeShardMap(EncodeShardMap(map));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->spec.name, "docs");
  EXPECT_EQ(back->spec.dimension, 8u);
  EXPECT_EQ(back->spec.metric, Metric::kCosine);
  EXPECT_EQ(back->spec.shards, 3u);
  EXPECT_EQ(back->spec.replication, 2u);
  EXPECT_EQ(back->version, 7);
  EXPECT_EQ(back->replicas, map.replicas);
  EXPECT_EQ(back->incarnation, map.incarnation);
}

TEST(ShardMapTest, DecodeReturnsDataLossOnBadJson) {
  EXPECT_TRUE(absl::IsDataLoss(DecodeShardMap("{").status()));
  EXPECT_TRUE(absl::IsDataLoss(DecodeShardMap(R"({"name": "x"})").status()));
  // Three shards but two replica lists.
  EXPECT_TRUE(absl::IsDataLoss(DecodeShardMap(R"({"name":"x","dimension":2,"metric":"l2",)"
                                              R"("shards":3,"replication":1,"version":1,)"
                                              R"("replicas":[["a"],["a"]]})")
                                   .status()));
}

TEST(ShardMapTest, AssignsEachShardToDistinctNodesEvenly) {
  absl::StatusOr<std::vector<std::vector<std::string>>> replicas =
      AssignShards({"n3", "n1", "n2"}, 3, 2);
  ASSERT_TRUE(replicas.ok()) << replicas.status();
  std::map<std::string, int> load;
  for (const auto& nodes : *replicas) {
    ASSERT_EQ(nodes.size(), 2u);
    EXPECT_NE(nodes[0], nodes[1]);
    for (const std::string& node : nodes) ++load[node];
  }
  EXPECT_THAT(load, testing::UnorderedElementsAre(testing::Pair("n1", 2), testing::Pair("n2", 2),
                                                  testing::Pair("n3", 2)));
}

TEST(ShardMapTest, AssignRefusesFewerNodesThanReplicas) {
  absl::Status status = AssignShards({"n1"}, 3, 2).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
  EXPECT_THAT(status.message(), testing::HasSubstr("replication"));
}

TEST(ShardMapTest, ValidateNamesTheField) {
  CollectionSpec spec{.name = "x", .dimension = 2, .shards = 0, .replication = 1};
  EXPECT_THAT(ValidateShardedSpec(spec).message(), testing::HasSubstr("spec.shards"));
  spec.shards = 2;
  spec.replication = 0;
  EXPECT_THAT(ValidateShardedSpec(spec).message(), testing::HasSubstr("spec.replication"));
  spec.replication = 2;
  EXPECT_TRUE(ValidateShardedSpec(spec).ok());
  spec.name = "a@1";
  EXPECT_THAT(ValidateShardedSpec(spec).message(), testing::HasSubstr("spec.name"));
  spec.name = "x";
  spec.dimension = 0;
  EXPECT_THAT(ValidateShardedSpec(spec).message(), testing::HasSubstr("spec.dimension"));
}

TEST(ShardMapTest, RereplicateReplacesGoneNodesWithTheLeastLoaded) {
  ShardMap map{.spec = {.name = "x", .dimension = 2, .shards = 3, .replication = 2},
               .version = 1,
               .replicas = {{"n1", "n2"}, {"n2", "n3"}, {"n3", "n1"}}};
  EXPECT_FALSE(Rereplicate({"n1", "n2", "n3"}, map));
  EXPECT_EQ(map.version, 1);
  ASSERT_TRUE(Rereplicate({"n1", "n3"}, map));
  EXPECT_EQ(map.version, 2);
  EXPECT_EQ(map.replicas[0], (std::vector<std::string>{"n1", "n3"}));
  EXPECT_EQ(map.replicas[1], (std::vector<std::string>{"n3", "n1"}));
  EXPECT_EQ(map.replicas[2], (std::vector<std::string>{"n3", "n1"}));
  // A node that comes back is used only when a shard lacks replicas.
  EXPECT_FALSE(Rereplicate({"n1", "n2", "n3"}, map));
  // Fewer live nodes than replicas: as many as there are.
  ASSERT_TRUE(Rereplicate({"n1"}, map));
  for (const auto& nodes : map.replicas) EXPECT_EQ(nodes, (std::vector<std::string>{"n1"}));
}

// The hash decides where stored records live, so it must never change: these values pin it.
TEST(ShardMapTest, ShardOfKeyIsStable) {
  EXPECT_EQ(ShardOfKey(uint64_t{0}, 1000), ShardOfKey(uint64_t{0}, 1000));
  EXPECT_NE(ShardOfKey(uint64_t{7}, 1 << 30), ShardOfKey(std::string("7"), 1 << 30));
  const uint32_t a = ShardOfKey(uint64_t{42}, 1u << 31);
  const uint32_t b = ShardOfKey(std::string("doc-42"), 1u << 31);
  EXPECT_EQ(a, 705110042u);
  EXPECT_EQ(b, 501523029u);
}

TEST(ShardMapTest, ShardOfKeySpreadsKeys) {
  std::map<uint32_t, int> counts;
  for (uint64_t key = 0; key < 3000; ++key) ++counts[ShardOfKey(key, 3)];
  ASSERT_EQ(counts.size(), 3u);
  for (const auto& [shard, count] : counts) EXPECT_GT(count, 800) << "shard " << shard;
}

TEST(ShardMapTest, ShardCollectionNamesRoundTrip) {
  EXPECT_EQ(ShardCollectionName("docs", 2), "docs@2");
  auto parsed = ParseShardCollectionName("docs@2");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->first, "docs");
  EXPECT_EQ(parsed->second, 2u);
  EXPECT_FALSE(ParseShardCollectionName("docs").has_value());
  EXPECT_FALSE(ParseShardCollectionName("docs@x").has_value());
  EXPECT_EQ(StreamName("docs", 2), "shoal_docs_2");
  EXPECT_EQ(StreamSubject("docs", 2), "shoal.docs.2");
}

ShardMap TwoNodeMap() {
  return ShardMap{.spec = {.name = "docs", .dimension = 8, .shards = 3, .replication = 2},
                  .version = 1,
                  .replicas = {{"n1", "n2"}, {"n2", "n1"}, {"n1", "n2"}}};
}

std::map<std::string, int> Loads(const ShardMap& map) {
  std::map<std::string, int> load;
  for (const auto& nodes : map.replicas) {
    for (const std::string& node : nodes) ++load[node];
  }
  return load;
}

TEST(ShardMapTest, MovesEncodeAndDecode) {
  ShardMap map = TwoNodeMap();
  map.move = ShardMap::Move{.shard = 2, .from = "n1", .to = "n3"};
  absl::StatusOr<ShardMap> back = DecodeShardMap(EncodeShardMap(map));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->move, map.move);
  map.move->shard = 3;  // past the last shard
  EXPECT_TRUE(absl::IsDataLoss(DecodeShardMap(EncodeShardMap(map)).status()));
}

TEST(ShardMapTest, AJoiningNodeGetsItsShareOneMoveAtATime) {
  ShardMap map = TwoNodeMap();
  const std::vector<std::string> live = {"n1", "n2", "n3"};
  int moves = 0;
  while (PlanMove(live, map)) {
    ASSERT_TRUE(map.move.has_value());
    const uint32_t shard = map.move->shard;
    EXPECT_EQ(map.move->to, "n3");
    EXPECT_FALSE(ReadableReplica(map, shard, "n3")) << "n3 reads before it caught up";
    EXPECT_TRUE(ReadableReplica(map, shard, map.move->from));
    EXPECT_FALSE(PlanMove(live, map)) << "a second move while one is under way";
    ASSERT_TRUE(CompleteMove(map));
    EXPECT_FALSE(map.move.has_value());
    EXPECT_TRUE(ReadableReplica(map, shard, "n3"));
    EXPECT_EQ(map.replicas[shard].size(), 2u);
    ASSERT_LT(++moves, 10);
  }
  EXPECT_EQ(moves, 2);
  EXPECT_EQ(map.version, 5);  // two moves, two completions
  EXPECT_EQ(Loads(map), (std::map<std::string, int>{{"n1", 2}, {"n2", 2}, {"n3", 2}}));
  EXPECT_FALSE(CompleteMove(map));
}

TEST(ShardMapTest, AMoveWhoseTargetDiesIsDropped) {
  ShardMap map = TwoNodeMap();
  ASSERT_TRUE(PlanMove({"n1", "n2", "n3"}, map));
  const uint32_t shard = map.move->shard;
  ASSERT_TRUE(Rereplicate({"n1", "n2"}, map));  // n3's lease expired
  EXPECT_FALSE(map.move.has_value());
  EXPECT_EQ(map.replicas[shard].size(), 2u);
  EXPECT_EQ(Loads(map), (std::map<std::string, int>{{"n1", 3}, {"n2", 3}}));
}

TEST(ShardMapTest, AMoveWhoseSourceDiesCompletesWithTheTarget) {
  ShardMap map = TwoNodeMap();
  ASSERT_TRUE(PlanMove({"n1", "n2", "n3"}, map));
  const ShardMap::Move move = *map.move;
  std::vector<std::string> live = {"n1", "n2", "n3"};
  live.erase(std::find(live.begin(), live.end(), move.from));
  Rereplicate(live, map);
  ASSERT_TRUE(map.move.has_value()) << "the target still catches up";
  ASSERT_TRUE(CompleteMove(map));
  EXPECT_TRUE(ReadableReplica(map, move.shard, "n3"));
  EXPECT_FALSE(ReadableReplica(map, move.shard, move.from));
}

TEST(ShardMapTest, ABalancedMapPlansNoMove) {
  ShardMap map = TwoNodeMap();
  EXPECT_FALSE(PlanMove({"n1", "n2"}, map));
  map.replicas = {{"n1", "n2"}, {"n2", "n3"}, {"n3", "n1"}};
  EXPECT_FALSE(PlanMove({"n1", "n2", "n3"}, map));
  EXPECT_EQ(map.version, 1);
}

TEST(ShardMapTest, AnOperatorsMoveIsCheckedAndCompletesLikeAPlannedOne) {
  ShardMap map = TwoNodeMap();  // 3 shards, each on n1 and n2
  const std::vector<std::string> live = {"n1", "n2", "n3"};
  absl::Status s = RequestMove(live, 3, "n1", "n3", map);
  EXPECT_TRUE(absl::IsInvalidArgument(s) && s.message().find("shard") == 0) << s;
  s = RequestMove(live, 0, "n3", "n1", map);
  EXPECT_TRUE(absl::IsInvalidArgument(s) && s.message().find("from") == 0) << s;
  s = RequestMove(live, 0, "n1", "n4", map);
  EXPECT_TRUE(absl::IsInvalidArgument(s) && s.message().find("to: node 'n4' is not live") == 0)
      << s;
  s = RequestMove(live, 0, "n1", "n2", map);
  EXPECT_TRUE(absl::IsInvalidArgument(s) && s.message().find("already") != std::string::npos) << s;
  EXPECT_EQ(map.version, 1) << "a refused move changes nothing";
  ASSERT_TRUE(RequestMove(live, 1, "n2", "n3", map).ok());
  EXPECT_EQ(map.version, 2);
  EXPECT_EQ(map.move, (ShardMap::Move{.shard = 1, .from = "n2", .to = "n3"}));
  EXPECT_FALSE(ReadableReplica(map, 1, "n3"));
  EXPECT_TRUE(absl::IsFailedPrecondition(RequestMove(live, 2, "n1", "n3", map)));
  ASSERT_TRUE(CompleteMove(map));
  EXPECT_EQ(map.replicas[1], (std::vector<std::string>{"n1", "n3"}));
}

}  // namespace
}  // namespace shoal::cluster

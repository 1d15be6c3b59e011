#include "cluster/shard_apply.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rpc/convert.h"
#include "shoal/cluster/v1/shard_log.pb.h"

namespace shoal::cluster {
namespace {

std::string Upserts(std::vector<uint64_t> keys, const std::string& tenant = "") {
  cluster::v1::ShardLogEntry entry;
  entry.set_tenant(tenant);
  for (uint64_t key : keys) {
    rpc::RecordToProto(Record{.key = key, .vector = {float(key), 1.0f}}, entry.add_upserts());
  }
  return entry.SerializeAsString();
}

std::string Deletes(std::vector<uint64_t> keys) {
  cluster::v1::ShardLogEntry entry;
  for (uint64_t key : keys) rpc::KeyToProto(Key{key}, entry.add_deletes());
  return entry.SerializeAsString();
}

absl::Status Add(ApplyGrouper& grouper, uint64_t sequence, const std::string& bytes) {
  return grouper.Add(sequence, bytes.data(), bytes.size());
}

TEST(ApplyGrouperTest, MergesConsecutiveUpsertsAndDeletes) {
  ApplyGrouper grouper;
  ASSERT_TRUE(Add(grouper, 1, Upserts({1, 2})).ok());
  ASSERT_TRUE(Add(grouper, 2, Upserts({3})).ok());
  ASSERT_TRUE(Add(grouper, 3, Deletes({7, 8})).ok());
  ASSERT_TRUE(Add(grouper, 4, Deletes({9})).ok());
  ASSERT_TRUE(Add(grouper, 5, Upserts({4})).ok());
  std::vector<ApplyGroup> groups = grouper.Take();
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].upserts.size(), 3u);
  EXPECT_EQ(groups[0].last_sequence, 2u);
  EXPECT_EQ(std::get<uint64_t>(groups[0].upserts[2].key), 3u);
  EXPECT_EQ(groups[0].upserts[2].vector, (std::vector<float>{3.0f, 1.0f}));
  EXPECT_EQ(groups[1].deletes.size(), 3u);
  EXPECT_EQ(groups[1].last_sequence, 4u);
  EXPECT_EQ(groups[2].upserts.size(), 1u);
  EXPECT_EQ(groups[2].last_sequence, 5u);
  EXPECT_TRUE(grouper.Take().empty());
}

TEST(ApplyGrouperTest, ARepeatedKeyOrAnotherTenantStartsAGroup) {
  ApplyGrouper grouper;
  ASSERT_TRUE(Add(grouper, 1, Upserts({1, 2})).ok());
  ASSERT_TRUE(Add(grouper, 2, Upserts({2, 3})).ok());  // key 2 again: its own group
  ASSERT_TRUE(Add(grouper, 3, Upserts({4}, "acme")).ok());
  ASSERT_TRUE(Add(grouper, 4, Upserts({5}, "acme")).ok());
  std::vector<ApplyGroup> groups = grouper.Take();
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].upserts.size(), 2u);
  EXPECT_EQ(groups[1].upserts.size(), 2u);
  EXPECT_EQ(groups[1].tenant, "");
  EXPECT_EQ(groups[2].tenant, "acme");
  EXPECT_EQ(groups[2].upserts.size(), 2u);
  // After Take, a key seen before may join the new first group.
  ASSERT_TRUE(Add(grouper, 5, Upserts({1})).ok());
  ASSERT_TRUE(Add(grouper, 6, Upserts({2})).ok());
  EXPECT_EQ(grouper.Take().size(), 1u);
}

TEST(ApplyGrouperTest, BytesThatDoNotDecodeAreInvalidArgumentAndAddNothing) {
  ApplyGrouper grouper;
  const std::string junk = "\xff\xff\xff";
  absl::Status s = Add(grouper, 9, junk);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("log entry 9"), std::string::npos) << s;
  cluster::v1::ShardLogEntry keyless;
  keyless.add_upserts()->add_vector(1.0f);
  EXPECT_TRUE(absl::IsInvalidArgument(Add(grouper, 10, keyless.SerializeAsString())));
  EXPECT_TRUE(grouper.Take().empty());
}

// A fetch of many large entries becomes several DB calls, none over kMaxGroupRecords.
TEST(ApplyGrouperTest, GroupsStopGrowingAtTheirLimit) {
  ApplyGrouper grouper;
  std::vector<uint64_t> keys;
  uint64_t next = 0;
  for (uint64_t sequence = 1; sequence <= 40; ++sequence) {
    keys.clear();
    for (int i = 0; i < 500; ++i) keys.push_back(next++);
    ASSERT_TRUE(Add(grouper, sequence, Upserts(keys)).ok());
  }
  std::vector<ApplyGroup> groups = grouper.Take();
  size_t total = 0;
  for (const ApplyGroup& group : groups) {
    EXPECT_LE(group.upserts.size(), ApplyGrouper::kMaxGroupRecords);
    total += group.upserts.size();
  }
  EXPECT_EQ(total, 20000u);
  EXPECT_EQ(groups.size(), 3u);  // 16 entries of 500 fit in 8192
  EXPECT_EQ(groups.back().last_sequence, 40u);
}

// A tenant operation is a group of its own, between the writes around it.
TEST(ApplyGrouperTest, ATenantOpIsAGroupOfItsOwn) {
  ApplyGrouper grouper;
  ASSERT_TRUE(Add(grouper, 1, Upserts({1})).ok());
  TenantOpCall grant{.kind = TenantOpCall::Kind::kGrant, .keys = {Key{uint64_t{1}}}};
  ASSERT_TRUE(Add(grouper, 2, EncodeTenantOp("acme", grant)).ok());
  ASSERT_TRUE(Add(grouper, 3, Upserts({2})).ok());
  std::vector<ApplyGroup> groups = grouper.Take();
  ASSERT_EQ(groups.size(), 3u);
  ASSERT_TRUE(groups[1].op.has_value());
  EXPECT_EQ(groups[1].tenant, "acme");
  EXPECT_EQ(groups[1].op->kind, TenantOpCall::Kind::kGrant);
  EXPECT_EQ(groups[1].op->keys, std::vector<Key>{Key{uint64_t{1}}});
  EXPECT_EQ(groups[1].last_sequence, 2u);
  EXPECT_FALSE(groups[2].op.has_value());
  TenantOpCall state{.kind = TenantOpCall::Kind::kSetState, .state = TenantState::kOffloaded};
  ASSERT_TRUE(Add(grouper, 4, EncodeTenantOp("acme", state)).ok());
  groups = grouper.Take();
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].op->state, TenantState::kOffloaded);
}

}  // namespace
}  // namespace shoal::cluster

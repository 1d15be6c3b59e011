#include "cluster/shard_log_codec.h"

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "gtest/gtest.h"
#include "rpc/convert.h"
#include "shoal/cluster/v1/shard_log.pb.h"

namespace shoal::cluster {
namespace {

std::vector<Record> SampleRecords() {
  std::vector<Record> records;
  records.push_back(Record{.key = uint64_t{0}});
  records.push_back(Record{.key = std::numeric_limits<uint64_t>::max(), .vector = {1.5f, -2.0f}});
  records.push_back(Record{.key = std::string("doc-7"), .vector = std::vector<float>(300, 0.25f)});
  Record rich{.key = uint64_t{129}, .vector = {0.0f, -0.0f, 3.0f}};
  rich.attributes["a_int"] = int64_t{-5};
  rich.attributes["b_zero"] = int64_t{0};
  rich.attributes["double"] = 2.5;
  rich.attributes["flag"] = false;
  rich.attributes["text"] = std::string(200, 'x');
  rich.attributes["empty"] = std::string();
  rich.tags = {"red", "", std::string(130, 't')};
  records.push_back(rich);
  return records;
}

// Protobuf's deterministic serialization (map entries sorted by key).
std::string Deterministic(const v1::ShardLogEntry& entry) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    EXPECT_TRUE(entry.SerializeToCodedStream(&coded));
  }
  return out;
}

TEST(ShardLogCodecTest, UpsertsAreProtobufsOwnBytes) {
  const std::vector<Record> records = SampleRecords();
  const std::vector<uint32_t> which = {3, 0, 2, 1};
  for (const std::string tenant : {"", "acme"}) {
    v1::ShardLogEntry entry;
    for (uint32_t i : which) rpc::RecordToProto(records[i], entry.add_upserts());
    entry.set_tenant(tenant);
    EXPECT_EQ(EncodeUpserts(records, which, tenant), Deterministic(entry)) << tenant;
  }
}

TEST(ShardLogCodecTest, DeletesAreProtobufsOwnBytes) {
  const std::vector<Key> keys = {uint64_t{0}, uint64_t{1} << 40, std::string("k"),
                                 std::string(300, 'z')};
  const std::vector<uint32_t> which = {1, 2, 3, 0};
  v1::ShardLogEntry entry;
  for (uint32_t i : which) rpc::KeyToProto(keys[i], entry.add_deletes());
  entry.set_tenant("t");
  EXPECT_EQ(EncodeDeletes(keys, which, "t"), Deterministic(entry));
}

void ExpectSameRecord(const Record& a, const Record& b) {
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.vector, b.vector);
  EXPECT_EQ(a.attributes, b.attributes);
  EXPECT_EQ(a.tags, b.tags);
}

TEST(ShardLogCodecTest, DecodesWhatItAndProtobufWrite) {
  const std::vector<Record> records = SampleRecords();
  const std::vector<uint32_t> which = {0, 1, 2, 3};
  v1::ShardLogEntry entry;
  for (uint32_t i : which) rpc::RecordToProto(records[i], entry.add_upserts());
  entry.set_tenant("acme");
  for (const std::string& bytes :
       {EncodeUpserts(records, which, "acme"), entry.SerializeAsString()}) {
    absl::StatusOr<DecodedEntry> decoded = DecodeShardLogEntry(bytes.data(), bytes.size());
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->tenant, "acme");
    EXPECT_FALSE(decoded->has_tenant_op);
    ASSERT_EQ(decoded->upserts.size(), records.size());
    for (size_t i = 0; i < records.size(); ++i) ExpectSameRecord(decoded->upserts[i], records[i]);
  }
  const std::vector<Key> keys = {uint64_t{3}, std::string("x")};
  const std::vector<uint32_t> both = {0, 1};
  const std::string deletes = EncodeDeletes(keys, both, "");
  absl::StatusOr<DecodedEntry> decoded = DecodeShardLogEntry(deletes.data(), deletes.size());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->deletes, keys);
  EXPECT_TRUE(decoded->upserts.empty());
}

TEST(ShardLogCodecTest, ReadsUnknownFieldsUnpackedFloatsAndRepeatedKeys) {
  // Record {key {id 5} key {name "n"} vector 1.0 (unpacked) 9: 7 (unknown)}, then field 9.
  std::string record = "\x0a\x02\x08\x05";
  record += std::string("\x0a\x03\x12\x01n", 5);
  record += std::string("\x15\x00\x00\x80\x3f", 5);
  record += std::string("\x48\x07", 2);
  std::string bytes = std::string("\x0a") + static_cast<char>(record.size()) + record;
  bytes += std::string("\x48\x01", 2);
  v1::ShardLogEntry parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));  // protobuf reads it the same way
  absl::StatusOr<DecodedEntry> decoded = DecodeShardLogEntry(bytes.data(), bytes.size());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->upserts.size(), 1u);
  absl::StatusOr<Record> expected = rpc::RecordFromProto(parsed.upserts(0), "r");
  ASSERT_TRUE(expected.ok());
  ExpectSameRecord(decoded->upserts[0], *expected);
  EXPECT_EQ(decoded->upserts[0].key, Key(std::string("n")));
  EXPECT_EQ(decoded->upserts[0].vector, std::vector<float>{1.0f});
}

TEST(ShardLogCodecTest, ATenantOpIsFlaggedForProtobuf) {
  const std::string bytes("\x22\x00", 2);  // field 4, empty
  absl::StatusOr<DecodedEntry> decoded = DecodeShardLogEntry(bytes.data(), bytes.size());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(decoded->has_tenant_op);
}

TEST(ShardLogCodecTest, MalformedEntriesNameThePart) {
  v1::ShardLogEntry keyless;
  keyless.add_upserts()->add_vector(1.0f);
  std::string bytes = keyless.SerializeAsString();
  absl::Status s = DecodeShardLogEntry(bytes.data(), bytes.size()).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("upserts[0].key: required"), std::string::npos) << s;
  v1::ShardLogEntry no_value;
  rpc::RecordToProto(Record{.key = uint64_t{1}}, no_value.add_upserts());
  (*no_value.mutable_upserts(0)->mutable_attributes())["color"];
  bytes = no_value.SerializeAsString();
  s = DecodeShardLogEntry(bytes.data(), bytes.size()).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("upserts[0].attributes[\"color\"]"), std::string::npos) << s;
  const std::string junk = "\xff\xff\xff";
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeShardLogEntry(junk.data(), junk.size()).status()));
}

// Every prefix and every one-byte corruption of a valid entry decodes or fails cleanly, and
// whatever protobuf refuses for its wire format this decoder refuses too.
TEST(ShardLogCodecTest, TruncatedAndCorruptedBytesNeverReadOutOfBounds) {
  const std::vector<Record> records = SampleRecords();
  const std::vector<uint32_t> which = {3, 1};
  const std::string good = EncodeUpserts(records, which, "acme");
  for (size_t n = 0; n < good.size(); ++n) {
    const std::string prefix = good.substr(0, n);
    absl::StatusOr<DecodedEntry> decoded = DecodeShardLogEntry(prefix.data(), prefix.size());
    v1::ShardLogEntry parsed;
    if (!parsed.ParseFromString(prefix)) EXPECT_FALSE(decoded.ok()) << "prefix " << n;
  }
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::string bad = good;
    bad[rng() % bad.size()] = static_cast<char>(rng());
    (void)DecodeShardLogEntry(bad.data(), bad.size());  // ASan / UBSan check the reads
  }
}

}  // namespace
}  // namespace shoal::cluster

// The bytes of a shard log entry (shoal.cluster.v1.ShardLogEntry, shard_log.proto) written
// from and read into the embedded API's types directly, without building protobuf messages:
// the write path encodes a request's records once (no Record -> shoal.v1.Record copy and its
// allocations), and a replica decodes each entry straight into the Records its DB applies.
//
//   std::string bytes = EncodeUpserts(records, {0, 3, 7}, /*tenant=*/"");
//   SHOAL_ASSIGN_OR_RETURN(DecodedEntry entry, DecodeShardLogEntry(bytes.data(), bytes.size()));
//
// The encoding is protobuf's own (EncodeUpserts / EncodeDeletes give exactly the bytes that
// protobuf's deterministic serialization of the same message gives; a test checks), so any
// protobuf reader parses it, and the decoder reads what protobuf writes, including fields it
// does not know (skipped), unpacked floats and repeated singular fields (the last one wins).
// Strings are bytes: UTF-8 is neither required on encode nor checked on decode.
//
// Thread safety: stateless functions, thread-safe.
#ifndef SHOAL_CLUSTER_SHARD_LOG_CODEC_H_
#define SHOAL_CLUSTER_SHARD_LOG_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "shoal/types.h"

namespace shoal::cluster {

// An entry of upserts of records[i] for each i in `which` (in that order), made for `tenant`
// ("" = none).
std::string EncodeUpserts(std::span<const Record> records, std::span<const uint32_t> which,
                          std::string_view tenant);
// An entry of deletes of keys[i] for each i in `which`, made for `tenant`.
std::string EncodeDeletes(std::span<const Key> keys, std::span<const uint32_t> which,
                          std::string_view tenant);

struct DecodedEntry {
  std::vector<Record> upserts;
  std::vector<Key> deletes;
  std::string tenant;
  // The entry also carries a field this decoder leaves to protobuf (a tenant operation,
  // field 4): parse the bytes with shoal.cluster.v1.ShardLogEntry for it.
  bool has_tenant_op = false;
};

// INVALID_ARGUMENT when the bytes are not a well-formed entry (truncated, a bad wire type, a
// record without a key, a key or attribute value with no kind set); the message names the
// part ("upserts[3].key: required").
absl::StatusOr<DecodedEntry> DecodeShardLogEntry(const void* data, size_t size);

}  // namespace shoal::cluster

#endif  // SHOAL_CLUSTER_SHARD_LOG_CODEC_H_

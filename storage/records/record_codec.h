// On-disk encoding of Shoal's records and keys inside RocksDB (storage format, not the wire
// format). Pure functions; thread-safe.
//
// Record value layout (little-endian), format version 1:
//   u8 version=1 | key | u32 dim | dim x f32 | varint n_attrs | n_attrs x attr | varint n_tags |
//   n_tags x (varint len, bytes)
//   key  = u8 kind (0 uint64, 1 string) | u64 or (varint len, bytes)
//   attr = varint name_len, name | u8 type (0 int64, 1 double, 2 bool, 3 string) | value
//
// Key-map keys (RocksDB keys, big-endian so they sort by collection):
//   u32 collection_id | u8 kind | u64 (BE) or raw string bytes
#ifndef SHOAL_STORAGE_RECORDS_RECORD_CODEC_H_
#define SHOAL_STORAGE_RECORDS_RECORD_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "shoal/types.h"

namespace shoal::storage {

std::string EncodeRecord(const Record& record);
// EncodeRecord's bytes written over *out (its capacity kept: a caller encoding many records
// reuses one buffer instead of allocating one per record).
void EncodeRecordTo(const Record& record, std::string* out);
// An upper bound of EncodeRecord(record).size().
size_t EncodedRecordSizeBound(const Record& record);
// An upper bound of the bytes a RocksDB write batch takes for the record's two rows (the record
// row and its key-map row, each put framed by a type byte, a column family id and two lengths).
size_t RecordRowsBytesBound(const Record& record);
// DataLoss (naming `where`, e.g. the RocksDB key) when `bytes` is not a valid record.
absl::StatusOr<Record> DecodeRecord(std::string_view bytes, std::string_view where);

// Just the key of an encoded record (cheaper than a full decode).
absl::StatusOr<Key> DecodeRecordKey(std::string_view bytes, std::string_view where);

// RocksDB key of a collection's record / key-map entry.
std::string RecordRowKey(uint32_t collection_id, uint64_t internal_id);
std::string KeyMapRowKey(uint32_t collection_id, const Key& key);
// Prefix shared by every row of a collection, and the first prefix after it.
std::string CollectionPrefix(uint32_t collection_id);
// The catalog rows of a collection's tenants all start with this (record_store_tenants.cc).
std::string TenantRowPrefix(uint32_t collection_id);
// The text TenantRowPrefix starts with (then the collection id, 4 bytes big-endian).
inline constexpr char kTenantRowPrefixText[] = "tenant/";
uint64_t InternalIdFromRecordRowKey(std::string_view row_key);
// The key of a key-map row (DataLoss when malformed).
absl::StatusOr<Key> DecodeKeyMapRowKey(std::string_view row_key);
// The smallest key after every key that starts with `prefix`: the exclusive end of a scan or a
// DeleteRange over the prefix.
std::string PrefixUpperBound(std::string_view prefix);

void PutFixed32BE(std::string* out, uint32_t v);
void PutFixed64BE(std::string* out, uint64_t v);
uint32_t GetFixed32BE(const char* p);
uint64_t GetFixed64BE(const char* p);

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_RECORDS_RECORD_CODEC_H_

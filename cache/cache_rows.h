// The semantic cache's durable rows (storage::RecordStore's "cache/" rows) and their format.
// Keys, relative to the store's cache prefix:
//   "@/<cache>"            CacheSpec (the list of caches: '@' cannot start a cache name)
//   "<cache>/p/<category>" CachePolicy ("" category: the default policy)
//   "<cache>/e/<id BE64>"  an entry: partition, category, prompt hash, created time, vector,
//                          response (written once)
//   "<cache>/m/<id BE64>"  the entry's mutable metadata (TTL start, hits, learned threshold)
//   "<cache>/n"            the next entry id
//   "<cache>/l/<category>" the category's learned state (threshold_learning.h): the evidence
//                          bins, the offset and TTL chosen from them, the answer changes seen;
//                          rewritten unsynced by each wrong report and every 64th. Not kept: the
//                          running rates and band counts, which pair with the counters since open.
//                          Damaged, it is ignored (the category learns afresh)
//   "<cache>/x/<shard key>" a large shard's clustered-index model (ShardIndex::ExportModel): a
//                          hint that spares the first build after open its training; stale or
//                          damaged, it is ignored
// Pure functions; thread-safe.
#ifndef SHOAL_CACHE_CACHE_ROWS_H_
#define SHOAL_CACHE_CACHE_ROWS_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "cache/threshold_learning.h"
#include "shoal/cache.h"

namespace shoal::cache {

inline constexpr char kSpecPrefix[] = "@/";

std::string SpecKey(std::string_view cache);
std::string CachePrefix(std::string_view cache);
std::string PolicyPrefix(std::string_view cache);
std::string PolicyKey(std::string_view cache, std::string_view category);
std::string EntryPrefix(std::string_view cache);
std::string EntryKey(std::string_view cache, uint64_t id);
void AppendEntryKey(std::string_view cache, uint64_t id, std::string* key);  // EntryKey, appended
std::string MetaPrefix(std::string_view cache);
std::string MetaKey(std::string_view cache, uint64_t id);
std::string NextIdKey(std::string_view cache);
std::string LearningPrefix(std::string_view cache);
std::string LearningKey(std::string_view cache, std::string_view category);
std::string IndexModelPrefix(std::string_view cache);
std::string IndexModelKey(std::string_view cache, std::string_view shard);
// The id at the end of an entry or meta key (after its 3-byte "e/"-style kind).
absl::StatusOr<uint64_t> IdOfKey(std::string_view key_suffix);

struct StoredEntry {
  uint64_t id = 0;
  CachePartition partition;
  std::string category;
  std::string prompt_hash;  // "" = none
  int64_t created_us = 0;
  std::vector<float> vector;  // as searched (normalised under cosine)
  std::string response;
};

struct EntryMeta {
  int64_t ttl_start_us = 0;  // TTL counts from here (the store, or the last refreshing hit)
  uint64_t hits = 0;
  // Learned: the highest similarity at which the entry was judged wrong (-inf: none). The
  // entry never hits at or below it.
  float wrong_floor = -std::numeric_limits<float>::infinity();
  uint32_t correct = 0;
  uint32_t wrong = 0;
};

std::string EncodeSpec(const CacheSpec& spec);
absl::StatusOr<CacheSpec> DecodeSpec(std::string_view name, std::string_view bytes);
std::string EncodeEntry(const StoredEntry& entry);
// DataLoss naming the entry when the row is not an entry of `dimension` floats.
absl::StatusOr<StoredEntry> DecodeEntry(uint64_t id, std::string_view bytes, uint32_t dimension);
// The same checks, copying only the response into *response (a hit's read).
absl::Status DecodeEntryResponse(uint64_t id, std::string_view bytes, uint32_t dimension,
                                 std::string* response);
std::string EncodeMeta(const EntryMeta& meta);
absl::StatusOr<EntryMeta> DecodeMeta(uint64_t id, std::string_view bytes);
// The durable part of `learning` (above); only the non-zero evidence bins are written.
std::string EncodeLearning(const CategoryLearning& learning);
// DataLoss naming `where` when the bytes are not a learned state.
absl::StatusOr<CategoryLearning> DecodeLearning(std::string_view bytes, std::string_view where);
std::string EncodeU64(uint64_t v);
absl::StatusOr<uint64_t> DecodeU64(std::string_view bytes, std::string_view where);

// CachePromptHash's normalisation: trimmed, runs of whitespace collapsed to one space, ASCII
// lower-cased.
std::string NormalizePrompt(std::string_view prompt);
// FNV-1a 64 of the bytes (stable across processes and versions).
uint64_t Fnv1a64(std::string_view bytes);

}  // namespace shoal::cache

#endif  // SHOAL_CACHE_CACHE_ROWS_H_

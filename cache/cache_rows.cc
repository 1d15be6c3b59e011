#include "cache/cache_rows.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "storage/records/record_codec.h"

namespace shoal {

std::string CachePromptHash(std::string_view prompt) {
  return absl::StrFormat("%016x", cache::Fnv1a64(cache::NormalizePrompt(prompt)));
}

namespace cache {
namespace {

constexpr uint8_t kSpecVersion = 1;
constexpr uint8_t kEntryVersion = 1;
constexpr uint8_t kMetaVersion = 1;
constexpr uint8_t kLearningVersion = 1;

std::string WithId(std::string key, uint64_t id) {
  storage::PutFixed64BE(&key, id);
  return key;
}

void PutString(std::string* out, std::string_view s) {
  storage::PutFixed32BE(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

// Reads a length-prefixed string from *in (into *out unless null); false when the bytes run
// out.
bool GetString(std::string_view* in, std::string* out) {
  if (in->size() < 4) return false;
  const uint32_t n = storage::GetFixed32BE(in->data());
  if (in->size() - 4 < n) return false;
  if (out != nullptr) out->assign(in->data() + 4, n);
  in->remove_prefix(4 + n);
  return true;
}

bool GetU64(std::string_view* in, uint64_t* out) {
  if (in->size() < 8) return false;
  *out = storage::GetFixed64BE(in->data());
  in->remove_prefix(8);
  return true;
}

absl::Status Corrupt(std::string_view what, uint64_t id, size_t size) {
  return absl::DataLossError(absl::StrCat("cache ", std::string(what), " row of entry ", id,
                                          " is corrupt (", size, " bytes)"));
}

}  // namespace

std::string SpecKey(std::string_view cache) { return kSpecPrefix + std::string(cache); }
std::string CachePrefix(std::string_view cache) { return std::string(cache) + "/"; }
std::string PolicyPrefix(std::string_view cache) { return std::string(cache) + "/p/"; }
std::string PolicyKey(std::string_view cache, std::string_view category) {
  return PolicyPrefix(cache) + std::string(category);
}
std::string EntryPrefix(std::string_view cache) { return std::string(cache) + "/e/"; }
std::string EntryKey(std::string_view cache, uint64_t id) { return WithId(EntryPrefix(cache), id); }
void AppendEntryKey(std::string_view cache, uint64_t id, std::string* key) {
  key->append(cache);
  key->append("/e/");
  storage::PutFixed64BE(key, id);
}
std::string MetaPrefix(std::string_view cache) { return std::string(cache) + "/m/"; }
std::string MetaKey(std::string_view cache, uint64_t id) { return WithId(MetaPrefix(cache), id); }
std::string NextIdKey(std::string_view cache) { return std::string(cache) + "/n"; }
std::string LearningPrefix(std::string_view cache) { return std::string(cache) + "/l/"; }
std::string LearningKey(std::string_view cache, std::string_view category) {
  return LearningPrefix(cache) + std::string(category);
}
std::string IndexModelPrefix(std::string_view cache) { return std::string(cache) + "/x/"; }
std::string IndexModelKey(std::string_view cache, std::string_view shard) {
  return IndexModelPrefix(cache) + std::string(shard);
}

absl::StatusOr<uint64_t> IdOfKey(std::string_view key) {
  if (key.size() < 8) return absl::DataLossError("cache row key too short for an entry id");
  return storage::GetFixed64BE(key.data() + key.size() - 8);
}

namespace {

void PutDouble(std::string* out, double v) {
  storage::PutFixed64BE(out, std::bit_cast<uint64_t>(v));
}

bool GetDouble(std::string_view* in, double* out) {
  uint64_t bits = 0;
  if (!GetU64(in, &bits)) return false;
  *out = std::bit_cast<double>(bits);
  return std::isfinite(*out);
}

template <size_t N>
void PutBins(std::string* out, const std::array<double, N>& bins) {
  const auto nonzero = std::count_if(bins.begin(), bins.end(), [](double v) { return v != 0; });
  storage::PutFixed32BE(out, static_cast<uint32_t>(nonzero));
  for (size_t b = 0; b < N; ++b) {
    if (bins[b] == 0) continue;
    storage::PutFixed32BE(out, static_cast<uint32_t>(b));
    PutDouble(out, bins[b]);
  }
}

template <size_t N>
bool GetBins(std::string_view* in, std::array<double, N>* bins) {
  if (in->size() < 4) return false;
  const uint32_t n = storage::GetFixed32BE(in->data());
  in->remove_prefix(4);
  for (uint32_t i = 0; i < n; ++i) {
    if (in->size() < 4) return false;
    const uint32_t b = storage::GetFixed32BE(in->data());
    in->remove_prefix(4);
    if (b >= N || !GetDouble(in, &(*bins)[b])) return false;
  }
  return true;
}

}  // namespace

std::string EncodeLearning(const CategoryLearning& l) {
  std::string out(1, static_cast<char>(kLearningVersion));
  PutDouble(&out, l.offset);
  PutDouble(&out, l.reported);
  storage::PutFixed64BE(&out, l.answer_changes);
  storage::PutFixed64BE(&out, static_cast<uint64_t>(l.ttl_us));
  PutBins(&out, l.wrong_at);
  PutBins(&out, l.stale_at);
  return out;
}

absl::StatusOr<CategoryLearning> DecodeLearning(std::string_view b, std::string_view where) {
  CategoryLearning l;
  uint64_t ttl = 0;
  bool ok = !b.empty() && b[0] == kLearningVersion;
  if (ok) b.remove_prefix(1);
  ok = ok && GetDouble(&b, &l.offset) && GetDouble(&b, &l.reported) &&
       GetU64(&b, &l.answer_changes) && GetU64(&b, &ttl) && GetBins(&b, &l.wrong_at) &&
       GetBins(&b, &l.stale_at) && b.empty();
  l.ttl_us = static_cast<int64_t>(ttl);
  if (!ok || l.ttl_us < 0) {
    return absl::DataLossError(
        absl::StrCat("cache learning row ", std::string(where), " is corrupt"));
  }
  return l;
}

std::string EncodeU64(uint64_t v) {
  std::string out;
  storage::PutFixed64BE(&out, v);
  return out;
}

absl::StatusOr<uint64_t> DecodeU64(std::string_view bytes, std::string_view where) {
  if (bytes.size() != 8)
    return absl::DataLossError(absl::StrCat("cache row ", std::string(where), " corrupt"));
  return storage::GetFixed64BE(bytes.data());
}

std::string EncodeSpec(const CacheSpec& spec) {
  std::string out(1, static_cast<char>(kSpecVersion));
  storage::PutFixed32BE(&out, spec.dimension);
  out.push_back(static_cast<char>(spec.metric));
  return out;
}

absl::StatusOr<CacheSpec> DecodeSpec(std::string_view name, std::string_view b) {
  if (b.size() != 6 || b[0] != kSpecVersion || static_cast<uint8_t>(b[5]) > 2) {
    return absl::DataLossError(
        absl::StrCat("cache spec row of '", std::string(name), "' is corrupt"));
  }
  return CacheSpec{.name = std::string(name),
                   .dimension = storage::GetFixed32BE(b.data() + 1),
                   .metric = static_cast<Metric>(b[5])};
}

std::string EncodeEntry(const StoredEntry& e) {
  std::string out(1, static_cast<char>(kEntryVersion));
  for (std::string_view s :
       {std::string_view(e.partition.tenant), std::string_view(e.partition.model),
        std::string_view(e.partition.params_fingerprint),
        std::string_view(e.partition.context_hash), std::string_view(e.category),
        std::string_view(e.prompt_hash)}) {
    PutString(&out, s);
  }
  storage::PutFixed64BE(&out, static_cast<uint64_t>(e.created_us));
  storage::PutFixed32BE(&out, static_cast<uint32_t>(e.vector.size()));
  const size_t at = out.size();
  out.resize(at + e.vector.size() * sizeof(float));
  std::memcpy(out.data() + at, e.vector.data(), e.vector.size() * sizeof(float));
  PutString(&out, e.response);
  return out;
}

namespace {

// Parses an entry row into *e, or (e null) checks it and copies only the response into
// *response.
absl::Status ParseEntry(uint64_t id, std::string_view b, uint32_t dimension, StoredEntry* e,
                        std::string* response) {
  const size_t size = b.size();
  if (b.empty() || b[0] != kEntryVersion) return Corrupt("entry", id, size);
  b.remove_prefix(1);
  std::string* strings[6] = {};  // null: checked, not copied
  if (e != nullptr) {
    std::string* all[] = {
        &e->partition.tenant,       &e->partition.model, &e->partition.params_fingerprint,
        &e->partition.context_hash, &e->category,        &e->prompt_hash};
    std::copy(std::begin(all), std::end(all), strings);
  }
  for (std::string* s : strings) {
    if (!GetString(&b, s)) return Corrupt("entry", id, size);
  }
  uint64_t created = 0;
  if (!GetU64(&b, &created) || b.size() < 4) return Corrupt("entry", id, size);
  const uint32_t dim = storage::GetFixed32BE(b.data());
  b.remove_prefix(4);
  if (dim != dimension || b.size() < size_t{dim} * sizeof(float)) {
    return Corrupt("entry", id, size);
  }
  if (e != nullptr) {
    e->id = id;
    e->created_us = static_cast<int64_t>(created);
    e->vector.resize(dim);
    std::memcpy(e->vector.data(), b.data(), size_t{dim} * sizeof(float));
  }
  b.remove_prefix(size_t{dim} * sizeof(float));
  if (!GetString(&b, e != nullptr ? &e->response : response) || !b.empty()) {
    return Corrupt("entry", id, size);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StoredEntry> DecodeEntry(uint64_t id, std::string_view b, uint32_t dimension) {
  StoredEntry e;
  SHOAL_RETURN_IF_ERROR(ParseEntry(id, b, dimension, &e, nullptr));
  return e;
}

absl::Status DecodeEntryResponse(uint64_t id, std::string_view bytes, uint32_t dimension,
                                 std::string* response) {
  return ParseEntry(id, bytes, dimension, nullptr, response);
}

std::string EncodeMeta(const EntryMeta& m) {
  std::string out(1, static_cast<char>(kMetaVersion));
  storage::PutFixed64BE(&out, static_cast<uint64_t>(m.ttl_start_us));
  storage::PutFixed64BE(&out, m.hits);
  storage::PutFixed32BE(&out, std::bit_cast<uint32_t>(m.wrong_floor));
  storage::PutFixed32BE(&out, m.correct);
  storage::PutFixed32BE(&out, m.wrong);
  return out;
}

absl::StatusOr<EntryMeta> DecodeMeta(uint64_t id, std::string_view b) {
  if (b.size() != 29 || b[0] != kMetaVersion) return Corrupt("metadata", id, b.size());
  EntryMeta m;
  m.ttl_start_us = static_cast<int64_t>(storage::GetFixed64BE(b.data() + 1));
  m.hits = storage::GetFixed64BE(b.data() + 9);
  m.wrong_floor = std::bit_cast<float>(storage::GetFixed32BE(b.data() + 17));
  m.correct = storage::GetFixed32BE(b.data() + 21);
  m.wrong = storage::GetFixed32BE(b.data() + 25);
  return m;
}

std::string NormalizePrompt(std::string_view prompt) {
  std::string out;
  out.reserve(prompt.size());
  bool space = false;
  for (char c : prompt) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(absl::ascii_tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace cache
}  // namespace shoal

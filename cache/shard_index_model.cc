// ShardIndex's saved model (ExportModel / ImportModel): the trained clustering kept across a
// reopen so that the first build after it neither trains nor scans the centroids for the ids
// it lists. Layout (host byte order): "SHX2" | u32 dimension | u32 lists | u64 built_size |
// lists x dimension f32 centroids | per list: u32 count, count x u64 ids. (The codes' RaBitQ
// rotation is seeded, not trained: nothing of it is saved. "SHX1" models, of SQ8 codes, are
// refused as DataLoss and the shard trains again.)
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "cache/shard_index.h"

namespace shoal::cache {
namespace {

constexpr char kMagic[4] = {'S', 'H', 'X', '2'};

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

// Reads from the front of *in; false when too short.
template <typename T>
bool Take(std::string_view* in, T* v) {
  if (in->size() < sizeof(T)) return false;
  std::memcpy(v, in->data(), sizeof(T));
  in->remove_prefix(sizeof(T));
  return true;
}

}  // namespace

std::string ShardIndex::ExportModel() const {
  if (!clustered()) return "";
  std::string out(kMagic, sizeof(kMagic));
  Put(&out, static_cast<uint32_t>(dimension_));
  Put(&out, static_cast<uint32_t>(live_.lists.size()));
  Put(&out, static_cast<uint64_t>(live_.built_size));
  out.append(reinterpret_cast<const char*>(live_.centroids.data()),
             live_.centroids.size() * sizeof(float));
  for (const List& list : live_.lists) {
    Put(&out, static_cast<uint32_t>(list.ids.size()));
    out.append(reinterpret_cast<const char*>(list.ids.data()), list.ids.size() * sizeof(uint64_t));
  }
  return out;
}

absl::Status ShardIndex::ImportModel(std::string_view in) {
  auto bad = [](std::string_view why) {
    return absl::DataLossError(absl::StrCat("index model: ", std::string(why)));
  };
  if (in.size() < sizeof(kMagic) || std::memcmp(in.data(), kMagic, sizeof(kMagic)) != 0) {
    return bad("no SHX2 magic (an older or foreign model)");
  }
  in.remove_prefix(sizeof(kMagic));
  uint32_t dimension = 0, lists = 0;
  uint64_t built_size = 0;
  if (!Take(&in, &dimension) || !Take(&in, &lists) || !Take(&in, &built_size)) {
    return bad("truncated header");
  }
  if (dimension != dimension_) {
    return bad(absl::StrCat("dimension ", dimension, ", the shard's is ", dimension_));
  }
  if (lists == 0 || in.size() / dimension / sizeof(float) < lists) return bad("lists out of range");
  auto hint = std::make_unique<Hint>();
  hint->centroids.resize(size_t{lists} * dimension);
  std::memcpy(hint->centroids.data(), in.data(), hint->centroids.size() * sizeof(float));
  in.remove_prefix(hint->centroids.size() * sizeof(float));
  for (float x : hint->centroids) {
    if (!std::isfinite(x)) return bad("a centroid is not finite");
  }
  for (uint32_t list = 0; list < lists; ++list) {
    uint32_t count = 0;
    if (!Take(&in, &count) || in.size() / sizeof(uint64_t) < count) return bad("truncated list");
    for (uint32_t i = 0; i < count; ++i) {
      uint64_t id = 0;
      Take(&in, &id);
      hint->list_of[id] = list;
    }
  }
  if (!in.empty()) return bad("trailing bytes");
  hint->built_size = built_size;
  hint_ = std::move(hint);
  return absl::OkStatus();
}

}  // namespace shoal::cache

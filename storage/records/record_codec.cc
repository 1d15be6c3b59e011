#include "storage/records/record_codec.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace shoal::storage {
namespace {

constexpr uint8_t kRecordVersion = 1;
enum : uint8_t { kKeyUint64 = 0, kKeyString = 1 };
enum : uint8_t { kAttrInt = 0, kAttrDouble = 1, kAttrBool = 2, kAttrString = 3 };

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

template <typename T>
void PutRaw(std::string* out, const T& v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

void PutBytes(std::string* out, std::string_view s) {
  PutVarint(out, s.size());
  out->append(s);
}

// Bounds-checked cursor over an encoded record; every failure names the byte offset.
class Reader {
 public:
  Reader(std::string_view bytes, std::string_view where) : bytes_(bytes), where_(where) {}

  size_t offset() const { return pos_; }
  bool done() const { return pos_ == bytes_.size(); }

  absl::Status Error(const std::string& what) const {
    return absl::DataLossError(
        absl::StrCat("corrupt record ", std::string(where_), " at byte ", pos_, ": ", what));
  }
  absl::Status Raw(void* out, size_t n) {
    if (bytes_.size() - pos_ < n) return Error("truncated");
    // An empty vector's data() may be null, and memcpy's arguments must not be, even for 0 bytes.
    if (n == 0) return absl::OkStatus();
    std::memcpy(out, bytes_.data() + pos_, n);
    pos_ += n;
    return absl::OkStatus();
  }
  absl::Status Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) return Error("truncated varint");
      uint8_t b = static_cast<uint8_t>(bytes_[pos_++]);
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return absl::OkStatus();
    }
    return Error("varint too long");
  }
  absl::Status Bytes(std::string* out) {
    uint64_t n = 0;
    if (auto s = Varint(&n); !s.ok()) return s;
    if (bytes_.size() - pos_ < n) return Error("truncated string");
    out->assign(bytes_.data() + pos_, n);
    pos_ += n;
    return absl::OkStatus();
  }

 private:
  std::string_view bytes_;
  std::string_view where_;
  size_t pos_ = 0;
};

#define SHOAL_CODEC_TRY(expr) \
  do {                        \
    absl::Status s_ = (expr); \
    if (!s_.ok()) return s_;  \
  } while (false)

void PutKey(std::string* out, const Key& key) {
  if (const auto* u = std::get_if<uint64_t>(&key)) {
    out->push_back(static_cast<char>(kKeyUint64));
    PutRaw(out, *u);
  } else {
    out->push_back(static_cast<char>(kKeyString));
    PutBytes(out, std::get<std::string>(key));
  }
}

absl::StatusOr<Key> ReadKey(Reader& r) {
  uint8_t kind = 0;
  SHOAL_CODEC_TRY(r.Raw(&kind, 1));
  if (kind == kKeyUint64) {
    uint64_t v = 0;
    SHOAL_CODEC_TRY(r.Raw(&v, sizeof v));
    return Key(v);
  }
  if (kind != kKeyString) return r.Error(absl::StrCat("unknown key kind ", kind));
  std::string s;
  SHOAL_CODEC_TRY(r.Bytes(&s));
  return Key(std::move(s));
}

absl::Status ReadAttribute(Reader& r, Record* rec) {
  std::string name;
  SHOAL_CODEC_TRY(r.Bytes(&name));
  uint8_t type = 0;
  SHOAL_CODEC_TRY(r.Raw(&type, 1));
  AttributeValue value;
  switch (type) {
    case kAttrInt: {
      int64_t v = 0;
      SHOAL_CODEC_TRY(r.Raw(&v, sizeof v));
      value = v;
      break;
    }
    case kAttrDouble: {
      double v = 0;
      SHOAL_CODEC_TRY(r.Raw(&v, sizeof v));
      value = v;
      break;
    }
    case kAttrBool: {
      uint8_t v = 0;
      SHOAL_CODEC_TRY(r.Raw(&v, 1));
      value = v != 0;
      break;
    }
    case kAttrString: {
      std::string v;
      SHOAL_CODEC_TRY(r.Bytes(&v));
      value = std::move(v);
      break;
    }
    default:
      return r.Error(absl::StrCat("unknown attribute type ", type));
  }
  rec->attributes.emplace(std::move(name), std::move(value));
  return absl::OkStatus();
}

absl::StatusOr<Key> ReadHeaderAndKey(Reader& r) {
  uint8_t version = 0;
  SHOAL_CODEC_TRY(r.Raw(&version, 1));
  if (version != kRecordVersion) return r.Error(absl::StrCat("unknown version ", version));
  return ReadKey(r);
}

}  // namespace

size_t EncodedRecordSizeBound(const Record& record) {
  constexpr size_t kVarintMax = 10;
  const std::string* name = std::get_if<std::string>(&record.key);
  size_t size = 1 + 1 + (name != nullptr ? kVarintMax + name->size() : sizeof(uint64_t)) +
                sizeof(uint32_t) + record.vector.size() * sizeof(float) + 2 * kVarintMax;
  for (const auto& [attr, value] : record.attributes) {
    const std::string* text = std::get_if<std::string>(&value);
    size += kVarintMax + attr.size() + 1 + (text != nullptr ? kVarintMax + text->size() : 8);
  }
  for (const auto& tag : record.tags) size += kVarintMax + tag.size();
  return size;
}

size_t RecordRowsBytesBound(const Record& record) {
  constexpr size_t kPutFraming = 1 + 5 + 2 * 5;  // type, column family id, two varint lengths
  const std::string* name = std::get_if<std::string>(&record.key);
  const size_t key_map_key = 5 + (name != nullptr ? name->size() : sizeof(uint64_t));
  return 2 * kPutFraming + 12 + EncodedRecordSizeBound(record) + key_map_key + sizeof(uint64_t);
}

std::string EncodeRecord(const Record& record) {
  std::string out;
  EncodeRecordTo(record, &out);
  return out;
}

void EncodeRecordTo(const Record& record, std::string* out_ptr) {
  std::string& out = *out_ptr;
  out.clear();
  out.reserve(32 + record.vector.size() * sizeof(float));
  out.push_back(static_cast<char>(kRecordVersion));
  PutKey(&out, record.key);
  PutRaw(&out, static_cast<uint32_t>(record.vector.size()));
  out.append(reinterpret_cast<const char*>(record.vector.data()),
             record.vector.size() * sizeof(float));
  PutVarint(&out, record.attributes.size());
  for (const auto& [name, value] : record.attributes) {
    PutBytes(&out, name);
    out.push_back(static_cast<char>(value.index()));  // matches kAttr* order
    std::visit(
        [&out](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
            PutBytes(&out, v);
          } else if constexpr (std::is_same_v<T, bool>) {
            out.push_back(v ? 1 : 0);
          } else {
            PutRaw(&out, v);
          }
        },
        value);
  }
  PutVarint(&out, record.tags.size());
  for (const auto& tag : record.tags) PutBytes(&out, tag);
}

absl::StatusOr<Record> DecodeRecord(std::string_view bytes, std::string_view where) {
  Reader r(bytes, where);
  Record rec;
  auto key = ReadHeaderAndKey(r);
  if (!key.ok()) return key.status();
  rec.key = *std::move(key);
  uint32_t dim = 0;
  SHOAL_CODEC_TRY(r.Raw(&dim, sizeof dim));
  if (dim > kMaxDimension) return r.Error(absl::StrCat("dimension ", dim, " out of range"));
  rec.vector.resize(dim);
  SHOAL_CODEC_TRY(r.Raw(rec.vector.data(), dim * sizeof(float)));
  uint64_t n = 0;
  SHOAL_CODEC_TRY(r.Varint(&n));
  for (uint64_t i = 0; i < n; ++i) SHOAL_CODEC_TRY(ReadAttribute(r, &rec));
  SHOAL_CODEC_TRY(r.Varint(&n));
  for (uint64_t i = 0; i < n; ++i) {
    std::string tag;
    SHOAL_CODEC_TRY(r.Bytes(&tag));
    rec.tags.push_back(std::move(tag));
  }
  if (!r.done()) return r.Error("trailing bytes");
  return rec;
}

absl::StatusOr<Key> DecodeRecordKey(std::string_view bytes, std::string_view where) {
  Reader r(bytes, where);
  return ReadHeaderAndKey(r);
}

void PutFixed32BE(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

void PutFixed64BE(std::string* out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

uint32_t GetFixed32BE(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

uint64_t GetFixed64BE(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

std::string CollectionPrefix(uint32_t collection_id) {
  std::string out;
  PutFixed32BE(&out, collection_id);
  return out;
}

std::string TenantRowPrefix(uint32_t collection_id) {
  std::string out = kTenantRowPrefixText;
  PutFixed32BE(&out, collection_id);
  return out;
}

std::string RecordRowKey(uint32_t collection_id, uint64_t internal_id) {
  std::string out = CollectionPrefix(collection_id);
  PutFixed64BE(&out, internal_id);
  return out;
}

std::string KeyMapRowKey(uint32_t collection_id, const Key& key) {
  std::string out = CollectionPrefix(collection_id);
  if (const auto* u = std::get_if<uint64_t>(&key)) {
    out.push_back(static_cast<char>(kKeyUint64));
    PutFixed64BE(&out, *u);
  } else {
    out.push_back(static_cast<char>(kKeyString));
    out.append(std::get<std::string>(key));
  }
  return out;
}

absl::StatusOr<Key> DecodeKeyMapRowKey(std::string_view row_key) {
  if (row_key.size() == 13 && row_key[4] == kKeyUint64) {
    return Key(GetFixed64BE(row_key.data() + 5));
  }
  if (row_key.size() > 5 && row_key[4] == kKeyString) return Key(std::string(row_key.substr(5)));
  return absl::DataLossError(absl::StrCat("malformed key-map row (", row_key.size(), " bytes)"));
}

uint64_t InternalIdFromRecordRowKey(std::string_view row_key) {
  return GetFixed64BE(row_key.data() + 4);
}

std::string PrefixUpperBound(std::string_view prefix) {
  std::string end(prefix);
  for (size_t i = end.size(); i-- > 0;) {
    if (static_cast<uint8_t>(end[i]) != 0xff) {
      end[i] = static_cast<char>(static_cast<uint8_t>(end[i]) + 1);
      end.resize(i + 1);
      return end;
    }
  }
  return std::string(end.size() + 1, '\xff');
}

}  // namespace shoal::storage

#include "cluster/shard_log_codec.h"

#include <bit>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"

namespace shoal::cluster {
namespace {

static_assert(std::endian::native == std::endian::little, "floats are copied as wire bytes");

// Wire types (protobuf encoding).
constexpr int kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5;

constexpr uint8_t Tag(int field, int type) { return static_cast<uint8_t>(field << 3 | type); }

size_t VarintSize(uint64_t v) { return v < 128 ? 1 : (std::bit_width(v) + 6) / 7; }

// A length-delimited field's bytes on the wire around `size` bytes of content (tag < 16).
size_t LenField(size_t size) { return 1 + VarintSize(size) + size; }

size_t KeySize(const Key& key) {
  if (const uint64_t* id = std::get_if<uint64_t>(&key)) return 1 + VarintSize(*id);
  return LenField(std::get<std::string>(key).size());
}

size_t ValueSize(const AttributeValue& value) {
  switch (value.index()) {
    case 0:
      return 1 + VarintSize(static_cast<uint64_t>(std::get<int64_t>(value)));
    case 1:
      return 1 + 8;
    case 2:
      return 1 + 1;
    default:
      return LenField(std::get<std::string>(value).size());
  }
}

size_t AttributeEntrySize(const std::string& name, const AttributeValue& value) {
  return LenField(name.size()) + LenField(ValueSize(value));
}

size_t RecordSize(const Record& record) {
  size_t size = LenField(KeySize(record.key));
  if (!record.vector.empty()) size += LenField(record.vector.size() * sizeof(float));
  for (const auto& [name, value] : record.attributes) {
    size += LenField(AttributeEntrySize(name, value));
  }
  for (const std::string& tag : record.tags) size += LenField(tag.size());
  return size;
}

// Appends to a string reserved to its final size.
class WireWriter {
 public:
  explicit WireWriter(std::string* out) : out_(*out) {}
  void Varint(uint64_t v) {
    while (v >= 128) {
      out_.push_back(static_cast<char>(v | 128));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void Byte(uint8_t b) { out_.push_back(static_cast<char>(b)); }
  void Bytes(const void* data, size_t size) { out_.append(static_cast<const char*>(data), size); }
  void LenHeader(uint8_t tag, size_t size) {
    Byte(tag);
    Varint(size);
  }
  void String(uint8_t tag, std::string_view s) {
    LenHeader(tag, s.size());
    Bytes(s.data(), s.size());
  }

 private:
  std::string& out_;
};

void WriteKey(WireWriter& w, uint8_t tag, const Key& key) {
  w.LenHeader(tag, KeySize(key));
  if (const uint64_t* id = std::get_if<uint64_t>(&key)) {
    w.Byte(Tag(1, kVarint));
    w.Varint(*id);
  } else {
    w.String(Tag(2, kLen), std::get<std::string>(key));
  }
}

void WriteValue(WireWriter& w, const AttributeValue& value) {
  switch (value.index()) {
    case 0:
      w.Byte(Tag(1, kVarint));
      w.Varint(static_cast<uint64_t>(std::get<int64_t>(value)));
      break;
    case 1: {
      w.Byte(Tag(2, kFixed64));
      const double d = std::get<double>(value);
      w.Bytes(&d, sizeof(d));
      break;
    }
    case 2:
      w.Byte(Tag(3, kVarint));
      w.Byte(std::get<bool>(value) ? 1 : 0);
      break;
    default:
      w.String(Tag(4, kLen), std::get<std::string>(value));
  }
}

void WriteRecord(WireWriter& w, const Record& record) {
  w.LenHeader(Tag(1, kLen), RecordSize(record));
  WriteKey(w, Tag(1, kLen), record.key);
  if (!record.vector.empty()) {
    w.LenHeader(Tag(2, kLen), record.vector.size() * sizeof(float));
    w.Bytes(record.vector.data(), record.vector.size() * sizeof(float));
  }
  for (const auto& [name, value] : record.attributes) {  // sorted, as deterministic protobuf
    w.LenHeader(Tag(3, kLen), AttributeEntrySize(name, value));
    w.String(Tag(1, kLen), name);
    w.LenHeader(Tag(2, kLen), ValueSize(value));
    WriteValue(w, value);
  }
  for (const std::string& tag : record.tags) w.String(Tag(4, kLen), tag);
}

}  // namespace

std::string EncodeUpserts(std::span<const Record> records, std::span<const uint32_t> which,
                          std::string_view tenant) {
  size_t size = tenant.empty() ? 0 : LenField(tenant.size());
  for (uint32_t i : which) size += LenField(RecordSize(records[i]));
  std::string out;
  out.reserve(size);
  WireWriter w(&out);
  for (uint32_t i : which) WriteRecord(w, records[i]);
  if (!tenant.empty()) w.String(Tag(3, kLen), tenant);
  return out;
}

std::string EncodeDeletes(std::span<const Key> keys, std::span<const uint32_t> which,
                          std::string_view tenant) {
  size_t size = tenant.empty() ? 0 : LenField(tenant.size());
  for (uint32_t i : which) size += LenField(KeySize(keys[i]));
  std::string out;
  out.reserve(size);
  WireWriter w(&out);
  for (uint32_t i : which) WriteKey(w, Tag(2, kLen), keys[i]);
  if (!tenant.empty()) w.String(Tag(3, kLen), tenant);
  return out;
}

namespace {

// Reads protobuf wire format from [p, end); every read checks the bounds.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes)
      : p_(reinterpret_cast<const uint8_t*>(bytes.data())), end_(p_ + bytes.size()) {}
  bool done() const { return p_ == end_; }
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64 && p_ < end_; shift += 7) {
      const uint8_t b = *p_++;
      *v |= uint64_t{b & 127u} << shift;
      if (b < 128) return true;
    }
    return false;
  }
  // The next field's number (> 0) and wire type.
  bool Tag(uint32_t* field, int* type) {
    uint64_t tag = 0;
    if (!Varint(&tag) || tag >> 3 == 0 || tag >> 3 > 0x1fffffff) return false;
    *field = static_cast<uint32_t>(tag >> 3);
    *type = static_cast<int>(tag & 7);
    return true;
  }
  bool Len(std::string_view* out) {
    uint64_t size = 0;
    if (!Varint(&size) || size > static_cast<uint64_t>(end_ - p_)) return false;
    *out = std::string_view(reinterpret_cast<const char*>(p_), size);
    p_ += size;
    return true;
  }
  bool Fixed(void* out, size_t size) {
    if (static_cast<size_t>(end_ - p_) < size) return false;
    std::memcpy(out, p_, size);
    p_ += size;
    return true;
  }
  // Skips a field this reader does not use (groups, wire types 3 and 4, are not accepted).
  bool Skip(int type) {
    uint64_t v = 0;
    std::string_view s;
    switch (type) {
      case kVarint:
        return Varint(&v);
      case kFixed64:
        return Fixed(&v, 8);
      case kLen:
        return Len(&s);
      case kFixed32:
        return Fixed(&v, 4);
      default:
        return false;
    }
  }

 private:
  const uint8_t* p_;
  const uint8_t* const end_;
};

const absl::Status kMalformed = absl::InvalidArgumentError("");

// A message field seen again merges into the first (protobuf's rule): for a oneof, the kind
// read last wins. Returns false when the bytes are malformed.
bool MergeKey(std::string_view bytes, std::optional<Key>* key) {
  WireReader r(bytes);
  uint32_t field = 0;
  int type = 0;
  while (!r.done()) {
    if (!r.Tag(&field, &type)) return false;
    uint64_t id = 0;
    std::string_view name;
    if (field == 1 && type == kVarint) {
      if (!r.Varint(&id)) return false;
      *key = Key(id);
    } else if (field == 2 && type == kLen) {
      if (!r.Len(&name)) return false;
      *key = Key(std::string(name));
    } else if (!r.Skip(type)) {
      return false;
    }
  }
  return true;
}

bool MergeValue(std::string_view bytes, std::optional<AttributeValue>* value) {
  WireReader r(bytes);
  uint32_t field = 0;
  int type = 0;
  while (!r.done()) {
    if (!r.Tag(&field, &type)) return false;
    uint64_t v = 0;
    double d = 0;
    std::string_view s;
    if (field == 1 && type == kVarint) {
      if (!r.Varint(&v)) return false;
      *value = AttributeValue(static_cast<int64_t>(v));
    } else if (field == 2 && type == kFixed64) {
      if (!r.Fixed(&d, sizeof(d))) return false;
      *value = AttributeValue(d);
    } else if (field == 3 && type == kVarint) {
      if (!r.Varint(&v)) return false;
      *value = AttributeValue(v != 0);
    } else if (field == 4 && type == kLen) {
      if (!r.Len(&s)) return false;
      *value = AttributeValue(std::string(s));
    } else if (!r.Skip(type)) {
      return false;
    }
  }
  return true;
}

// One map entry of Record.attributes: {1: name, 2: value}.
absl::Status ReadAttribute(std::string_view bytes, Record* record) {
  WireReader r(bytes);
  std::string_view name;
  std::optional<AttributeValue> value;
  uint32_t field = 0;
  int type = 0;
  while (!r.done()) {
    if (!r.Tag(&field, &type)) return kMalformed;
    std::string_view s;
    if (field == 1 && type == kLen) {
      if (!r.Len(&name)) return kMalformed;
    } else if (field == 2 && type == kLen) {
      if (!r.Len(&s) || !MergeValue(s, &value)) return kMalformed;
    } else if (!r.Skip(type)) {
      return kMalformed;
    }
  }
  if (!value) {
    return absl::InvalidArgumentError(
        absl::StrCat(".attributes[\"", std::string(name), "\"]: attribute value not set"));
  }
  record->attributes.insert_or_assign(std::string(name), *std::move(value));
  return absl::OkStatus();
}

// A Record; an error message starts with the part after "upserts[i]".
absl::Status ReadRecord(std::string_view bytes, Record* record) {
  WireReader r(bytes);
  std::optional<Key> key;
  uint32_t field = 0;
  int type = 0;
  while (!r.done()) {
    if (!r.Tag(&field, &type)) return kMalformed;
    std::string_view s;
    if (field == 1 && type == kLen) {
      if (!r.Len(&s) || !MergeKey(s, &key)) return kMalformed;
      if (!key) return absl::InvalidArgumentError(".key: key not set (id or name)");
    } else if (field == 2 && type == kLen) {  // packed
      if (!r.Len(&s) || s.size() % sizeof(float) != 0) return kMalformed;
      const size_t at = record->vector.size();
      record->vector.resize(at + s.size() / sizeof(float));
      std::memcpy(record->vector.data() + at, s.data(), s.size());
    } else if (field == 2 && type == kFixed32) {  // one unpacked element
      float f = 0;
      if (!r.Fixed(&f, sizeof(f))) return kMalformed;
      record->vector.push_back(f);
    } else if (field == 3 && type == kLen) {
      if (!r.Len(&s)) return kMalformed;
      if (absl::Status a = ReadAttribute(s, record); !a.ok()) return a;
    } else if (field == 4 && type == kLen) {
      if (!r.Len(&s)) return kMalformed;
      record->tags.emplace_back(s);
    } else if (!r.Skip(type)) {
      return kMalformed;
    }
  }
  if (!key) return absl::InvalidArgumentError(".key: required");
  record->key = *std::move(key);
  return absl::OkStatus();
}

absl::Status Named(const absl::Status& s, const char* what, size_t i) {
  if (s.message().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, "[", i, "]: does not decode"));
  }
  return absl::InvalidArgumentError(absl::StrCat(what, "[", i, "]", s.message()));
}

}  // namespace

absl::StatusOr<DecodedEntry> DecodeShardLogEntry(const void* data, size_t size) {
  DecodedEntry entry;
  WireReader r(std::string_view(static_cast<const char*>(data), size));
  uint32_t field = 0;
  int type = 0;
  while (!r.done()) {
    if (!r.Tag(&field, &type)) return absl::InvalidArgumentError("does not decode");
    std::string_view s;
    if (type == kLen && field <= 4) {
      if (!r.Len(&s)) return absl::InvalidArgumentError("does not decode");
    } else if (!r.Skip(type)) {
      return absl::InvalidArgumentError("does not decode");
    } else {
      continue;
    }
    if (field == 1) {
      Record& record = entry.upserts.emplace_back();
      if (absl::Status a = ReadRecord(s, &record); !a.ok()) {
        return Named(a, "upserts", entry.upserts.size() - 1);
      }
    } else if (field == 2) {
      std::optional<Key> key;
      if (!MergeKey(s, &key)) return Named(kMalformed, "deletes", entry.deletes.size());
      if (!key) {
        return absl::InvalidArgumentError(
            absl::StrCat("deletes[", entry.deletes.size(), "]: key not set (id or name)"));
      }
      entry.deletes.push_back(*std::move(key));
    } else if (field == 3) {
      entry.tenant.assign(s);
    } else {
      entry.has_tenant_op = true;
    }
  }
  return entry;
}

}  // namespace shoal::cluster

#include "db/validation.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "shoal/record_checks.h"

namespace shoal::db {
namespace {

constexpr size_t kMaxAttributes = 256;
constexpr size_t kMaxAttributeStringBytes = 64 * 1024;
constexpr size_t kMaxTags = 1024;
constexpr size_t kMaxTagBytes = 1024;

absl::Status Invalid(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

bool IsNameChar(char c, bool first) {
  const bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
  return first ? alpha : alpha || (c >= '0' && c <= '9') || c == '-';
}

// First non-finite element of `v`, or -1. Every query and written vector passes here: a
// branch-free pass over the exponent bits (all ones = Inf or NaN) that the compiler vectorises
// finds whether there is one, and only then is it located.
// Bounds on a vector's squared norm, checked in double. Above kMaxSquaredNorm (norm 1e14) the
// float distances between two vectors, and the sums over many of them that clustering forms,
// could overflow to Inf. Below kMinCosineSquaredNorm (FLT_MIN: norm ~1.1e-19) the components are
// at or near float's denormal range, the direction has lost its precision, and 1/norm would
// overflow float: a cosine vector there would rank at distance -Inf for every query.
constexpr double kMaxSquaredNorm = 1e28;
constexpr double kMinCosineSquaredNorm = std::numeric_limits<float>::min();

ptrdiff_t FirstNonFinite(const float* v, size_t n) {
  uint32_t any = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, v + i, sizeof(bits));
    any |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  if (any == 0) return -1;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(v[i])) return static_cast<ptrdiff_t>(i);
  }
  return -1;
}

// In double, as 8 independent partial sums: one serial sum is a chain of dependent adds
// (several cycles each) that costs more than the rest of a record's checks. The limits it is
// compared with are far from any rounding difference between the two orders.
double SquaredNorm(const float* v, size_t n) {
  constexpr size_t kLanes = 8;
  double partial[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) partial[j] += static_cast<double>(v[i + j]) * v[i + j];
  }
  for (; i < n; ++i) partial[0] += static_cast<double>(v[i]) * v[i];
  double sum = 0;
  for (double p : partial) sum += p;
  return sum;
}

// `field` names the vector; it is called only for an error (a batch's checks build no
// names while its records are valid).
using FieldName = absl::FunctionRef<std::string()>;

absl::Status CheckVector(const CollectionSpec& spec, const float* v, size_t n, FieldName field) {
  if (n != spec.dimension) {
    return Invalid(field(), absl::StrCat("dimension ", n, " does not match collection '", spec.name,
                                         "' (dimension ", spec.dimension, ")"));
  }
  if (ptrdiff_t bad = FirstNonFinite(v, n); bad >= 0) {
    return Invalid(absl::StrCat(field(), "[", bad, "]"),
                   std::isnan(v[bad]) ? "NaN is not allowed" : "Inf is not allowed");
  }
  const double squared_norm = SquaredNorm(v, n);
  if (squared_norm > kMaxSquaredNorm) {
    return Invalid(field(), absl::StrCat("squared norm ", squared_norm, " is over the limit of ",
                                         kMaxSquaredNorm, ": distances would overflow"));
  }
  if (spec.metric == Metric::kCosine) {
    if (squared_norm == 0) return Invalid(field(), "zero vector has no direction (cosine metric)");
    if (squared_norm < kMinCosineSquaredNorm) {
      return Invalid(field(), absl::StrCat("norm ", std::sqrt(squared_norm),
                                           " is too small to normalise (cosine metric; at least ",
                                           std::sqrt(kMinCosineSquaredNorm), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateAttributes(const Record& r, FieldName field) {
  if (r.attributes.size() > kMaxAttributes) {
    return Invalid(absl::StrCat(field(), ".attributes"),
                   absl::StrCat(r.attributes.size(), " attributes, at most ", kMaxAttributes));
  }
  for (const auto& attribute : r.attributes) {
    const std::string& name = attribute.first;
    const AttributeValue& value = attribute.second;
    auto f = [&] {
      return absl::StrCat(field(), ".attributes[\"", name.substr(0, kMaxNameBytes), "\"]");
    };
    if (!ValidateCollectionName(name, "").ok()) return ValidateCollectionName(name, f());
    if (const auto* d = std::get_if<double>(&value); d && !std::isfinite(*d)) {
      return Invalid(f(), "NaN/Inf is not allowed");
    }
    if (const auto* s = std::get_if<std::string>(&value);
        s && s->size() > kMaxAttributeStringBytes) {
      return Invalid(
          f(), absl::StrCat("string of ", s->size(), " bytes, at most ", kMaxAttributeStringBytes));
    }
  }
  if (r.tags.size() > kMaxTags) {
    return Invalid(absl::StrCat(field(), ".tags"),
                   absl::StrCat(r.tags.size(), " tags, at most ", kMaxTags));
  }
  for (size_t i = 0; i < r.tags.size(); ++i) {
    if (r.tags[i].empty() || r.tags[i].size() > kMaxTagBytes) {
      return Invalid(absl::StrCat(field(), ".tags[", i, "]"),
                     absl::StrCat("tag must be 1..", kMaxTagBytes, " bytes"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateBatchSize(size_t n, size_t limit, const std::string& field) {
  if (n == 0) return Invalid(field, "empty batch");
  if (n > limit) {
    return absl::ResourceExhaustedError(
        absl::StrCat(field, ": batch of ", n, " exceeds the limit of ", limit));
  }
  return absl::OkStatus();
}

const char* OpName(Filter::Op op) {
  switch (op) {
    case Filter::Op::kAnd:
      return "and";
    case Filter::Op::kOr:
      return "or";
    case Filter::Op::kNot:
      return "not";
    case Filter::Op::kEq:
      return "eq";
    case Filter::Op::kRange:
      return "range";
    case Filter::Op::kHasTag:
      return "has_tag";
  }
  return nullptr;
}

absl::Status ValidateFilterLeaf(const Filter& f, const std::string& path) {
  if (f.op == Filter::Op::kHasTag) {
    if (f.name.empty() || f.name.size() > kMaxTagBytes) {
      return Invalid(path, absl::StrCat("tag must be 1..", kMaxTagBytes, " bytes"));
    }
    return absl::OkStatus();
  }
  if (absl::Status s = ValidateCollectionName(f.name, path + ".name"); !s.ok()) return s;
  if (f.op == Filter::Op::kEq) {
    if (const auto* d = std::get_if<double>(&f.value); d && std::isnan(*d)) {
      return Invalid(path + ".value", "NaN never equals anything");
    }
    if (const auto* s = std::get_if<std::string>(&f.value);
        s && s->size() > kMaxAttributeStringBytes) {
      return Invalid(path + ".value", absl::StrCat("string of ", s->size(), " bytes, at most ",
                                                   kMaxAttributeStringBytes));
    }
    return absl::OkStatus();
  }
  if (std::isnan(f.lo)) return Invalid(path + ".lo", "NaN");
  if (std::isnan(f.hi)) return Invalid(path + ".hi", "NaN");
  if (f.lo > f.hi) return Invalid(path, absl::StrCat("lo ", f.lo, " > hi ", f.hi));
  return absl::OkStatus();
}

// `path` names the node (e.g. "filter.and[1]"); its op is appended for leaves and Not.
absl::Status ValidateFilterNode(const Filter& f, const std::string& path, size_t depth,
                                size_t* nodes) {
  if (depth > kMaxFilterDepth) {
    return Invalid(path, absl::StrCat("nested deeper than ", kMaxFilterDepth, " levels"));
  }
  if (++*nodes > kMaxFilterNodes) {
    return Invalid(path, absl::StrCat("filter has more than ", kMaxFilterNodes, " nodes"));
  }
  const char* op = OpName(f.op);
  if (op == nullptr) {
    return Invalid(path, absl::StrCat("unknown filter op ", static_cast<int>(f.op)));
  }
  const std::string here = absl::StrCat(path, ".", op);
  switch (f.op) {
    case Filter::Op::kAnd:
    case Filter::Op::kOr:
      if (f.operands.empty()) return Invalid(here, "needs at least one operand");
      for (size_t i = 0; i < f.operands.size(); ++i) {
        absl::Status s =
            ValidateFilterNode(f.operands[i], absl::StrCat(here, "[", i, "]"), depth + 1, nodes);
        if (!s.ok()) return s;
      }
      return absl::OkStatus();
    case Filter::Op::kNot:
      if (f.operands.size() != 1) {
        return Invalid(here, absl::StrCat("needs exactly one operand, has ", f.operands.size()));
      }
      return ValidateFilterNode(f.operands[0], here, depth + 1, nodes);
    default:
      if (!f.operands.empty()) return Invalid(here, "a leaf takes no operands");
      return ValidateFilterLeaf(f, here);
  }
}

}  // namespace

absl::Status ValidateFilter(const Filter& filter, const std::string& field) {
  size_t nodes = 0;
  return ValidateFilterNode(filter, field, 0, &nodes);
}

absl::Status ValidateCollectionName(std::string_view name, const std::string& field) {
  if (name.empty()) return Invalid(field, "must not be empty");
  if (name.size() > kMaxNameBytes) {
    return Invalid(field, absl::StrCat("longer than ", kMaxNameBytes, " bytes"));
  }
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0)) {
      return Invalid(field,
                     absl::StrCat("'", std::string(name), "' must match [A-Za-z_][A-Za-z0-9_-]*"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateCollectionOrShardName(std::string_view name, const std::string& field) {
  // Cluster mode's local shard copies: "<name>@<shard>" (shard: 1..4 digits).
  if (const size_t at = name.find('@'); at != std::string_view::npos) {
    const std::string_view shard = name.substr(at + 1);
    if (shard.empty() || shard.size() > 4 ||
        shard.find_first_not_of("0123456789") != std::string_view::npos) {
      return Invalid(field, absl::StrCat("'", std::string(name),
                                         "': a shard suffix must be '@' and 1..4 digits"));
    }
    name = name.substr(0, at);
  }
  return ValidateCollectionName(name, field);
}

absl::Status ValidateSpec(const CollectionSpec& spec) {
  if (absl::Status s = ValidateCollectionOrShardName(spec.name, "name"); !s.ok()) return s;
  if (spec.dimension == 0 || spec.dimension > kMaxDimension) {
    return Invalid("dimension", absl::StrCat(spec.dimension, " is not in 1..", kMaxDimension));
  }
  const int metric = static_cast<int>(spec.metric);
  if (metric < 0 || metric > 2) return Invalid("metric", absl::StrCat("unknown metric ", metric));
  if (spec.shards != 0) {
    return Invalid("shards", "a sharded collection needs cluster mode (shoald --cluster-etcd)");
  }
  if (spec.replication != 0) {
    return Invalid("replication",
                   "a replicated collection needs cluster mode (shoald --cluster-etcd)");
  }
  return absl::OkStatus();
}

namespace {
// The one rule for keys; ValidateKey words its error.
bool KeyIsValid(const Key& key) {
  const auto* s = std::get_if<std::string>(&key);
  return s == nullptr || (!s->empty() && s->size() <= kMaxKeyBytes);
}
}  // namespace

absl::Status ValidateKey(const Key& key, const std::string& field) {
  if (!KeyIsValid(key)) {
    return Invalid(field, absl::StrCat("string key must be 1..", kMaxKeyBytes, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status ValidateRecordCount(size_t n, const Options& options) {
  return ValidateBatchSize(n, options.max_batch_records, "records");
}

absl::Status ValidateRecords(const CollectionSpec& spec, std::span<const Record> records,
                             const Options& options) {
  if (absl::Status s = ValidateRecordCount(records.size(), options); !s.ok()) return s;
  absl::flat_hash_map<Key, size_t> first_index;
  first_index.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    auto field = [i] { return absl::StrCat("records[", i, "]"); };
    if (const auto* text = std::get_if<std::string>(&r.key);
        text != nullptr && (text->empty() || text->size() > kMaxKeyBytes)) {
      return ValidateKey(r.key, field() + ".key");
    }
    auto [it, fresh] = first_index.emplace(r.key, i);
    if (!fresh) {
      return Invalid(field() + ".key", absl::StrCat("duplicates records[", it->second, "].key"));
    }
    absl::Status s =
        CheckVector(spec, r.vector.data(), r.vector.size(), [&] { return field() + ".vector"; });
    if (!s.ok()) return s;
    if (s = ValidateAttributes(r, field); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ValidateVector(const CollectionSpec& spec, std::span<const float> vector,
                            const std::string& field) {
  return CheckVector(spec, vector.data(), vector.size(), [&] { return field; });
}

absl::Status ValidateKeys(std::span<const Key> keys, const Options& options) {
  if (absl::Status s = ValidateBatchSize(keys.size(), options.max_batch_records, "keys"); !s.ok()) {
    return s;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    // The field's name only for a bad key: a grant of one key builds no string.
    if (!KeyIsValid(keys[i])) return ValidateKey(keys[i], absl::StrCat("keys[", i, "]"));
  }
  return absl::OkStatus();
}

absl::Status ValidateSearch(const CollectionSpec& spec, std::span<const float> queries,
                            const SearchParams& params, const Options& options) {
  if (params.k == 0 || params.k > options.max_k) {
    return Invalid("k", absl::StrCat(params.k, " is not in 1..", options.max_k));
  }
  if (!std::isfinite(params.pruning_ratio) || params.pruning_ratio < 0) {
    return Invalid("pruning_ratio", "must be a finite number >= 0");
  }
  if (!(params.target_recall >= 0 && params.target_recall <= 1)) {
    return Invalid("target_recall", "must be in 0..1 (0 = the index's default)");
  }
  if (queries.empty()) return Invalid("queries", "empty batch");
  if (queries.size() % spec.dimension != 0) {
    return Invalid("queries", absl::StrCat(queries.size(), " floats is not a multiple of the ",
                                           "collection's dimension ", spec.dimension));
  }
  const size_t n = queries.size() / spec.dimension;
  if (n > options.max_batch_queries) {
    return absl::ResourceExhaustedError(
        absl::StrCat("queries: batch of ", n, " exceeds the limit of ", options.max_batch_queries));
  }
  if (n * params.k > options.max_search_results) {
    return absl::ResourceExhaustedError(
        absl::StrCat("queries x k: ", n, " queries x k ", params.k, " = ", n * params.k,
                     " results exceed the limit of ", options.max_search_results, " per request"));
  }
  for (size_t i = 0; i < n; ++i) {
    absl::Status s = CheckVector(spec, queries.data() + i * spec.dimension, spec.dimension,
                                 [i] { return absl::StrCat("queries[", i, "]"); });
    if (!s.ok()) return s;
  }
  if (params.filter != nullptr) return ValidateFilter(*params.filter);
  return absl::OkStatus();
}

std::string KeyDebugString(const Key& key) {
  if (const auto* n = std::get_if<uint64_t>(&key)) return absl::StrCat("key ", *n);
  const std::string& s = std::get<std::string>(key);
  if (s.size() > 64) return absl::StrCat("key \"", s.substr(0, 64), "...\"");
  return absl::StrCat("key \"", s, "\"");
}

absl::Status ValidateTenantQuotas(const TenantQuotas& quotas) {
  const double rate = quotas.max_searches_per_second;
  if (!std::isfinite(rate) || rate < 0) {
    return Invalid("quotas.max_searches_per_second",
                   absl::StrCat(rate, " is not a finite number >= 0 (0 = unlimited)"));
  }
  return absl::OkStatus();
}

}  // namespace shoal::db

namespace shoal {

absl::Status CheckRecords(const CollectionSpec& spec, std::span<const Record> records,
                          const Options& options) {
  return db::ValidateRecords(spec, records, options);
}

uint64_t RecordQuotaBytes(const Record& r) {
  uint64_t bytes = r.vector.size() * sizeof(float);
  if (const auto* s = std::get_if<std::string>(&r.key)) {
    bytes += s->size();
  } else {
    bytes += sizeof(uint64_t);
  }
  for (const auto& [name, value] : r.attributes) {
    bytes += name.size();
    if (const auto* s = std::get_if<std::string>(&value)) {
      bytes += s->size();
    } else {
      bytes += 8;
    }
  }
  for (const std::string& tag : r.tags) bytes += tag.size();
  return bytes;
}

}  // namespace shoal

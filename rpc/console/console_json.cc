#include "rpc/console/console_json.h"

#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rpc/convert.h"
#include "shoal/v1/types.pb.h"

namespace shoal::rpc::console {
namespace {

absl::Status Bad(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

Json AttributeToJson(const AttributeValue& value) {
  return std::visit([](const auto& v) { return Json(v); }, value);
}

}  // namespace

absl::StatusOr<Json> ParseBody(absl::string_view text) {
  if (text.empty()) return Json::object();
  Json json = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Bad("body", "not valid JSON");
  if (!json.is_object()) return Bad("body", "not a JSON object");
  return json;
}

absl::StatusOr<Key> KeyFromJson(const Json& json, absl::string_view field) {
  // Parsed JSON holds non-negative integers as unsigned; JSON built in C++ may hold them signed.
  if (json.is_number_unsigned()) return Key(json.get<uint64_t>());
  if (json.is_number_integer()) {
    if (json.get<int64_t>() >= 0) return Key(static_cast<uint64_t>(json.get<int64_t>()));
    return Bad(field, "a numeric key must not be negative");
  }
  if (json.is_string()) return Key(json.get<std::string>());
  return Bad(field, "a key is a non-negative integer or a string");
}

absl::StatusOr<std::vector<Key>> KeysFromJson(const Json& json, absl::string_view field) {
  if (!json.is_array()) return Bad(field, "not an array of keys");
  std::vector<Key> keys;
  keys.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    absl::StatusOr<Key> key = KeyFromJson(json[i], absl::StrCat(field, "[", i, "]"));
    if (!key.ok()) return key.status();
    keys.push_back(*std::move(key));
  }
  return keys;
}

absl::StatusOr<std::vector<float>> VectorFromJson(const Json& json, absl::string_view field) {
  if (!json.is_array()) return Bad(field, "not an array of numbers");
  std::vector<float> vector;
  vector.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (!json[i].is_number()) return Bad(absl::StrCat(field, "[", i, "]"), "not a number");
    // Out-of-range values become +-inf here and are refused by the DB's own check, by index.
    vector.push_back(static_cast<float>(json[i].get<double>()));
  }
  return vector;
}

absl::StatusOr<Filter> FilterFromJson(const Json& json, absl::string_view field) {
  if (!json.is_object()) return Bad(field, "not a JSON object (a shoal.v1.Filter)");
  v1::Filter proto;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto parsed = google::protobuf::util::JsonStringToMessage(json.dump(), &proto, options);
  if (!parsed.ok()) return Bad(field, parsed.message().as_string());
  return FilterFromProto(proto, field);
}

absl::StatusOr<uint32_t> OptionalUint(const Json& object, const char* name, uint32_t fallback,
                                      uint32_t lo, uint32_t hi) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return fallback;
  const bool integer =
      it->is_number_unsigned() || (it->is_number_integer() && it->get<int64_t>() >= 0);
  if (!integer || it->get<uint64_t>() < lo || it->get<uint64_t>() > hi) {
    return Bad(name, absl::StrCat("must be an integer in [", lo, ", ", hi, "]"));
  }
  return static_cast<uint32_t>(it->get<uint64_t>());
}

absl::StatusOr<std::string> OptionalString(const Json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) return Bad(name, "not a string");
  return it->get<std::string>();
}

Json KeyToJson(const Key& key) {
  if (const uint64_t* id = std::get_if<uint64_t>(&key)) return Json(*id);
  return Json(std::get<std::string>(key));
}

Json RecordToJson(const Record& record, bool with_vector) {
  Json json = {
      {"key", KeyToJson(record.key)}, {"attributes", Json::object()}, {"tags", record.tags}};
  for (const auto& [name, value] : record.attributes)
    json["attributes"][name] = AttributeToJson(value);
  if (with_vector) json["vector"] = record.vector;
  return json;
}

Json CollectionInfoToJson(const CollectionInfo& info) {
  return {{"name", info.spec.name},
          {"dimension", info.spec.dimension},
          {"metric", MetricName(info.spec.metric)},
          {"num_vectors", info.num_vectors},
          {"vector_bytes", info.num_vectors * info.spec.dimension * sizeof(float)},
          {"index", info.index},
          {"index_ram_bytes", info.index_ram_bytes},
          {"unindexed_vectors", info.unindexed_vectors},
          {"aliases", info.aliases},
          {"tombstones", info.tombstones},
          {"postings", info.postings},
          {"posting_splits", info.posting_splits},
          {"posting_merges", info.posting_merges},
          {"damage", info.damage}};
}

Json SnapshotToJson(const SnapshotInfo& info) {
  return {{"name", info.name},
          {"files", info.files},
          {"bytes", info.bytes},
          {"created_unix_seconds", info.created_unix_seconds}};
}

Json TenantInfoToJson(const TenantInfo& info) {
  return {{"name", info.name},
          {"state", TenantStateName(info.state)},
          {"max_vectors", info.quotas.max_vectors},
          {"max_bytes", info.quotas.max_bytes},
          {"max_searches_per_second", info.quotas.max_searches_per_second},
          {"vectors_owned", info.vectors_owned},
          {"vectors_visible", info.vectors_visible},
          {"bytes_owned", info.bytes_owned},
          {"searches", info.searches},
          {"search_p50_us", info.search_p50_us},
          {"search_p99_us", info.search_p99_us}};
}

Json MetricsSampleToJson(const MetricsSample& sample) {
  Json bounds = Json::array();
  // JSON has no infinity: the last (+inf) bucket's bound is written as null.
  for (double bound : sample.latency_bounds) {
    bounds.push_back(std::isfinite(bound) ? Json(bound) : Json(nullptr));
  }
  return {{"rpcs", sample.rpcs},
          {"rpc_errors", sample.rpc_errors},
          {"latency_bounds", std::move(bounds)},
          {"latency_counts", sample.latency_counts},
          {"wal_syncs", sample.wal_syncs},
          {"wal_sync_seconds", sample.wal_sync_seconds},
          {"rejections", sample.rejections},
          {"ingested_records", sample.ingested_records},
          {"builds_in_progress", sample.builds_in_progress}};
}

std::string CodeName(absl::StatusCode code) { return GrpcCodeName(static_cast<int>(code)); }

Json ErrorToJson(const absl::Status& status) {
  return {{"error", {{"code", CodeName(status.code())}, {"message", status.message()}}}};
}

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kFailedPrecondition:
      return 412;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kCancelled:
      return 499;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

}  // namespace shoal::rpc::console

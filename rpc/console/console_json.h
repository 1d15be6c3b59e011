// The web console's JSON forms of the embedded API's values (nlohmann::json), and the checks
// that turn a request body's JSON into them. Each *FromJson names the offending field, prefixed
// with `field`, in INVALID_ARGUMENT errors ("keys[2]: ..."); value rules that need the
// collection (dimension, NaN, key length, names) stay the DB's to check, as for gRPC.
//
//   Key        a JSON number (uint64 key) or a JSON string (string key). Browsers hold numbers
//              as doubles: uint64 keys above 2^53 do not survive a round trip through the page.
//   Vector     an array of numbers.
//   Filter     the proto3 JSON form of shoal.v1.Filter (what gRPC clients send), e.g.
//              {"equals": {"name": "label", "value": {"int_value": 3}}}; converted by the same
//              code as gRPC's (rpc/convert.h), so both check a filter the same way.
//
// Stateless; thread-safe. Nothing here throws: bodies are parsed without exceptions and every
// access checks the type first.
#ifndef SHOAL_RPC_CONSOLE_CONSOLE_JSON_H_
#define SHOAL_RPC_CONSOLE_CONSOLE_JSON_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rpc/metrics.h"
#include "shoal/filter.h"
#include "shoal/tenants.h"
#include "shoal/types.h"

namespace shoal::rpc::console {

using Json = nlohmann::json;

// A request body: "" is {}; anything but a JSON object is INVALID_ARGUMENT ("body: ...").
absl::StatusOr<Json> ParseBody(absl::string_view text);

absl::StatusOr<Key> KeyFromJson(const Json& json, absl::string_view field);
absl::StatusOr<std::vector<Key>> KeysFromJson(const Json& json, absl::string_view field);
absl::StatusOr<std::vector<float>> VectorFromJson(const Json& json, absl::string_view field);
absl::StatusOr<Filter> FilterFromJson(const Json& json, absl::string_view field);

// Optional members of `object`: `fallback` when absent; INVALID_ARGUMENT naming the member when
// it has the wrong type or is out of [lo, hi].
absl::StatusOr<uint32_t> OptionalUint(const Json& object, const char* name, uint32_t fallback,
                                      uint32_t lo, uint32_t hi);
absl::StatusOr<std::string> OptionalString(const Json& object, const char* name);

Json KeyToJson(const Key& key);
// Attributes and tags; the vector only when `with_vector`.
Json RecordToJson(const Record& record, bool with_vector);
Json CollectionInfoToJson(const CollectionInfo& info);
Json SnapshotToJson(const SnapshotInfo& info);
Json TenantInfoToJson(const TenantInfo& info);
Json MetricsSampleToJson(const MetricsSample& sample);

// {"error": {"code": "NOT_FOUND", "message": ...}} and the HTTP status of a canonical code.
Json ErrorToJson(const absl::Status& status);
int HttpStatusOf(absl::StatusCode code);
// "NOT_FOUND", ... (the gRPC names, as gRPC clients see them).
std::string CodeName(absl::StatusCode code);

}  // namespace shoal::rpc::console

#endif  // SHOAL_RPC_CONSOLE_CONSOLE_JSON_H_

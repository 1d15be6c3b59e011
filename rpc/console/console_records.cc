// The console's record views: fetch by key, browse with a filter, search by example.
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rpc/console/console_api.h"
#include "rpc/console/console_call.h"
#include "shoal/filter.h"

namespace shoal::rpc::console {
namespace {

// Records (or null) for `keys`, in order, with their vectors.
absl::StatusOr<Json> RecordsJson(DB& db, const std::string& collection,
                                 const std::vector<Key>& keys, const ReadOptions& read) {
  absl::StatusOr<std::vector<std::optional<Record>>> records = db.Get(collection, keys, read);
  if (!records.ok()) return records.status();
  Json list = Json::array();
  for (const std::optional<Record>& record : *records) {
    list.push_back(record ? RecordToJson(*record, /*with_vector=*/true) : Json(nullptr));
  }
  return list;
}

// The body's optional "filter", converted as gRPC converts its own.
absl::StatusOr<std::optional<Filter>> OptionalFilter(const Json& body) {
  auto it = body.find("filter");
  if (it == body.end() || it->is_null()) return std::nullopt;
  absl::StatusOr<Filter> filter = FilterFromJson(*it, "filter");
  if (!filter.ok()) return filter.status();
  return *std::move(filter);
}

// The vector of the record `key`; NOT_FOUND naming `field` when there is none (or the tenant
// in `read` does not see it: a bound key cannot search by another tenant's record).
absl::StatusOr<std::vector<float>> VectorOfKey(DB& db, const std::string& collection,
                                               const Json& key_json, const char* field,
                                               const ReadOptions& read) {
  absl::StatusOr<Key> key = KeyFromJson(key_json, field);
  if (!key.ok()) return key.status();
  absl::StatusOr<std::vector<std::optional<Record>>> found = db.Get(collection, {&*key, 1}, read);
  if (!found.ok()) return found.status();
  if (!found->front()) {
    return absl::NotFoundError(
        absl::StrCat(field, ": no record ", KeyToJson(*key).dump(), " in \"", collection, "\""));
  }
  return std::move(found->front()->vector);
}

// Hits joined with their records: [{key, distance, record}] (record null if deleted since).
absl::StatusOr<Json> HitsJson(DB& db, const std::string& collection, const std::vector<Hit>& hits,
                              const ReadOptions& read) {
  std::vector<Key> keys;
  keys.reserve(hits.size());
  for (const Hit& hit : hits) keys.push_back(hit.key);
  Json records = Json::array();
  if (!keys.empty()) {
    absl::StatusOr<Json> fetched = RecordsJson(db, collection, keys, read);
    if (!fetched.ok()) return fetched.status();
    records = *std::move(fetched);
  }
  Json list = Json::array();
  for (size_t i = 0; i < hits.size(); ++i) {
    list.push_back(
        {{"key", KeyToJson(hits[i].key)}, {"distance", hits[i].distance}, {"record", records[i]}});
  }
  return list;
}

}  // namespace

absl::StatusOr<std::string> ConsoleApi::RecordTenant(Call& call) {
  absl::StatusOr<std::string> requested = OptionalString(call.body, "tenant");
  if (!requested.ok()) return requested.status();
  return gate_->ScopeTenant(call.principal, *requested, "tenant");
}

absl::StatusOr<Json> ConsoleApi::GetRecords(Call& call) {
  absl::StatusOr<std::string> tenant = RecordTenant(call);
  if (!tenant.ok()) return tenant.status();
  auto it = call.body.find("keys");
  if (it == call.body.end()) return absl::InvalidArgumentError("keys: required");
  absl::StatusOr<std::vector<Key>> keys = KeysFromJson(*it, "keys");
  if (!keys.ok()) return keys.status();
  absl::StatusOr<Json> records = RecordsJson(*call.db, call.params[0], *keys, {.tenant = *tenant});
  if (!records.ok()) return records.status();
  return Json{{"records", *std::move(records)}};
}

// Browsing pages through the records that pass the filter in key order (DB::Scroll; the body's
// "page_token" continues a previous answer's "next_page_token"), or with "near" lists those
// nearest to that record (a filtered search).
absl::StatusOr<Json> ConsoleApi::Browse(Call& call) {
  const std::string& collection = call.params[0];
  absl::StatusOr<std::string> tenant = RecordTenant(call);
  if (!tenant.ok()) return tenant.status();
  const ReadOptions read{.tenant = *tenant};
  absl::StatusOr<uint32_t> limit = OptionalUint(call.body, "limit", 50, 1, 1000);
  if (!limit.ok()) return limit.status();
  absl::StatusOr<std::optional<Filter>> filter = OptionalFilter(call.body);
  if (!filter.ok()) return filter.status();
  const Filter* f = *filter ? &**filter : nullptr;
  auto near = call.body.find("near");
  if (near == call.body.end() || near->is_null()) {
    ScrollOptions scroll{.limit = *limit, .with_vectors = true};
    if (auto token = call.body.find("page_token"); token != call.body.end()) {
      if (!token->is_string()) return absl::InvalidArgumentError("page_token: want a string");
      scroll.page_token = token->get<std::string>();
    }
    absl::StatusOr<ScrollPage> page = call.db->Scroll(collection, f, scroll, read);
    if (!page.ok()) return page.status();
    Json list = Json::array();
    for (const Record& r : page->records) {
      list.push_back({{"key", KeyToJson(r.key)},
                      {"distance", nullptr},
                      {"record", RecordToJson(r, /*with_vector=*/true)}});
    }
    return Json{{"anchor", "scroll"},
                {"records", std::move(list)},
                {"next_page_token", page->next_page_token}};
  }
  absl::StatusOr<std::vector<float>> anchor =
      VectorOfKey(*call.db, collection, *near, "near", read);
  if (!anchor.ok()) return anchor.status();
  SearchParams params{.k = *limit, .filter = f, .tenant = *tenant};
  absl::StatusOr<std::vector<std::vector<Hit>>> hits = call.db->Search(collection, *anchor, params);
  if (!hits.ok()) return hits.status();
  absl::StatusOr<Json> list = HitsJson(*call.db, collection, hits->front(), read);
  if (!list.ok()) return list.status();
  return Json{{"anchor", "near"}, {"records", *std::move(list)}};
}

absl::StatusOr<Json> ConsoleApi::Search(Call& call) {
  const std::string& collection = call.params[0];
  absl::StatusOr<std::string> tenant = RecordTenant(call);
  if (!tenant.ok()) return tenant.status();
  const ReadOptions read{.tenant = *tenant};
  absl::StatusOr<uint32_t> k = OptionalUint(call.body, "k", 10, 1, 1000);
  if (!k.ok()) return k.status();
  absl::StatusOr<uint32_t> max_postings =
      OptionalUint(call.body, "max_postings", 0, 0, std::numeric_limits<uint32_t>::max());
  if (!max_postings.ok()) return max_postings.status();
  absl::StatusOr<std::optional<Filter>> filter = OptionalFilter(call.body);
  if (!filter.ok()) return filter.status();
  const auto vector_it = call.body.find("vector");
  const auto key_it = call.body.find("key");
  const bool by_vector = vector_it != call.body.end() && !vector_it->is_null();
  const bool by_key = key_it != call.body.end() && !key_it->is_null();
  if (by_vector == by_key) return absl::InvalidArgumentError("vector: give a vector or a key");
  absl::StatusOr<std::vector<float>> query =
      by_vector ? VectorFromJson(*vector_it, "vector")
                : VectorOfKey(*call.db, collection, *key_it, "key", read);
  if (!query.ok()) return query.status();
  // The DB sees a flat span; a query of the wrong length must not pass as several queries.
  absl::StatusOr<CollectionInfo> info = call.db->DescribeCollection(collection);
  if (!info.ok()) return info.status();
  if (query->size() != info->spec.dimension) {
    return absl::InvalidArgumentError(absl::StrCat("vector: ", query->size(),
                                                   " values, collection \"", collection,
                                                   "\" has dimension ", info->spec.dimension));
  }
  SearchParams params{.k = *k, .max_postings = *max_postings, .tenant = *tenant};
  if (*filter) params.filter = &**filter;
  absl::StatusOr<std::vector<std::vector<Hit>>> hits = call.db->Search(collection, *query, params);
  if (!hits.ok()) return hits.status();
  absl::StatusOr<Json> list = HitsJson(*call.db, collection, hits->front(), read);
  if (!list.ok()) return list.status();
  return Json{{"query", *query}, {"hits", *std::move(list)}};
}

}  // namespace shoal::rpc::console

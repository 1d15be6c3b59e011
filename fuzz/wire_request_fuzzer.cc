// Fuzzes the server's request path up to the DB: a v1 Filter, SearchRequest or UpsertRequest
// parsed from the input (first byte picks which), converted by rpc/convert.cc and validated by
// db/validation.cc, as shoald does before it calls the core. Anything may fail; nothing may crash.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "db/validation.h"
#include "rpc/convert.h"
#include "shoal/v1/search_service.pb.h"
#include "shoal/v1/vector_service.pb.h"

namespace {

using shoal::CollectionSpec;
using shoal::Filter;
using shoal::Record;

void CheckFilter(const shoal::v1::Filter& proto) {
  absl::StatusOr<Filter> filter = shoal::rpc::FilterFromProto(proto, "filter");
  if (!filter.ok()) return;
  if (!shoal::db::ValidateFilter(*filter).ok()) return;
  shoal::v1::Filter back;
  shoal::rpc::FilterToProto(*filter, &back);
}

void CheckSearch(const shoal::v1::SearchRequest& request) {
  shoal::SearchParams params;
  params.k = request.k();
  params.max_postings = request.max_postings();
  params.pruning_ratio = request.pruning_ratio();
  absl::StatusOr<Filter> filter;
  if (request.has_filter()) {
    filter = shoal::rpc::FilterFromProto(request.filter(), "filter");
    if (!filter.ok()) return;
    params.filter = &*filter;
  }
  CollectionSpec spec{"fuzz", request.dimension() == 0 ? 1 : request.dimension(),
                      shoal::Metric::kCosine};
  std::span<const float> queries(request.queries().data(), request.queries_size());
  (void)shoal::db::ValidateSearch(spec, queries, params, shoal::Options());
}

void CheckUpsert(const shoal::v1::UpsertRequest& request) {
  std::vector<Record> records;
  for (int i = 0; i < request.records_size(); ++i) {
    absl::StatusOr<Record> record =
        shoal::rpc::RecordFromProto(request.records(i), "records[" + std::to_string(i) + "]");
    if (!record.ok()) return;
    shoal::v1::Record back;
    shoal::rpc::RecordToProto(*record, &back);
    records.push_back(*std::move(record));
  }
  uint32_t dimension = records.empty() ? 1 : static_cast<uint32_t>(records[0].vector.size());
  for (shoal::Metric metric : {shoal::Metric::kL2, shoal::Metric::kCosine}) {
    CollectionSpec spec{"fuzz", dimension == 0 ? 1 : dimension, metric};
    (void)shoal::db::ValidateRecords(spec, records, shoal::Options());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t which = data[0] % 3;
  const void* body = data + 1;
  const int body_size = static_cast<int>(size - 1);
  if (which == 0) {
    shoal::v1::Filter proto;
    if (proto.ParseFromArray(body, body_size)) CheckFilter(proto);
  } else if (which == 1) {
    shoal::v1::SearchRequest request;
    if (request.ParseFromArray(body, body_size)) CheckSearch(request);
  } else {
    shoal::v1::UpsertRequest request;
    if (request.ParseFromArray(body, body_size)) CheckUpsert(request);
  }
  return 0;
}

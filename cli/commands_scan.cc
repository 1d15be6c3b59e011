// Records by filter: `count`, `scroll`, and `delete --filter` (VectorService Count, Scroll,
// DeleteByFilter).
//
//   count NAME [--filter TERMS] [--tenant T]                -> {"count": N}
//   scroll NAME [--filter TERMS] [--limit N] [--page-token P] [--vectors] [--tenant T]
//                                                           -> {"records": [...],
//                                                           "next_page_token": P}
//   delete NAME --filter TERMS | --all [--apply] [--sync] [--tenant T]
//       without --apply only counts what would go          -> {"would_delete": N} / {"deleted": N}
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cli/commands_internal.h"

namespace shoal::cli {
namespace {

namespace v1 = ::shoal::v1;

Table One(const char* column, Cell value) {
  Table t{.columns = {column}, .single = true};
  t.rows.push_back({std::move(value)});
  return t;
}

// A record as a JSON object: key, vector (when the page has vectors), attributes (typed, by
// name), tags.
Cell RecordCell(const v1::Record& r, bool with_vector) {
  std::vector<std::pair<std::string, Cell>> attributes;
  for (const auto& [name, value] : r.attributes()) {
    attributes.emplace_back(name, AttributeCell(value));
  }
  std::sort(attributes.begin(), attributes.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Cell> tags;
  for (const std::string& tag : r.tags()) tags.push_back(Cell::Text(tag));
  std::vector<std::pair<std::string, Cell>> fields = {{"key", KeyCell(r.key())}};
  if (with_vector) {
    std::vector<Cell> vector;
    for (float value : r.vector()) vector.push_back(Cell::Number(value));
    fields.emplace_back("vector", Cell::List(vector));
  }
  fields.emplace_back("attributes", Cell::Object(attributes));
  fields.emplace_back("tags", Cell::List(tags));
  return Cell::Object(fields);
}

template <typename Request>
absl::Status SetFilter(const Args& args, Request* request) {
  if (!args.Has("filter")) return absl::OkStatus();
  SHOAL_ASSIGN_OR_RETURN(*request->mutable_filter(), ParseFilter(args.Get("filter", "")));
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> CountMatching(const Connection& c, const Args& args) {
  v1::CountRequest request;
  request.set_collection(args.positional[1]);
  request.set_tenant(args.Get("tenant", ""));
  SHOAL_RETURN_IF_ERROR(SetFilter(args, &request));
  v1::CountResponse response;
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.vectors().Count(c.Context().get(), request, &response)));
  return response.count();
}

}  // namespace

absl::StatusOr<Table> Count(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 2, 2));
  SHOAL_ASSIGN_OR_RETURN(uint64_t n, CountMatching(c, args));
  return One("count", Cell::Number(n));
}

absl::StatusOr<Table> Scroll(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 2, 2));
  SHOAL_ASSIGN_OR_RETURN(uint64_t limit, args.GetUint("limit", 100, UINT32_MAX));
  v1::ScrollRequest request;
  request.set_collection(args.positional[1]);
  request.set_tenant(args.Get("tenant", ""));
  request.set_limit(static_cast<uint32_t>(limit));
  request.set_page_token(args.Get("page-token", ""));
  request.set_with_vectors(args.Has("vectors"));
  request.set_with_attributes(true);
  SHOAL_RETURN_IF_ERROR(SetFilter(args, &request));
  v1::ScrollResponse response;
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.vectors().Scroll(c.Context().get(), request, &response)));
  std::vector<Cell> records;
  for (const v1::Record& r : response.records()) {
    records.push_back(RecordCell(r, request.with_vectors()));
  }
  Table t{.columns = {"records", "next_page_token"}, .single = true};
  t.rows.push_back({Cell::List(records), response.next_page_token().empty()
                                             ? Cell::Null()
                                             : Cell::Text(response.next_page_token())});
  return t;
}

absl::StatusOr<Table> DeleteMatching(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 2, 2));
  if (args.Has("filter") == args.Has("all")) {
    return UsageError("delete: give keys, or --filter TERMS, or --all");
  }
  if (!args.Has("apply")) {
    // Like `cache invalidate`: without --apply a destructive bulk command only counts.
    SHOAL_ASSIGN_OR_RETURN(uint64_t n, CountMatching(c, args));
    return One("would_delete", Cell::Number(n));
  }
  v1::DeleteByFilterRequest request;
  request.set_collection(args.positional[1]);
  request.set_tenant(args.Get("tenant", ""));
  request.set_sync(args.Has("sync"));
  request.set_all(args.Has("all"));
  SHOAL_RETURN_IF_ERROR(SetFilter(args, &request));
  v1::DeleteByFilterResponse response;
  SHOAL_RETURN_IF_ERROR(
      FromGrpc(c.vectors().DeleteByFilter(c.Context().get(), request, &response)));
  return One("deleted", Cell::Number(static_cast<uint64_t>(response.deleted())));
}

}  // namespace shoal::cli

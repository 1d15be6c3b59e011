// VectorService: Count, Scroll and DeleteByFilter (records by filter; shoal/db.h). Same shape as
// Get and Delete: the tenant pinned by ScopeTenant (rpc/tenant_scope.h), the filter converted
// naming its node, one DB call, the status converted by the CallGate.
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "rpc/convert.h"
#include "rpc/vector_service.h"
#include "shoal/filter.h"

namespace shoal::rpc {
namespace {

constexpr RpcMethod kCount{"VectorService/Count", Role::kReadOnly, TenantAccess::kScoped};
constexpr RpcMethod kScroll{"VectorService/Scroll", Role::kReadOnly, TenantAccess::kScoped};
constexpr RpcMethod kDeleteByFilter{"VectorService/DeleteByFilter", Role::kReadWrite,
                                    TenantAccess::kScoped};
constexpr uint32_t kDefaultScrollLimit = 100;

// The request's collection and filter (nullopt: unset, every record); errors name the field.
template <typename Request>
absl::StatusOr<std::optional<Filter>> CollectionAndFilter(const Request& request) {
  if (request.collection().empty()) return absl::InvalidArgumentError("collection: required");
  if (!request.has_filter()) return std::optional<Filter>();
  absl::StatusOr<Filter> filter = FilterFromProto(request.filter(), "filter");
  if (!filter.ok()) return filter.status();
  return std::optional<Filter>(*std::move(filter));
}

const Filter* OrNull(const std::optional<Filter>& filter) {
  return filter.has_value() ? &*filter : nullptr;
}

absl::Status DoCount(CallGate& gate, DB& db, const Principal& caller,
                     const v1::CountRequest& request, v1::CountResponse& response) {
  absl::StatusOr<std::optional<Filter>> filter = CollectionAndFilter(request);
  if (!filter.ok()) return filter.status();
  absl::StatusOr<std::string> tenant = gate.ScopeTenant(caller, request.tenant(), "tenant");
  if (!tenant.ok()) return tenant.status();
  absl::StatusOr<uint64_t> count =
      db.Count(request.collection(), OrNull(*filter), ReadOptions{.tenant = *tenant});
  if (!count.ok()) return count.status();
  response.set_count(*count);
  return absl::OkStatus();
}

absl::Status DoScroll(CallGate& gate, DB& db, const Principal& caller,
                      const v1::ScrollRequest& request, v1::ScrollResponse& response) {
  absl::StatusOr<std::optional<Filter>> filter = CollectionAndFilter(request);
  if (!filter.ok()) return filter.status();
  absl::StatusOr<std::string> tenant = gate.ScopeTenant(caller, request.tenant(), "tenant");
  if (!tenant.ok()) return tenant.status();
  const ScrollOptions scroll{
      .limit = request.limit() == 0 ? kDefaultScrollLimit : request.limit(),
      .page_token = request.page_token(),
      .with_vectors = request.with_vectors(),
      .with_attributes = request.with_attributes(),
  };
  absl::StatusOr<ScrollPage> page =
      db.Scroll(request.collection(), OrNull(*filter), scroll, ReadOptions{.tenant = *tenant});
  if (!page.ok()) return page.status();
  for (const Record& record : page->records) RecordToProto(record, response.add_records());
  response.set_next_page_token(page->next_page_token);
  return absl::OkStatus();
}

absl::Status DoDeleteByFilter(CallGate& gate, DB& db, const Principal& caller,
                              const v1::DeleteByFilterRequest& request,
                              v1::DeleteByFilterResponse& response) {
  absl::StatusOr<std::optional<Filter>> filter = CollectionAndFilter(request);
  if (!filter.ok()) return filter.status();
  // An unset filter must be asked for: a client that forgot it would delete everything.
  if (!filter->has_value() && !request.all()) {
    return absl::InvalidArgumentError(
        "filter: required (set `all` to delete every record of the collection)");
  }
  if (filter->has_value() && request.all()) {
    return absl::InvalidArgumentError("all: set together with a filter; send one of them");
  }
  absl::StatusOr<std::string> tenant = gate.ScopeTenant(caller, request.tenant(), "tenant");
  if (!tenant.ok()) return tenant.status();
  const WriteOptions options{.sync = request.sync(), .tenant = *tenant};
  // Not timed as a WAL sync: it may commit many batches.
  absl::StatusOr<uint64_t> deleted =
      db.DeleteByFilter(request.collection(), OrNull(*filter), options);
  if (!deleted.ok()) return deleted.status();
  response.set_deleted(*deleted);
  return absl::OkStatus();
}

}  // namespace

grpc::Status VectorServiceImpl::Count(grpc::ServerContext* context, const v1::CountRequest* request,
                                      v1::CountResponse* response) {
  return gate_->Unary(context, kCount, *request, [&](DB& db, const Principal& caller) {
    return DoCount(*gate_, db, caller, *request, *response);
  });
}

grpc::Status VectorServiceImpl::Scroll(grpc::ServerContext* context,
                                       const v1::ScrollRequest* request,
                                       v1::ScrollResponse* response) {
  return gate_->Unary(context, kScroll, *request, [&](DB& db, const Principal& caller) {
    return DoScroll(*gate_, db, caller, *request, *response);
  });
}

grpc::Status VectorServiceImpl::DeleteByFilter(grpc::ServerContext* context,
                                               const v1::DeleteByFilterRequest* request,
                                               v1::DeleteByFilterResponse* response) {
  return gate_->Unary(context, kDeleteByFilter, *request, [&](DB& db, const Principal& caller) {
    return DoDeleteByFilter(*gate_, db, caller, *request, *response);
  });
}

}  // namespace shoal::rpc

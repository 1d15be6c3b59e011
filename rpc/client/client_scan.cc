// Client: records by filter (VectorService Count, Scroll, DeleteByFilter).
#include <string>
#include <utility>

#include "rpc/client/client_internal.h"
#include "rpc/client/shoal_client.h"
#include "rpc/convert.h"
#include "shoal/filter.h"

namespace shoal::client {

using internal::FromGrpc;
using internal::NewContext;

absl::StatusOr<uint64_t> Client::Count(const std::string& collection, const Filter* filter,
                                       const ReadOptions& options) {
  v1::CountRequest request;
  request.set_collection(collection);
  if (filter != nullptr) rpc::FilterToProto(*filter, request.mutable_filter());
  request.set_tenant(options.tenant);
  v1::CountResponse response;
  grpc::Status status = stubs_->vectors->Count(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.count();
}

absl::StatusOr<ScrollPage> Client::Scroll(const std::string& collection, const Filter* filter,
                                          const ScrollOptions& scroll, const ReadOptions& options) {
  v1::ScrollRequest request;
  request.set_collection(collection);
  if (filter != nullptr) rpc::FilterToProto(*filter, request.mutable_filter());
  request.set_limit(scroll.limit);
  request.set_page_token(scroll.page_token);
  request.set_with_vectors(scroll.with_vectors);
  request.set_with_attributes(scroll.with_attributes);
  request.set_tenant(options.tenant);
  v1::ScrollResponse response;
  grpc::Status status = stubs_->vectors->Scroll(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  ScrollPage page;
  page.records.reserve(response.records_size());
  for (const v1::Record& proto : response.records()) {
    absl::StatusOr<Record> record = rpc::RecordFromProto(proto, "records");
    if (!record.ok()) return record.status();
    page.records.push_back(*std::move(record));
  }
  page.next_page_token = response.next_page_token();
  return page;
}

absl::StatusOr<uint64_t> Client::DeleteByFilter(const std::string& collection, const Filter* filter,
                                                const WriteOptions& options) {
  v1::DeleteByFilterRequest request;
  request.set_collection(collection);
  if (filter != nullptr) {
    rpc::FilterToProto(*filter, request.mutable_filter());
  } else {
    request.set_all(true);
  }
  request.set_sync(options.sync);
  request.set_tenant(options.tenant);
  v1::DeleteByFilterResponse response;
  grpc::Status status =
      stubs_->vectors->DeleteByFilter(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.deleted();
}

}  // namespace shoal::client

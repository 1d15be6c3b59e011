// Client's semantic-cache calls (CacheService), kept apart from the collection calls.
#include <cmath>

#include "rpc/cache_convert.h"
#include "rpc/client/client_internal.h"

namespace shoal::client {

using internal::FromGrpc;
using internal::NewContext;

absl::Status Client::CreateCache(const CacheSpec& spec) {
  v1::CreateCacheRequest request;
  rpc::CacheSpecToProto(spec, request.mutable_spec());
  v1::CreateCacheResponse response;
  return FromGrpc(stubs_->caches->CreateCache(NewContext(options_).get(), request, &response));
}

absl::Status Client::DropCache(const std::string& cache) {
  v1::DropCacheRequest request;
  request.set_cache(cache);
  v1::DropCacheResponse response;
  return FromGrpc(stubs_->caches->DropCache(NewContext(options_).get(), request, &response));
}

absl::StatusOr<std::vector<CacheInfo>> Client::ListCaches() {
  v1::ListCachesResponse response;
  grpc::Status status = stubs_->caches->ListCaches(NewContext(options_).get(), {}, &response);
  if (!status.ok()) return FromGrpc(status);
  std::vector<CacheInfo> out;
  for (const v1::CacheInfo& info : response.caches()) out.push_back(rpc::CacheInfoFromProto(info));
  return out;
}

absl::Status Client::SetCachePolicy(const std::string& cache, const std::string& category,
                                    const CachePolicy& policy) {
  v1::SetCachePolicyRequest request;
  request.set_cache(cache);
  request.set_category(category);
  rpc::CachePolicyToProto(policy, request.mutable_policy());
  v1::SetCachePolicyResponse response;
  return FromGrpc(stubs_->caches->SetCachePolicy(NewContext(options_).get(), request, &response));
}

absl::StatusOr<CachePolicy> Client::GetCachePolicy(const std::string& cache,
                                                   const std::string& category) {
  v1::GetCachePolicyRequest request;
  request.set_cache(cache);
  request.set_category(category);
  v1::GetCachePolicyResponse response;
  grpc::Status status =
      stubs_->caches->GetCachePolicy(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return rpc::CachePolicyFromProto(response.policy(), "policy");
}

absl::StatusOr<CacheLookupResult> Client::CacheLookup(const std::string& cache,
                                                      const CacheLookupRequest& request) {
  v1::CacheLookupRequest proto;
  proto.set_cache(cache);
  rpc::CacheLookupToProto(request, &proto);
  v1::CacheLookupResponse response;
  grpc::Status status = stubs_->caches->Lookup(NewContext(options_).get(), proto, &response);
  if (!status.ok()) return FromGrpc(status);
  return rpc::CacheLookupResultFromProto(response);
}

absl::StatusOr<uint64_t> Client::CacheStore(const std::string& cache,
                                            const CacheStoreRequest& request, bool sync) {
  v1::CacheStoreRequest proto;
  proto.mutable_lookup()->set_cache(cache);
  rpc::CacheLookupToProto(request.lookup, proto.mutable_lookup());
  proto.set_response(request.response);
  proto.set_sync(sync);
  v1::CacheStoreResponse response;
  grpc::Status status = stubs_->caches->Store(NewContext(options_).get(), proto, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.entry_id();
}

absl::StatusOr<uint64_t> Client::CacheInvalidate(const std::string& cache,
                                                 const CacheInvalidation& which) {
  v1::CacheInvalidateRequest request;
  request.set_cache(cache);
  rpc::CacheInvalidationToProto(which, &request);
  v1::CacheInvalidateResponse response;
  grpc::Status status = stubs_->caches->Invalidate(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.count();
}

absl::Status Client::CacheFeedback(const std::string& cache, const CacheFeedbackReport& report) {
  v1::CacheFeedbackRequest request;
  request.set_cache(cache);
  request.set_entry_id(report.entry_id);
  request.set_verdict(static_cast<v1::CacheVerdict>(report.verdict));
  if (!std::isnan(report.similarity)) request.set_similarity(report.similarity);
  v1::CacheFeedbackResponse response;
  return FromGrpc(stubs_->caches->Feedback(NewContext(options_).get(), request, &response));
}

absl::StatusOr<CacheStats> Client::GetCacheStats(const std::string& cache) {
  v1::GetCacheStatsRequest request;
  request.set_cache(cache);
  v1::GetCacheStatsResponse response;
  grpc::Status status =
      stubs_->caches->GetCacheStats(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return rpc::CacheStatsFromProto(response);
}

absl::Status Client::ReportModelLoad(const std::string& model, double load) {
  v1::ReportModelLoadRequest request;
  request.set_model(model);
  request.set_load(load);
  v1::ReportModelLoadResponse response;
  return FromGrpc(stubs_->caches->ReportModelLoad(NewContext(options_).get(), request, &response));
}

}  // namespace shoal::client

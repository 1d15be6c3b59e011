// gRPC handlers of shoal.v1.CacheService (proto/shoal/v1/cache_service.proto): check the
// message's shape, call the DB's "Semantic caches" methods, convert. The CallGate does auth,
// limits and metrics. Thread-safe (the DB is); holds no state of its own.
#ifndef SHOAL_RPC_CACHE_SERVICE_H_
#define SHOAL_RPC_CACHE_SERVICE_H_

#include "rpc/call_gate.h"
#include "shoal/v1/cache_service.grpc.pb.h"

namespace shoal::rpc {

class CacheServiceImpl final : public v1::CacheService::Service {
 public:
  // `gate` is not owned and must outlive the service.
  explicit CacheServiceImpl(CallGate* gate) : gate_(gate) {}

  grpc::Status CreateCache(grpc::ServerContext* context, const v1::CreateCacheRequest* request,
                           v1::CreateCacheResponse* response) override;
  grpc::Status DropCache(grpc::ServerContext* context, const v1::DropCacheRequest* request,
                         v1::DropCacheResponse* response) override;
  grpc::Status ListCaches(grpc::ServerContext* context, const v1::ListCachesRequest* request,
                          v1::ListCachesResponse* response) override;
  grpc::Status SetCachePolicy(grpc::ServerContext* context,
                              const v1::SetCachePolicyRequest* request,
                              v1::SetCachePolicyResponse* response) override;
  grpc::Status GetCachePolicy(grpc::ServerContext* context,
                              const v1::GetCachePolicyRequest* request,
                              v1::GetCachePolicyResponse* response) override;
  grpc::Status Lookup(grpc::ServerContext* context, const v1::CacheLookupRequest* request,
                      v1::CacheLookupResponse* response) override;
  grpc::Status Store(grpc::ServerContext* context, const v1::CacheStoreRequest* request,
                     v1::CacheStoreResponse* response) override;
  grpc::Status Invalidate(grpc::ServerContext* context, const v1::CacheInvalidateRequest* request,
                          v1::CacheInvalidateResponse* response) override;
  grpc::Status Feedback(grpc::ServerContext* context, const v1::CacheFeedbackRequest* request,
                        v1::CacheFeedbackResponse* response) override;
  grpc::Status GetCacheStats(grpc::ServerContext* context, const v1::GetCacheStatsRequest* request,
                             v1::GetCacheStatsResponse* response) override;
  grpc::Status ReportModelLoad(grpc::ServerContext* context,
                               const v1::ReportModelLoadRequest* request,
                               v1::ReportModelLoadResponse* response) override;

 private:
  CallGate* const gate_;
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_CACHE_SERVICE_H_

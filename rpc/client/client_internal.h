// Private to rpc/client: the generated stubs behind shoal::client::Client and the helpers its
// .cc files share. Not installed; include only from rpc/client/*.cc.
#ifndef SHOAL_RPC_CLIENT_CLIENT_INTERNAL_H_
#define SHOAL_RPC_CLIENT_CLIENT_INTERNAL_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "rpc/client/shoal_client.h"
#include "shoal/v1/admin_service.grpc.pb.h"
#include "shoal/v1/cache_service.grpc.pb.h"
#include "shoal/v1/collection_service.grpc.pb.h"
#include "shoal/v1/search_service.grpc.pb.h"
#include "shoal/v1/tenant_service.grpc.pb.h"
#include "shoal/v1/vector_service.grpc.pb.h"

namespace shoal::client {

struct Client::Stubs {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::CollectionService::Stub> collections;
  std::unique_ptr<v1::VectorService::Stub> vectors;
  std::unique_ptr<v1::SearchService::Stub> search;
  std::unique_ptr<v1::AdminService::Stub> admin;
  std::unique_ptr<v1::CacheService::Stub> caches;
  std::unique_ptr<v1::TenantService::Stub> tenants;
  std::unique_ptr<grpc::health::v1::Health::Stub> health;
};

namespace internal {

// A context with the call deadline and the API key.
std::unique_ptr<grpc::ClientContext> NewContext(const ConnectOptions& options);
// The gRPC status as an absl::Status (same code, same message).
absl::Status FromGrpc(const grpc::Status& status);
CollectionInfo InfoFromProto(const v1::CollectionInfo& proto);
// A SearchRequest from the SDK's arguments, and the hits (and, when `stats` is set, the
// statistics) of a SearchResponse.
void SearchToProto(const std::string& collection, std::span<const float> queries,
                   const SearchParams& params, v1::SearchRequest& request);
absl::StatusOr<std::vector<std::vector<Hit>>> HitsFromProto(const v1::SearchResponse& response,
                                                            SearchStats* stats);

}  // namespace internal
}  // namespace shoal::client

#endif  // SHOAL_RPC_CLIENT_CLIENT_INTERNAL_H_

// gRPC handlers of shoal.v1.CollectionService (collections and aliases): check the request's
// shape, call the DB, convert the result; the CallGate does auth, limits and metrics.
// A tenant-bound key may list and describe collections only, and gets them with the
// collection-wide counts (num_vectors, vector_bytes, index_ram_bytes, unindexed_vectors) left
// 0: they would tell it about other tenants' records.
// Thread-safe (the DB is); holds no state of its own.
#ifndef SHOAL_RPC_COLLECTION_SERVICE_H_
#define SHOAL_RPC_COLLECTION_SERVICE_H_

#include "rpc/call_gate.h"
#include "shoal/v1/collection_service.grpc.pb.h"

namespace shoal::rpc {

class CollectionServiceImpl final : public v1::CollectionService::Service {
 public:
  // `gate` is not owned and must outlive the service.
  explicit CollectionServiceImpl(CallGate* gate) : gate_(gate) {}

  grpc::Status CreateCollection(grpc::ServerContext* context,
                                const v1::CreateCollectionRequest* request,
                                v1::CreateCollectionResponse* response) override;
  grpc::Status ListCollections(grpc::ServerContext* context,
                               const v1::ListCollectionsRequest* request,
                               v1::ListCollectionsResponse* response) override;
  grpc::Status DescribeCollection(grpc::ServerContext* context,
                                  const v1::DescribeCollectionRequest* request,
                                  v1::DescribeCollectionResponse* response) override;
  grpc::Status DropCollection(grpc::ServerContext* context,
                              const v1::DropCollectionRequest* request,
                              v1::DropCollectionResponse* response) override;
  grpc::Status CreateAlias(grpc::ServerContext* context, const v1::CreateAliasRequest* request,
                           v1::CreateAliasResponse* response) override;
  grpc::Status AlterAlias(grpc::ServerContext* context, const v1::AlterAliasRequest* request,
                          v1::AlterAliasResponse* response) override;
  grpc::Status DropAlias(grpc::ServerContext* context, const v1::DropAliasRequest* request,
                         v1::DropAliasResponse* response) override;
  grpc::Status ListAliases(grpc::ServerContext* context, const v1::ListAliasesRequest* request,
                           v1::ListAliasesResponse* response) override;

 private:
  CallGate* const gate_;
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_COLLECTION_SERVICE_H_

// gRPC handlers of shoal.v1.CollectionService: check the request's shape, call the DB, convert
// the result. Thread-safe (the DB is); holds no state of its own.
#ifndef SHOAL_RPC_COLLECTION_SERVICE_H_
#define SHOAL_RPC_COLLECTION_SERVICE_H_

#include "shoal/db.h"
#include "shoal/v1/collection_service.grpc.pb.h"

namespace shoal::rpc {

class CollectionServiceImpl final : public v1::CollectionService::Service {
 public:
  // `db` is not owned and must outlive the service.
  explicit CollectionServiceImpl(DB* db) : db_(db) {}

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

 private:
  DB* const db_;
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_COLLECTION_SERVICE_H_

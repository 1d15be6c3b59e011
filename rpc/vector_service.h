// gRPC handlers of shoal.v1.VectorService (Upsert, Get, Delete): check the request's shape,
// call the DB, convert the result. Thread-safe (the DB is); holds no state of its own.
#ifndef SHOAL_RPC_VECTOR_SERVICE_H_
#define SHOAL_RPC_VECTOR_SERVICE_H_

#include "shoal/db.h"
#include "shoal/v1/vector_service.grpc.pb.h"

namespace shoal::rpc {

class VectorServiceImpl final : public v1::VectorService::Service {
 public:
  // `db` is not owned and must outlive the service.
  explicit VectorServiceImpl(DB* db) : db_(db) {}

  grpc::Status Upsert(grpc::ServerContext* context, const v1::UpsertRequest* request,
                      v1::UpsertResponse* response) override;
  grpc::Status Get(grpc::ServerContext* context, const v1::GetRequest* request,
                   v1::GetResponse* response) override;
  grpc::Status Delete(grpc::ServerContext* context, const v1::DeleteRequest* request,
                      v1::DeleteResponse* response) override;

 private:
  DB* const db_;
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_VECTOR_SERVICE_H_

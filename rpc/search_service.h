// gRPC handler of shoal.v1.SearchService: check the queries' shape, call DB::Search, convert
// the hits. Thread-safe (the DB is); holds no state of its own.
#ifndef SHOAL_RPC_SEARCH_SERVICE_H_
#define SHOAL_RPC_SEARCH_SERVICE_H_

#include "shoal/db.h"
#include "shoal/v1/search_service.grpc.pb.h"

namespace shoal::rpc {

class SearchServiceImpl final : public v1::SearchService::Service {
 public:
  // `db` is not owned and must outlive the service.
  explicit SearchServiceImpl(DB* db) : db_(db) {}

  grpc::Status Search(grpc::ServerContext* context, const v1::SearchRequest* request,
                      v1::SearchResponse* response) override;

 private:
  DB* const db_;
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_SEARCH_SERVICE_H_

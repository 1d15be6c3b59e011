// gRPC handlers of shoal.v1.SearchService (Search, BatchSearch, SearchStream): check the queries'
// shape, call DB::Search, convert the hits; the CallGate does auth, limits and metrics.
// SearchStream serves one stream on the one thread that runs its handler, Read -> search ->
// Write in a loop, so that a search costs no hand-off between threads beyond the socket's.
// Thread-safe (the DB is); holds no state of its own.
#ifndef SHOAL_RPC_SEARCH_SERVICE_H_
#define SHOAL_RPC_SEARCH_SERVICE_H_

#include "rpc/call_gate.h"
#include "shoal/v1/search_service.grpc.pb.h"

namespace shoal::rpc {

class SearchServiceImpl final : public v1::SearchService::Service {
 public:
  // `gate` is not owned and must outlive the service.
  explicit SearchServiceImpl(CallGate* gate) : gate_(gate) {}

  grpc::Status Search(grpc::ServerContext* context, const v1::SearchRequest* request,
                      v1::SearchResponse* response) override;
  grpc::Status BatchSearch(grpc::ServerContext* context, const v1::BatchSearchRequest* request,
                           v1::BatchSearchResponse* response) override;
  grpc::Status SearchStream(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::SearchStreamResponse, v1::SearchStreamRequest>* stream) override;

 private:
  CallGate* const gate_;
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_SEARCH_SERVICE_H_

// gRPC handlers of shoal.v1.VectorService (Upsert, Get, Delete, Batch, Ingest; Count, Scroll
// and DeleteByFilter in vector_scan.cc): check the request's shape, call the DB, convert the
// result; the CallGate does auth, limits and metrics.
// Ingest applies one batch at a time per stream and asks the client to back off when the
// IngestBudget (all streams together) is spent. Thread-safe; holds no per-call state.
#ifndef SHOAL_RPC_VECTOR_SERVICE_H_
#define SHOAL_RPC_VECTOR_SERVICE_H_

#include <cstdint>

#include "rpc/call_gate.h"
#include "rpc/ingest_budget.h"
#include "shoal/v1/vector_service.grpc.pb.h"

namespace shoal::rpc {

class VectorServiceImpl final : public v1::VectorService::Service {
 public:
  // Suggested back-off when the ingest budget is spent.
  static constexpr uint32_t kRetryAfterMs = 20;

  // Neither is owned; both must outlive the service.
  VectorServiceImpl(CallGate* gate, IngestBudget* budget) : gate_(gate), budget_(budget) {}

  grpc::Status Upsert(grpc::ServerContext* context, const v1::UpsertRequest* request,
                      v1::UpsertResponse* response) override;
  grpc::Status Get(grpc::ServerContext* context, const v1::GetRequest* request,
                   v1::GetResponse* response) override;
  grpc::Status Delete(grpc::ServerContext* context, const v1::DeleteRequest* request,
                      v1::DeleteResponse* response) override;
  grpc::Status Batch(grpc::ServerContext* context, const v1::BatchRequest* request,
                     v1::BatchResponse* response) override;
  grpc::Status Count(grpc::ServerContext* context, const v1::CountRequest* request,
                     v1::CountResponse* response) override;
  grpc::Status Scroll(grpc::ServerContext* context, const v1::ScrollRequest* request,
                      v1::ScrollResponse* response) override;
  grpc::Status DeleteByFilter(grpc::ServerContext* context,
                              const v1::DeleteByFilterRequest* request,
                              v1::DeleteByFilterResponse* response) override;
  grpc::Status Ingest(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::IngestResponse, v1::IngestRequest>* stream) override;

 private:
  absl::Status RunIngest(grpc::ServerContext* context, const Principal& caller,
                         grpc::ServerReaderWriter<v1::IngestResponse, v1::IngestRequest>* stream);

  CallGate* const gate_;
  IngestBudget* const budget_;
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_VECTOR_SERVICE_H_

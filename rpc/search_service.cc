#include "rpc/search_service.h"

#include <optional>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "rpc/convert.h"
#include "rpc/status_conversion.h"

namespace shoal::rpc {
namespace {

// Shape checks the wire adds on top of the DB's own: the DB sees only a flat float span, so a
// client-declared dimension is checked here, against the collection's.
absl::Status CheckShape(DB& db, const v1::SearchRequest& request) {
  if (request.collection().empty()) return absl::InvalidArgumentError("collection: required");
  if (request.queries().empty()) return absl::InvalidArgumentError("queries: empty");
  if (request.k() == 0) return absl::InvalidArgumentError("k: required (>= 1)");
  if (request.pruning_ratio() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("pruning_ratio: ", request.pruning_ratio(), " is negative"));
  }
  const uint32_t dimension = request.dimension();
  if (dimension == 0) return absl::OkStatus();
  if (request.queries_size() % dimension != 0) {
    return absl::InvalidArgumentError(absl::StrCat("queries: length ", request.queries_size(),
                                                   " is not a multiple of dimension ", dimension));
  }
  absl::StatusOr<CollectionInfo> info = db.DescribeCollection(request.collection());
  if (!info.ok()) return info.status();
  if (info->spec.dimension != dimension) {
    return absl::InvalidArgumentError(
        absl::StrCat("dimension: ", dimension, " does not match collection \"",
                     request.collection(), "\" dimension ", info->spec.dimension));
  }
  return absl::OkStatus();
}

// `default_tenant`: the tenant of a search that names none (BatchSearchRequest.tenant, already
// checked by the caller).
absl::Status DoSearch(CallGate& gate, DB& db, const Principal& caller,
                      const v1::SearchRequest& request, absl::string_view default_tenant,
                      v1::SearchResponse& response) {
  if (absl::Status s = CheckShape(db, request); !s.ok()) return s;
  absl::StatusOr<std::string> tenant = gate.ScopeTenant(
      caller, request.tenant().empty() ? default_tenant : request.tenant(), "tenant");
  if (!tenant.ok()) return tenant.status();
  SearchParams params;
  params.tenant = *tenant;
  params.k = request.k();
  params.max_postings = request.max_postings();
  params.pruning_ratio = request.pruning_ratio();
  params.with_attributes = request.with_attributes();
  params.with_vectors = request.with_vectors();
  params.target_recall = request.target_recall();
  params.consistency.read_your_writes = request.consistency().read_your_writes();
  params.consistency.min_applied_sequence = request.consistency().min_applied_sequence();
  std::optional<Filter> filter;
  if (request.has_filter()) {
    absl::StatusOr<Filter> converted = FilterFromProto(request.filter(), "filter");
    if (!converted.ok()) return converted.status();
    filter = *std::move(converted);
    params.filter = &*filter;
  }
  SearchStats stats;
  if (request.include_stats() || filter.has_value()) params.stats = &stats;
  std::span<const float> queries(request.queries().data(), request.queries_size());
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<std::vector<Hit>>> results =
      db.Search(request.collection(), queries, params);
  gate.metrics().RecordTenantSearch(request.collection(), *tenant, results.status(),
                                    absl::ToDoubleSeconds(absl::Now() - start));
  if (!results.ok()) return results.status();
  if (request.include_stats()) {
    v1::SearchStats* out = response.mutable_stats();
    out->set_postings_read(stats.postings_read);
    out->set_vectors_scored(stats.vectors_scored);
    out->set_bytes_read(stats.bytes_read);
    out->set_cache_hits(stats.cache_hits);
    out->set_full_vectors_read(stats.full_vectors_read);
  }
  for (const std::string& warning : stats.warnings) response.add_warnings(warning);
  for (const std::vector<Hit>& hits : *results) {
    v1::QueryResult* result = response.add_results();
    result->mutable_hits()->Reserve(static_cast<int>(hits.size()));
    for (const Hit& hit : hits) HitToProto(hit, result->add_hits());
  }
  return absl::OkStatus();
}

absl::Status DoBatchSearch(grpc::ServerContext* context, CallGate& gate, DB& db,
                           const Principal& caller, const v1::BatchSearchRequest& request,
                           v1::BatchSearchResponse& response) {
  if (request.searches().empty()) return absl::InvalidArgumentError("searches: empty");
  absl::StatusOr<std::string> tenant = gate.ScopeTenant(caller, request.tenant(), "tenant");
  if (!tenant.ok()) return tenant.status();
  for (int i = 0; i < request.searches_size(); ++i) {
    if (absl::Status s = gate.CheckDeadline(context); !s.ok()) return s;
    if (absl::Status s =
            DoSearch(gate, db, caller, request.searches(i), *tenant, *response.add_responses());
        !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("searches[", i, "].", s.message()));
    }
  }
  return absl::OkStatus();
}

constexpr RpcMethod kSearch{"SearchService/Search", Role::kReadOnly, TenantAccess::kScoped};
constexpr RpcMethod kBatchSearch{"SearchService/BatchSearch", Role::kReadOnly,
                                 TenantAccess::kScoped};
// Metrics: one observation per search of a stream, and one for a stream refused as it opens.
constexpr RpcMethod kSearchStream{"SearchService/SearchStream", Role::kReadOnly,
                                  TenantAccess::kScoped};

// One search of a stream: what Search does for its request, each step failing this search only.
absl::Status StreamedSearch(grpc::ServerContext* context, CallGate& gate, const Principal& caller,
                            const v1::SearchStreamRequest& request, v1::SearchResponse& response) {
  if (absl::Status s = gate.AdmitMessage(caller); !s.ok()) return s;
  if (absl::Status s = gate.CheckMessage(context, request.search(), "search"); !s.ok()) return s;
  DbHost::Lease lease = gate.Acquire();
  if (!lease.ok()) return lease.status();
  return DoSearch(gate, *lease, caller, request.search(), "", response);
}

// Answers the stream's requests in order until the client closes its side (OK) or goes away.
absl::Status ServeSearchStream(
    grpc::ServerContext* context, CallGate& gate, const Principal& caller,
    grpc::ServerReaderWriter<v1::SearchStreamResponse, v1::SearchStreamRequest>& stream) {
  v1::SearchStreamRequest request;
  v1::SearchStreamResponse response;
  while (stream.Read(&request)) {
    const absl::Time start = absl::Now();
    response.Clear();
    response.set_sequence(request.sequence());
    const grpc::Status status =
        gate.Finish(kSearchStream, start,
                    StreamedSearch(context, gate, caller, request, *response.mutable_response()));
    if (!status.ok()) {
      response.clear_response();
      response.set_code(status.error_code());
      response.set_message(status.error_message());
    }
    if (!stream.Write(response)) return absl::CancelledError("the client went away");
  }
  if (context->IsCancelled()) return absl::CancelledError("the client cancelled the stream");
  return absl::OkStatus();
}

}  // namespace

grpc::Status SearchServiceImpl::Search(grpc::ServerContext* context,
                                       const v1::SearchRequest* request,
                                       v1::SearchResponse* response) {
  return gate_->Unary(context, kSearch, *request, [&](DB& db, const Principal& caller) {
    return DoSearch(*gate_, db, caller, *request, "", *response);
  });
}

grpc::Status SearchServiceImpl::BatchSearch(grpc::ServerContext* context,
                                            const v1::BatchSearchRequest* request,
                                            v1::BatchSearchResponse* response) {
  return gate_->Unary(context, kBatchSearch, *request, [&](DB& db, const Principal& caller) {
    return DoBatchSearch(context, *gate_, db, caller, *request, *response);
  });
}

grpc::Status SearchServiceImpl::SearchStream(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::SearchStreamResponse, v1::SearchStreamRequest>* stream) {
  absl::StatusOr<Principal> caller = gate_->Admit(context, kSearchStream);
  if (!caller.ok()) return gate_->Finish(kSearchStream, absl::Now(), caller.status());
  return ToGrpcStatus(ServeSearchStream(context, *gate_, *caller, *stream));
}

}  // namespace shoal::rpc

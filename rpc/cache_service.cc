#include "rpc/cache_service.h"

#include <cmath>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "rpc/cache_convert.h"

namespace shoal::rpc {
namespace {

absl::Status RequireCache(const std::string& cache, absl::string_view field = "cache") {
  if (cache.empty()) return absl::InvalidArgumentError(std::string(field) + ": required");
  return absl::OkStatus();
}

constexpr RpcMethod kCreate{"CacheService/CreateCache", Role::kAdmin};
constexpr RpcMethod kDrop{"CacheService/DropCache", Role::kAdmin};
constexpr RpcMethod kList{"CacheService/ListCaches", Role::kReadOnly};
constexpr RpcMethod kSetPolicy{"CacheService/SetCachePolicy", Role::kAdmin};
constexpr RpcMethod kGetPolicy{"CacheService/GetCachePolicy", Role::kReadOnly};
// Lookup and Store act in one partition, so a tenant-bound key may call them for its own
// tenant (PinPartition). The rest act on whole caches (or on an entry by id) and refuse it.
constexpr RpcMethod kLookup{"CacheService/Lookup", Role::kReadOnly, TenantAccess::kScoped};
constexpr RpcMethod kStore{"CacheService/Store", Role::kReadWrite, TenantAccess::kScoped};
constexpr RpcMethod kInvalidate{"CacheService/Invalidate", Role::kAdmin};
constexpr RpcMethod kFeedback{"CacheService/Feedback", Role::kReadWrite};
constexpr RpcMethod kStats{"CacheService/GetCacheStats", Role::kReadOnly};
constexpr RpcMethod kLoad{"CacheService/ReportModelLoad", Role::kReadWrite};

// A tenant-bound key acts only in its own tenant's partitions: an empty partition tenant
// becomes its tenant, another one is PERMISSION_DENIED naming `field`. Keys that are not bound
// name any partition (a cache's partitions are namespaces of the cache, not DB tenants' data).
absl::Status PinPartition(CallGate& gate, const Principal& caller, absl::string_view field,
                          CachePartition* partition) {
  if (caller.tenant.empty()) return absl::OkStatus();
  absl::StatusOr<std::string> tenant = gate.ScopeTenant(caller, partition->tenant, field);
  if (!tenant.ok()) return tenant.status();
  partition->tenant = *std::move(tenant);
  return absl::OkStatus();
}

}  // namespace

grpc::Status CacheServiceImpl::CreateCache(grpc::ServerContext* context,
                                           const v1::CreateCacheRequest* request,
                                           v1::CreateCacheResponse*) {
  return gate_->Unary(context, kCreate, *request, [&](DB& db) -> absl::Status {
    if (!request->has_spec()) return absl::InvalidArgumentError("spec: required");
    absl::StatusOr<CacheSpec> spec = CacheSpecFromProto(request->spec(), "spec");
    if (!spec.ok()) return spec.status();
    return db.CreateCache(*spec);
  });
}

grpc::Status CacheServiceImpl::DropCache(grpc::ServerContext* context,
                                         const v1::DropCacheRequest* request,
                                         v1::DropCacheResponse*) {
  return gate_->Unary(context, kDrop, *request, [&](DB& db) -> absl::Status {
    if (absl::Status s = RequireCache(request->cache()); !s.ok()) return s;
    return db.DropCache(request->cache());
  });
}

grpc::Status CacheServiceImpl::ListCaches(grpc::ServerContext* context,
                                          const v1::ListCachesRequest* request,
                                          v1::ListCachesResponse* response) {
  return gate_->Unary(context, kList, *request, [&](DB& db) -> absl::Status {
    absl::StatusOr<std::vector<CacheInfo>> infos = db.ListCaches();
    if (!infos.ok()) return infos.status();
    for (const CacheInfo& info : *infos) CacheInfoToProto(info, response->add_caches());
    return absl::OkStatus();
  });
}

grpc::Status CacheServiceImpl::SetCachePolicy(grpc::ServerContext* context,
                                              const v1::SetCachePolicyRequest* request,
                                              v1::SetCachePolicyResponse*) {
  return gate_->Unary(context, kSetPolicy, *request, [&](DB& db) -> absl::Status {
    if (absl::Status s = RequireCache(request->cache()); !s.ok()) return s;
    if (!request->has_policy()) return absl::InvalidArgumentError("policy: required");
    absl::StatusOr<CachePolicy> policy = CachePolicyFromProto(request->policy(), "policy");
    if (!policy.ok()) return policy.status();
    return db.SetCachePolicy(request->cache(), request->category(), *policy);
  });
}

grpc::Status CacheServiceImpl::GetCachePolicy(grpc::ServerContext* context,
                                              const v1::GetCachePolicyRequest* request,
                                              v1::GetCachePolicyResponse* response) {
  return gate_->Unary(context, kGetPolicy, *request, [&](DB& db) -> absl::Status {
    if (absl::Status s = RequireCache(request->cache()); !s.ok()) return s;
    absl::StatusOr<CachePolicy> policy = db.GetCachePolicy(request->cache(), request->category());
    if (!policy.ok()) return policy.status();
    CachePolicyToProto(*policy, response->mutable_policy());
    return absl::OkStatus();
  });
}

grpc::Status CacheServiceImpl::Lookup(grpc::ServerContext* context,
                                      const v1::CacheLookupRequest* request,
                                      v1::CacheLookupResponse* response) {
  return gate_->Unary(
      context, kLookup, *request, [&](DB& db, const Principal& caller) -> absl::Status {
        if (absl::Status s = RequireCache(request->cache()); !s.ok()) return s;
        CacheLookupRequest lookup = CacheLookupFromProto(*request);
        SHOAL_RETURN_IF_ERROR(PinPartition(*gate_, caller, "partition.tenant", &lookup.partition));
        absl::StatusOr<CacheLookupResult> r = db.CacheLookup(request->cache(), lookup);
        if (!r.ok()) return r.status();
        CacheLookupResultToProto(*r, response);
        return absl::OkStatus();
      });
}

grpc::Status CacheServiceImpl::Store(grpc::ServerContext* context,
                                     const v1::CacheStoreRequest* request,
                                     v1::CacheStoreResponse* response) {
  return gate_->Unary(
      context, kStore, *request, [&](DB& db, const Principal& caller) -> absl::Status {
        const std::string& cache = request->lookup().cache();
        if (absl::Status s = RequireCache(cache, "lookup.cache"); !s.ok()) return s;
        CacheStoreRequest store{.lookup = CacheLookupFromProto(request->lookup()),
                                .response = request->response()};
        SHOAL_RETURN_IF_ERROR(
            PinPartition(*gate_, caller, "lookup.partition.tenant", &store.lookup.partition));
        return gate_->TimedWrite(request->sync(), [&]() -> absl::Status {
          absl::StatusOr<uint64_t> id = db.CacheStore(cache, store, {.sync = request->sync()});
          if (!id.ok()) return id.status();
          response->set_entry_id(*id);
          return absl::OkStatus();
        });
      });
}

grpc::Status CacheServiceImpl::Invalidate(grpc::ServerContext* context,
                                          const v1::CacheInvalidateRequest* request,
                                          v1::CacheInvalidateResponse* response) {
  return gate_->Unary(context, kInvalidate, *request, [&](DB& db) -> absl::Status {
    if (absl::Status s = RequireCache(request->cache()); !s.ok()) return s;
    absl::StatusOr<uint64_t> n =
        db.CacheInvalidate(request->cache(), CacheInvalidationFromProto(*request));
    if (!n.ok()) return n.status();
    response->set_count(*n);
    return absl::OkStatus();
  });
}

grpc::Status CacheServiceImpl::Feedback(grpc::ServerContext* context,
                                        const v1::CacheFeedbackRequest* request,
                                        v1::CacheFeedbackResponse*) {
  return gate_->Unary(context, kFeedback, *request, [&](DB& db) -> absl::Status {
    if (absl::Status s = RequireCache(request->cache()); !s.ok()) return s;
    if (!v1::CacheVerdict_IsValid(request->verdict())) {
      return absl::InvalidArgumentError("verdict: unknown value");
    }
    CacheFeedbackReport report{.entry_id = request->entry_id(),
                               .verdict = static_cast<CacheVerdict>(request->verdict()),
                               .similarity = request->has_similarity()
                                                 ? request->similarity()
                                                 : std::numeric_limits<double>::quiet_NaN()};
    return db.CacheFeedback(request->cache(), report);
  });
}

grpc::Status CacheServiceImpl::GetCacheStats(grpc::ServerContext* context,
                                             const v1::GetCacheStatsRequest* request,
                                             v1::GetCacheStatsResponse* response) {
  return gate_->Unary(context, kStats, *request, [&](DB& db) -> absl::Status {
    if (absl::Status s = RequireCache(request->cache()); !s.ok()) return s;
    absl::StatusOr<CacheStats> stats = db.GetCacheStats(request->cache());
    if (!stats.ok()) return stats.status();
    CacheStatsToProto(*stats, response);
    return absl::OkStatus();
  });
}

grpc::Status CacheServiceImpl::ReportModelLoad(grpc::ServerContext* context,
                                               const v1::ReportModelLoadRequest* request,
                                               v1::ReportModelLoadResponse*) {
  return gate_->Unary(context, kLoad, *request, [&](DB& db) -> absl::Status {
    return db.ReportModelLoad(request->model(), request->load());
  });
}

}  // namespace shoal::rpc

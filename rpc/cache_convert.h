// Conversions between the semantic-cache wire messages (shoal/v1/cache_service.proto) and the
// embedded API's value types (shoal/cache.h). Shared by the server (rpc/cache_service.cc) and
// the C++ client SDK. *FromProto checks the shape only (enums known) and names the field;
// value rules are the DB's. Stateless and thread-safe.
#ifndef SHOAL_RPC_CACHE_CONVERT_H_
#define SHOAL_RPC_CACHE_CONVERT_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/cache.h"
#include "shoal/v1/cache_service.pb.h"

namespace shoal::rpc {

// METRIC_UNSPECIFIED means cosine here.
absl::StatusOr<CacheSpec> CacheSpecFromProto(const v1::CacheSpec& proto, absl::string_view field);
void CacheSpecToProto(const CacheSpec& spec, v1::CacheSpec* proto);
void CacheInfoToProto(const CacheInfo& info, v1::CacheInfo* proto);
CacheInfo CacheInfoFromProto(const v1::CacheInfo& proto);

absl::StatusOr<CachePolicy> CachePolicyFromProto(const v1::CachePolicy& proto,
                                                 absl::string_view field);
void CachePolicyToProto(const CachePolicy& policy, v1::CachePolicy* proto);

CachePartition CachePartitionFromProto(const v1::CachePartition& proto);
void CachePartitionToProto(const CachePartition& partition, v1::CachePartition* proto);

// `cache` is not part of the embedded request (the DB takes it apart).
CacheLookupRequest CacheLookupFromProto(const v1::CacheLookupRequest& proto);
void CacheLookupToProto(const CacheLookupRequest& request, v1::CacheLookupRequest* proto);
void CacheLookupResultToProto(const CacheLookupResult& result, v1::CacheLookupResponse* proto);
CacheLookupResult CacheLookupResultFromProto(const v1::CacheLookupResponse& proto);

CacheInvalidation CacheInvalidationFromProto(const v1::CacheInvalidateRequest& proto);
void CacheInvalidationToProto(const CacheInvalidation& which, v1::CacheInvalidateRequest* proto);

void CacheStatsToProto(const CacheStats& stats, v1::GetCacheStatsResponse* proto);
CacheStats CacheStatsFromProto(const v1::GetCacheStatsResponse& proto);

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_CACHE_CONVERT_H_

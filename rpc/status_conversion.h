// The one place where Shoal's absl::Status becomes a grpc::Status.
//
//   absl::Status s = db->CreateCollection(spec);
//   return ToGrpcStatus(s);  // ALREADY_EXISTS stays ALREADY_EXISTS, message kept
//
// Handlers must not build grpc::Status from absl codes anywhere else: one mapping keeps the
// codes clients see consistent. Stateless; thread-safe.
#ifndef SHOAL_RPC_STATUS_CONVERSION_H_
#define SHOAL_RPC_STATUS_CONVERSION_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace shoal::rpc {

// Maps each canonical absl code to the gRPC code of the same name and keeps the message
// verbatim up to kMaxErrorMessageBytes (a longer one — e.g. echoing a 10,000-character value a
// client sent — is cut at a UTF-8 boundary and says how much was cut, so that it never runs
// into gRPC's metadata limit). An OK status maps to grpc::Status::OK (its message, if any, is
// dropped). Codes outside the canonical set become UNKNOWN.
inline constexpr size_t kMaxErrorMessageBytes = 1024;
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_STATUS_CONVERSION_H_

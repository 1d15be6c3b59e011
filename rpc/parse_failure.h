// A server interceptor that answers a request whose bytes do not parse as its message type
// (malformed protobuf, or a filter nested deeper than protobuf's 100-level limit) with
// INVALID_ARGUMENT naming the method and the filter depth limit (kMaxFilterDepth; a filter
// between that and protobuf's limit parses, and the conversion names its path), as any other bad
// input is answered. gRPC itself answers INTERNAL with no text: it parses before any handler (or
// CallGate) runs.
//
//   builder.experimental().SetInterceptorCreators(ParseFailureInterceptors());
//
// Only a call whose received message failed to parse is touched, and only an INTERNAL status.
// Thread safety: one interceptor per call, as gRPC makes them.
#ifndef SHOAL_RPC_PARSE_FAILURE_H_
#define SHOAL_RPC_PARSE_FAILURE_H_

#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <vector>

namespace shoal::rpc {

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
ParseFailureInterceptors();

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_PARSE_FAILURE_H_

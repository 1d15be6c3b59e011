#include "rpc/parse_failure.h"

#include "absl/strings/str_cat.h"
#include "shoal/filter.h"

namespace shoal::rpc {
namespace {

using grpc::experimental::InterceptionHookPoints;

class ParseFailureInterceptor : public grpc::experimental::Interceptor {
 public:
  // `method` is gRPC's registered method name, which outlives every call: not copied, so the
  // interceptor costs each call one small allocation and nothing else.
  explicit ParseFailureInterceptor(const char* method) : method_(method ? method : "") {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    // gRPC hands the interceptor a null message when the bytes did not parse.
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() == nullptr) {
      parse_failed_ = true;
    }
    if (parse_failed_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS) &&
        methods->GetSendStatus().error_code() == grpc::StatusCode::INTERNAL) {
      methods->ModifySendStatus(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("request: the bytes sent to ", method_,
                       " are not a valid request message (malformed protobuf, or nested deeper "
                       "than protobuf's 100 levels; a filter may nest at most ",
                       kMaxFilterDepth, " levels)")));
    }
    methods->Proceed();
  }

 private:
  const char* const method_;
  bool parse_failed_ = false;
};

class ParseFailureFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new ParseFailureInterceptor(info->method());
  }
};

}  // namespace

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
ParseFailureInterceptors() {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> out;
  out.push_back(std::make_unique<ParseFailureFactory>());
  return out;
}

}  // namespace shoal::rpc

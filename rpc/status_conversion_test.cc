#include "rpc/status_conversion.h"

#include <gtest/gtest.h>

namespace shoal::rpc {
namespace {

TEST(StatusConversionTest, OkMapsToOk) { EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok()); }

TEST(StatusConversionTest, KeepsCanonicalCodeAndMessage) {
  const struct {
    absl::Status in;
    grpc::StatusCode out;
  } cases[] = {
      {absl::InvalidArgumentError("records[3].vector: bad"), grpc::INVALID_ARGUMENT},
      {absl::NotFoundError("m"), grpc::NOT_FOUND},
      {absl::AlreadyExistsError("m"), grpc::ALREADY_EXISTS},
      {absl::ResourceExhaustedError("m"), grpc::RESOURCE_EXHAUSTED},
      {absl::FailedPreconditionError("m"), grpc::FAILED_PRECONDITION},
      {absl::UnavailableError("m"), grpc::UNAVAILABLE},
      {absl::DataLossError("m"), grpc::DATA_LOSS},
      {absl::InternalError("m"), grpc::INTERNAL},
      {absl::PermissionDeniedError("m"), grpc::PERMISSION_DENIED},
      {absl::UnauthenticatedError("m"), grpc::UNAUTHENTICATED},
      {absl::DeadlineExceededError("m"), grpc::DEADLINE_EXCEEDED},
      {absl::CancelledError("m"), grpc::CANCELLED},
      {absl::AbortedError("m"), grpc::ABORTED},
      {absl::OutOfRangeError("m"), grpc::OUT_OF_RANGE},
      {absl::UnimplementedError("m"), grpc::UNIMPLEMENTED},
      {absl::UnknownError("m"), grpc::UNKNOWN},
  };
  for (const auto& c : cases) {
    grpc::Status s = ToGrpcStatus(c.in);
    EXPECT_EQ(s.error_code(), c.out) << c.in;
    EXPECT_EQ(s.error_message(), c.in.message());
  }
}

TEST(StatusConversionTest, NonCanonicalCodeBecomesUnknown) {
  absl::Status odd(static_cast<absl::StatusCode>(99), "odd");
  EXPECT_EQ(ToGrpcStatus(odd).error_code(), grpc::UNKNOWN);
  EXPECT_EQ(ToGrpcStatus(odd).error_message(), "odd");
}

}  // namespace
}  // namespace shoal::rpc

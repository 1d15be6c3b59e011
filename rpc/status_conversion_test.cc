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

TEST(StatusConversionTest, LongMessagesAreCutAtACharacterBoundary) {
  // A client's 10,000-character value echoed back, ending in multi-byte characters.
  std::string echoed = "spec: 'x" + std::string(10000, 'a');
  for (int i = 0; i < 600; ++i) echoed += "\xc3\xa9";  // é
  grpc::Status s = ToGrpcStatus(absl::InvalidArgumentError(echoed));
  EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_LE(s.error_message().size(), kMaxErrorMessageBytes);
  EXPECT_EQ(s.error_message().rfind("spec: 'xaaa", 0), 0u);
  EXPECT_NE(s.error_message().find(" more bytes cut)"), std::string::npos);

  std::string accents = "name: ";
  for (int i = 0; i < 2000; ++i) accents += "\xc3\xa9";
  const std::string cut = ToGrpcStatus(absl::InvalidArgumentError(accents)).error_message();
  const std::string kept = cut.substr(0, cut.find("... ("));
  EXPECT_EQ((kept.size() - 6) % 2, 0u) << "cut inside a two-byte character";

  const std::string exact(kMaxErrorMessageBytes, 'm');
  EXPECT_EQ(ToGrpcStatus(absl::InternalError(exact)).error_message(), exact);
}

}  // namespace
}  // namespace shoal::rpc

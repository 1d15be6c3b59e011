#include "rpc/call_gate.h"

#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "rpc/status_conversion.h"

namespace shoal::rpc {
namespace {

// The value of metadata `name`, or "" (gRPC lower-cases metadata keys).
absl::string_view Metadata(const grpc::ServerContext& context, const char* name) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(name);
  if (it == metadata.end()) return "";
  return absl::string_view(it->second.data(), it->second.size());
}

}  // namespace

absl::StatusOr<Principal> CallGate::Admit(grpc::ServerContext* context, const RpcMethod& method) {
  return AdmitPresented(Metadata(*context, "authorization"), Metadata(*context, "x-api-key"),
                        method);
}

absl::StatusOr<Principal> CallGate::AdmitPresented(absl::string_view authorization,
                                                   absl::string_view x_api_key,
                                                   const RpcMethod& method) {
  Principal principal{.name = "anonymous", .role = Role::kAdmin};
  if (keys_ != nullptr) {
    absl::StatusOr<Principal> found = keys_->Authenticate(PresentedKey(authorization, x_api_key));
    if (!found.ok()) {
      metrics_->RecordRejection("unauthenticated");
      return found.status();
    }
    principal = *std::move(found);
  }
  if (principal.role < method.role) {
    metrics_->RecordRejection("permission_denied");
    return absl::PermissionDeniedError(absl::StrCat("key \"", principal.name, "\" is ",
                                                    RoleName(principal.role), "; ", method.name,
                                                    " needs a ", RoleName(method.role), " key"));
  }
  if (absl::Status s = CheckTenantAccess(principal, method.tenant_access, method.name); !s.ok()) {
    metrics_->RecordRejection("tenant_denied");
    return s;
  }
  if (absl::Status s = limiter_->Admit(principal.name, absl::Now()); !s.ok()) {
    metrics_->RecordRejection("rate_limited");
    return s;
  }
  return principal;
}

absl::Status CallGate::AdmitMessage(const Principal& caller) {
  absl::Status s = limiter_->Admit(caller.name, absl::Now());
  if (!s.ok()) metrics_->RecordRejection("rate_limited");
  return s;
}

absl::StatusOr<std::string> CallGate::ScopeTenant(const Principal& caller,
                                                  absl::string_view requested,
                                                  absl::string_view field) {
  absl::StatusOr<std::string> tenant = rpc::ScopeTenant(caller, requested, field);
  if (!tenant.ok()) metrics_->RecordRejection("tenant_denied");
  return tenant;
}

absl::StatusOr<std::string> CallGate::TargetTenant(const Principal& caller,
                                                   absl::string_view requested,
                                                   absl::string_view field) {
  absl::StatusOr<std::string> tenant = rpc::TargetTenant(caller, requested, field);
  if (!tenant.ok()) metrics_->RecordRejection("tenant_denied");
  return tenant;
}

absl::Status CallGate::CheckMessage(grpc::ServerContext* context,
                                    const google::protobuf::Message& message,
                                    const std::string& what) {
  if (absl::Status s = CheckDeadline(context); !s.ok()) return s;
  return CheckSize(message.ByteSizeLong(), what);
}

absl::Status CallGate::CheckSize(size_t bytes, const std::string& what) {
  if (bytes > max_message_bytes_) {
    metrics_->RecordRejection("message_too_large");
    return absl::ResourceExhaustedError(absl::StrCat(what, ": ", bytes,
                                                     " bytes is over --max-message-bytes ",
                                                     max_message_bytes_, "; send smaller batches"));
  }
  return absl::OkStatus();
}

absl::Status CallGate::CheckDeadline(grpc::ServerContext* context) {
  if (context->IsCancelled()) return absl::CancelledError("the client cancelled the call");
  if (context->deadline() < std::chrono::system_clock::now()) {
    metrics_->RecordRejection("deadline_exceeded");
    return absl::DeadlineExceededError("the call's deadline passed before it was served");
  }
  return absl::OkStatus();
}

grpc::Status CallGate::Finish(const RpcMethod& method, absl::Time start,
                              const absl::Status& status) {
  grpc::Status out = ToGrpcStatus(status);
  metrics_->RecordRpc(method.name, GrpcCodeName(out.error_code()),
                      absl::ToDoubleSeconds(absl::Now() - start));
  return out;
}

}  // namespace shoal::rpc

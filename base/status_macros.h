// Status propagation macros (Abseil 20220623 ships none).
//
//   absl::StatusOr<int> Parse(std::string_view s);
//   absl::Status Use(std::string_view s) {
//     SHOAL_ASSIGN_OR_RETURN(int n, Parse(s));
//     SHOAL_RETURN_IF_ERROR(Check(n));
//     return absl::OkStatus();
//   }
#ifndef SHOAL_BASE_STATUS_MACROS_H_
#define SHOAL_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SHOAL_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::absl::Status shoal_status_ = (expr);         \
    if (!shoal_status_.ok()) return shoal_status_; \
  } while (false)

#define SHOAL_STATUS_CONCAT_INNER_(a, b) a##b
#define SHOAL_STATUS_CONCAT_(a, b) SHOAL_STATUS_CONCAT_INNER_(a, b)

#define SHOAL_ASSIGN_OR_RETURN(lhs, expr) \
  SHOAL_ASSIGN_OR_RETURN_IMPL_(SHOAL_STATUS_CONCAT_(shoal_statusor_, __LINE__), lhs, expr)

#define SHOAL_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr)  \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // SHOAL_BASE_STATUS_MACROS_H_

// How the embedded Python binding (module shoal_embedded._core) reports an absl::Status to
// Python: the one place a Status becomes a Python exception.
//
//   absl::StatusOr<T> result = ...;
//   T value = shoal::python::ValueOrRaise(std::move(result));
//
// RaiseIfError throws pybind11::error_already_set carrying an instance of the class that
// shoal_embedded._errors.error_for_status(code, name, message) picks (shoal_embedded.Error or
// a subclass such as NotFoundError), with `code` (the absl canonical code's name, e.g.
// "INVALID_ARGUMENT") and `message` (the status message, naming the offending field).
//
// Shoal's own code does not throw; this binding throws only because pybind11 turns a thrown
// error_already_set into the Python exception it carries. Call with the GIL held.
#ifndef SHOAL_EMBEDDED_PYTHON_STATUS_ERROR_H_
#define SHOAL_EMBEDDED_PYTHON_STATUS_ERROR_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shoal::python {

// Raises the Python exception for `status`; returns normally when it is OK.
void RaiseIfError(const absl::Status& status);

template <typename T>
T ValueOrRaise(absl::StatusOr<T> result) {
  RaiseIfError(result.status());
  return *std::move(result);
}

}  // namespace shoal::python

#endif  // SHOAL_EMBEDDED_PYTHON_STATUS_ERROR_H_

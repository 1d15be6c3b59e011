#include "embedded_python/status_error.h"

#include <pybind11/pybind11.h>

#include <string>

#include "absl/status/status.h"

namespace shoal::python {

namespace py = pybind11;

void RaiseIfError(const absl::Status& status) {
  if (status.ok()) return;
  // The exception classes live in Python (shoal_embedded/_errors.py) so that they can inherit
  // from the builtin ones (ValueError, LookupError, ...) and carry attributes.
  py::object errors = py::module_::import("shoal_embedded._errors");
  py::object error = errors.attr("error_for_status")(static_cast<int>(status.code()),
                                                     absl::StatusCodeToString(status.code()),
                                                     std::string(status.message()));
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
  throw py::error_already_set();
}

}  // namespace shoal::python

#include "embedded_python/conversions.h"

#include <pybind11/stl.h>

#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "embedded_python/status_error.h"

namespace shoal::python {
namespace {

[[noreturn]] void RaiseInvalid(std::string message) {
  RaiseIfError(absl::InvalidArgumentError(std::move(message)));
  throw std::logic_error("unreachable");  // RaiseIfError raises for a non-OK status
}

std::string TypeName(py::handle value) {
  return py::str(py::type::handle_of(value).attr("__name__"));
}

Key KeyFromObject(py::handle item, const std::string& where) {
  if (py::isinstance<py::str>(item)) return Key(item.cast<std::string>());
  // An int, or anything that indexes like one (numpy integer scalars); a bool is not a key.
  if (py::isinstance<py::bool_>(item) || !PyIndex_Check(item.ptr())) {
    RaiseInvalid(absl::StrCat(where, ": expected int or str, got ", TypeName(item)));
  }
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(item.ptr()));
  if (!index) throw py::error_already_set();
  const unsigned long long value = PyLong_AsUnsignedLongLong(index.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    RaiseInvalid(
        absl::StrCat(where, ": integer ", std::string(py::str(index)), " is not in [0, 2^64)"));
  }
  return Key(static_cast<uint64_t>(value));
}

std::vector<Key> KeysFromIntegerArray(const py::array& array, const char* what) {
  if (array.ndim() != 1) {
    RaiseInvalid(absl::StrCat(what, ": expected a 1-D array, got ", array.ndim(), " dimensions"));
  }
  std::vector<Key> keys;
  keys.reserve(static_cast<size_t>(array.shape(0)));
  if (array.dtype().kind() == 'u') {
    auto values = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>::ensure(array);
    for (uint64_t v : std::span(values.data(), values.size())) keys.emplace_back(v);
    return keys;
  }
  auto values = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(array);
  for (size_t i = 0; i < static_cast<size_t>(values.size()); ++i) {
    if (values.data()[i] < 0) {
      RaiseInvalid(absl::StrCat(what, "[", i, "]: negative integer ", values.data()[i]));
    }
    keys.emplace_back(static_cast<uint64_t>(values.data()[i]));
  }
  return keys;
}

// Checks that an optional per-record argument is None or a sequence of exactly n items.
bool PerRecord(py::handle values, size_t n, const char* what) {
  if (values.is_none()) return false;
  if (!py::isinstance<py::sequence>(values) || py::isinstance<py::str>(values)) {
    RaiseInvalid(
        absl::StrCat(what, ": expected a sequence of ", n, " items, got ", TypeName(values)));
  }
  if (py::len(values) != n) {
    RaiseInvalid(absl::StrCat(what, ": ", py::len(values), " items for ", n, " keys"));
  }
  return true;
}

}  // namespace

std::vector<Key> KeysFromPython(py::handle keys, const char* what) {
  if (py::isinstance<py::array>(keys)) {
    py::array array = py::reinterpret_borrow<py::array>(keys);
    const char kind = array.dtype().kind();
    if (kind == 'i' || kind == 'u') return KeysFromIntegerArray(array, what);
  }
  if (!py::isinstance<py::sequence>(keys) || py::isinstance<py::str>(keys)) {
    RaiseInvalid(absl::StrCat(what, ": expected a sequence of int or str, got ", TypeName(keys)));
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(keys);
  std::vector<Key> out;
  out.reserve(seq.size());
  for (size_t i = 0; i < seq.size(); ++i) {
    out.push_back(KeyFromObject(seq[i], absl::StrCat(what, "[", i, "]")));
  }
  return out;
}

std::vector<Record> RecordsFromPython(std::vector<Key> keys, const FloatArray& vectors,
                                      py::handle attributes, py::handle tags) {
  if (vectors.ndim() != 2) {
    RaiseInvalid(absl::StrCat("vectors: expected a 2-D array (n, dimension), got ", vectors.ndim(),
                              " dimensions"));
  }
  const size_t n = static_cast<size_t>(vectors.shape(0));
  const size_t d = static_cast<size_t>(vectors.shape(1));
  if (n != keys.size()) {
    RaiseInvalid(absl::StrCat("vectors: ", n, " rows for ", keys.size(), " keys"));
  }
  const bool has_attributes = PerRecord(attributes, n, "attributes");
  const bool has_tags = PerRecord(tags, n, "tags");
  std::vector<Record> records(n);
  const float* data = vectors.data();
  for (size_t i = 0; i < n; ++i) {
    Record& r = records[i];
    r.key = std::move(keys[i]);
    r.vector.assign(data + i * d, data + (i + 1) * d);
    if (has_attributes && !attributes[py::int_(i)].is_none()) {
      py::handle item = attributes[py::int_(i)];
      if (!py::isinstance<py::dict>(item)) {
        RaiseInvalid(absl::StrCat("attributes[", i, "]: expected a dict, got ", TypeName(item)));
      }
      for (auto [name, value] : py::reinterpret_borrow<py::dict>(item)) {
        const std::string key = py::str(name);
        r.attributes[key] =
            AttributeFromPython(value, absl::StrCat("attributes[", i, "][", key, "]"));
      }
    }
    if (has_tags && !tags[py::int_(i)].is_none()) {
      py::handle item = tags[py::int_(i)];
      try {
        r.tags = item.cast<std::vector<std::string>>();
      } catch (const py::cast_error&) {
        RaiseInvalid(absl::StrCat("tags[", i, "]: expected a list of str, got ", TypeName(item)));
      }
    }
  }
  return records;
}

AttributeValue AttributeFromPython(py::handle value, const std::string& where) {
  if (py::isinstance<py::bool_>(value)) return AttributeValue(value.cast<bool>());
  if (py::isinstance<py::str>(value)) return AttributeValue(value.cast<std::string>());
  if (py::isinstance<py::float_>(value)) return AttributeValue(value.cast<double>());
  if (PyIndex_Check(value.ptr())) {
    py::int_ as_int = py::reinterpret_steal<py::int_>(PyNumber_Index(value.ptr()));
    const long long v = PyLong_AsLongLong(as_int.ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      RaiseInvalid(absl::StrCat(where, ": integer does not fit in int64"));
    }
    return AttributeValue(static_cast<int64_t>(v));
  }
  if (py::hasattr(value, "__float__")) {  // numpy floating scalars
    return AttributeValue(value.cast<double>());
  }
  RaiseInvalid(absl::StrCat(where, ": expected bool, int, float or str, got ", TypeName(value)));
}

py::object KeyToPython(const Key& key) {
  if (const uint64_t* id = std::get_if<uint64_t>(&key)) return py::int_(*id);
  return py::str(std::get<std::string>(key));
}

py::dict AttributesToPython(const std::map<std::string, AttributeValue>& attributes) {
  py::dict out;
  for (const auto& [name, value] : attributes) {
    out[py::str(name)] = std::visit([](const auto& v) { return py::cast(v); }, value);
  }
  return out;
}

py::tuple HitsToPython(const std::vector<std::vector<Hit>>& hits, size_t k, bool squeeze) {
  bool numeric = true;
  size_t width = squeeze ? 0 : k;
  for (const std::vector<Hit>& row : hits) {
    for (const Hit& hit : row) numeric = numeric && std::holds_alternative<uint64_t>(hit.key);
    if (squeeze) width = row.size();
  }
  const std::vector<py::ssize_t> shape =
      squeeze ? std::vector<py::ssize_t>{static_cast<py::ssize_t>(width)}
              : std::vector<py::ssize_t>{static_cast<py::ssize_t>(hits.size()),
                                         static_cast<py::ssize_t>(width)};
  py::array_t<float> distances(shape);
  std::fill_n(distances.mutable_data(), distances.size(), std::numeric_limits<float>::infinity());
  py::array keys =
      numeric ? py::array(py::array_t<uint64_t>(shape)) : py::array(py::dtype("O"), shape);
  if (numeric) std::memset(keys.mutable_data(), 0, keys.nbytes());
  for (size_t q = 0; q < hits.size(); ++q) {
    for (size_t j = 0; j < hits[q].size() && j < width; ++j) {
      const size_t at = q * width + j;
      distances.mutable_data()[at] = hits[q][j].distance;
      if (numeric) {
        static_cast<uint64_t*>(keys.mutable_data())[at] = std::get<uint64_t>(hits[q][j].key);
      } else {
        // An object array's cells start as None; each holds a new reference to its key.
        PyObject** cell = static_cast<PyObject**>(keys.mutable_data()) + at;
        Py_XDECREF(*cell);
        *cell = KeyToPython(hits[q][j].key).release().ptr();
      }
    }
  }
  return py::make_tuple(keys, distances);
}

}  // namespace shoal::python

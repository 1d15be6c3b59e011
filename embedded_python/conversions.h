// Conversions between Python / numpy values and the types of Shoal's public API
// (include/shoal/types.h), for the embedded binding shoal_embedded._core.
//
// Every function needs the GIL. Bad input raises shoal_embedded.InvalidArgumentError naming the
// argument and the element, e.g. "keys[3]: negative integer -1" (status_error.h).
//
// Keys: an int in [0, 2^64) is a uint64 key, a str a string key (shoal::Key). A numpy integer
// array converts without a Python object per element.
// Attributes: bool, int (int64), float and str values (shoal::AttributeValue); bool is checked
// before int, since Python's bool is an int.
#ifndef SHOAL_EMBEDDED_PYTHON_CONVERSIONS_H_
#define SHOAL_EMBEDDED_PYTHON_CONVERSIONS_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "shoal/types.h"

namespace shoal::python {

namespace py = pybind11;

// A C-contiguous float32 view of a numpy array or nested sequence: no copy when the argument
// already is one (pybind11 copies and casts anything else).
using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

// `keys`: a 1-D numpy integer array, or a sequence of int / str. `what` names the argument.
std::vector<Key> KeysFromPython(py::handle keys, const char* what);

// One record per row of `vectors` (n x d); `attributes` (n dicts or None) and `tags` (n lists of
// str or None) are optional. The vectors are copied (shoal::Record owns its floats).
std::vector<Record> RecordsFromPython(std::vector<Key> keys, const FloatArray& vectors,
                                      py::handle attributes, py::handle tags);

// One attribute value; `where` names it in the error.
AttributeValue AttributeFromPython(py::handle value, const std::string& where);

py::object KeyToPython(const Key& key);
py::dict AttributesToPython(const std::map<std::string, AttributeValue>& attributes);

// Search results as numpy: keys (uint64 when every key is one, else object) and float32
// distances, each of shape (hits.size(), k) (or (k_found,) for one query when `squeeze`).
// Rows with fewer than k hits are padded with distance +inf and key 0 (uint64) or None.
py::tuple HitsToPython(const std::vector<std::vector<Hit>>& hits, size_t k, bool squeeze);

}  // namespace shoal::python

#endif  // SHOAL_EMBEDDED_PYTHON_CONVERSIONS_H_

// shoal_embedded._core: the pybind11 module. Every public name gets its docstring here; the
// Python package (shoal_embedded/__init__.py) re-exports them, and shoal_embedded/_core.pyi
// holds their type hints.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>
#include <optional>
#include <string>

#include "embedded_python/database.h"
#include "shoal/db.h"
#include "shoal/filter.h"

namespace shoal::python {
namespace {

Options MakeOptions(bool create_if_missing, bool error_if_exists, uint32_t search_threads,
                    uint32_t build_threads, uint32_t index_update_threads, size_t max_batch_records,
                    size_t block_cache_bytes, size_t posting_cache_bytes,
                    size_t index_ram_bytes_limit) {
  Options options;
  options.create_if_missing = create_if_missing;
  options.error_if_exists = error_if_exists;
  options.search_threads = search_threads;
  options.build_threads = build_threads;
  options.index_update_threads = index_update_threads;
  options.max_batch_records = max_batch_records;
  options.block_cache_bytes = block_cache_bytes;
  options.posting_cache_bytes = posting_cache_bytes;
  options.index_ram_bytes_limit = index_ram_bytes_limit;
  return options;
}

void BindCollectionInfo(py::module_& m) {
  py::class_<CollectionInfo>(m, "CollectionInfo",
                             "What DB.describe_collection reports about one collection.")
      .def_property_readonly(
          "name", [](const CollectionInfo& c) { return c.spec.name; }, "The collection's name.")
      .def_property_readonly(
          "dimension", [](const CollectionInfo& c) { return c.spec.dimension; },
          "Floats per vector.")
      .def_property_readonly(
          "metric", [](const CollectionInfo& c) { return std::string(MetricName(c.spec.metric)); },
          "'l2' (squared Euclidean), 'ip' (negative inner product) or 'cosine' (1 - cos).")
      .def_readonly("num_vectors", &CollectionInfo::num_vectors, "Live records.")
      .def_readonly("index", &CollectionInfo::index,
                    "The index serving searches: 'flat' or the spec it was built from.")
      .def_readonly("index_ram_bytes", &CollectionInfo::index_ram_bytes,
                    "RAM held by the index (vectors or centroids, navigator, caches).")
      .def_readonly("tenant_ram_bytes", &CollectionInfo::tenant_ram_bytes,
                    "Of index_ram_bytes, what the tenants hold (access table, sub-trees).")
      .def_readonly("unindexed_vectors", &CollectionInfo::unindexed_vectors,
                    "Records not yet in the SSD index's posting lists (searched exactly).")
      .def_readonly("aliases", &CollectionInfo::aliases, "Aliases resolving to it, sorted.")
      .def_readonly("damage", &CollectionInfo::damage,
                    "Empty when it serves; otherwise why it is quarantined.")
      .def("__repr__", [](const CollectionInfo& c) {
        return "CollectionInfo(name='" + c.spec.name +
               "', dimension=" + std::to_string(c.spec.dimension) + ", metric='" +
               MetricName(c.spec.metric) + "', num_vectors=" + std::to_string(c.num_vectors) +
               ", index='" + c.index + "')";
      });
}

void BindRecord(py::module_& m) {
  py::class_<PyRecord>(m, "Record", "A record read back by Database.get.")
      .def_readonly("key", &PyRecord::key, "The key: int (uint64) or str.")
      .def_readonly("vector", &PyRecord::vector, "The vector, a float32 numpy array (a copy).")
      .def_readonly("attributes", &PyRecord::attributes,
                    "Attributes by name: bool, int, float or str values.")
      .def_readonly("tags", &PyRecord::tags, "String tags.")
      .def("__repr__", [](const PyRecord& r) {
        return "Record(key=" + std::string(py::repr(r.key)) +
               ", dimension=" + std::to_string(r.vector.size()) + ")";
      });
}

SearchKnobs Knobs(uint32_t k, uint32_t max_postings, float pruning_ratio, const Filter* filter) {
  return SearchKnobs{
      .k = k, .max_postings = max_postings, .pruning_ratio = pruning_ratio, .filter = filter};
}

// Filters are built by shoal_embedded.filters (eq, range, has_tag, all_of, any_of, not_), which
// calls these; the tree is checked by Search (InvalidArgument naming the node).
void BindFilter(py::module_& m) {
  py::class_<Filter>(m, "Filter",
                     "A search filter over attributes and tags; build it with "
                     "shoal_embedded.filters (eq, range, has_tag, all_of, any_of, not_).");
  m.def(
      "_filter_eq",
      [](const std::string& name, py::handle value) {
        return Eq(name, AttributeFromPython(value, "value"));
      },
      py::arg("name"), py::arg("value"));
  m.def(
      "_filter_range",
      [](const std::string& name, std::optional<double> lo, std::optional<double> hi) {
        constexpr double kInf = std::numeric_limits<double>::infinity();
        return Range(name, lo.value_or(-kInf), hi.value_or(kInf));
      },
      py::arg("name"), py::arg("lo") = py::none(), py::arg("hi") = py::none());
  m.def("_filter_has_tag", &HasTag, py::arg("tag"));
  m.def("_filter_all_of", &And, py::arg("operands"));
  m.def("_filter_any_of", &Or, py::arg("operands"));
  m.def("_filter_not", &Not, py::arg("operand"));
}

void BindDatabase(py::module_& m) {
  const Options defaults;
  py::class_<Database>(m, "Database", R"doc(
A Shoal database directory opened in this process (the embedded library; no server).

Database(path, *, create_if_missing=True, error_if_exists=False, search_threads=0,
         build_threads=0, index_update_threads=1, max_batch_records=100000,
         block_cache_bytes=256 MiB, posting_cache_bytes=auto, index_ram_bytes_limit=0)

Only one Database (in any process) may have a directory open at a time: a second open raises
UnavailableError. Use it as a context manager, or call close(). Every method may be called
from several threads; long C++ calls release the GIL. Errors raise shoal_embedded.Error
subclasses carrying `code` (absl canonical code name) and `message`.)doc")
      .def(py::init([](const std::string& path, bool create_if_missing, bool error_if_exists,
                       uint32_t search_threads, uint32_t build_threads,
                       uint32_t index_update_threads, size_t max_batch_records,
                       size_t block_cache_bytes, size_t posting_cache_bytes,
                       size_t index_ram_bytes_limit) {
             return std::make_unique<Database>(
                 path, MakeOptions(create_if_missing, error_if_exists, search_threads,
                                   build_threads, index_update_threads, max_batch_records,
                                   block_cache_bytes, posting_cache_bytes, index_ram_bytes_limit));
           }),
           py::arg("path"), py::kw_only(), py::arg("create_if_missing") = true,
           py::arg("error_if_exists") = false, py::arg("search_threads") = 0,
           py::arg("build_threads") = 0, py::arg("index_update_threads") = 1,
           py::arg("max_batch_records") = defaults.max_batch_records,
           py::arg("block_cache_bytes") = defaults.block_cache_bytes,
           py::arg("posting_cache_bytes") = defaults.posting_cache_bytes,
           py::arg("index_ram_bytes_limit") = 0,
           "Opens (or creates) the database in directory `path`.")
      .def_property_readonly("path", &Database::path, "The directory.")
      .def_property_readonly("closed", &Database::closed, "True after close().")
      .def("close", &Database::Close,
           "Closes the directory (a call in flight on another thread finishes first). "
           "Idempotent; later calls raise FailedPreconditionError.")
      .def("__enter__", [](py::object self) { return self; })
      .def(
          "__exit__", [](Database& db, py::args) { db.Close(); }, "Closes the database.")
      .def("create_collection", &Database::CreateCollection, py::arg("name"), py::arg("dimension"),
           py::arg("metric") = "l2",
           "Creates a collection of `dimension`-float vectors; metric 'l2', 'ip' or 'cosine' "
           "(also 'euclidean', 'inner_product', 'angular'). AlreadyExistsError if taken.")
      .def("drop_collection", &Database::DropCollection, py::arg("name"),
           "Removes the collection and every record in it.")
      .def("list_collections", &Database::ListCollections,
           "Every collection as a CollectionInfo, by name.")
      .def("describe_collection", &Database::DescribeCollection, py::arg("name"),
           "One collection (or alias) as a CollectionInfo; NotFoundError if unknown.")
      .def("upsert", &Database::Upsert, py::arg("collection"), py::arg("keys"), py::arg("vectors"),
           py::kw_only(), py::arg("attributes") = py::none(), py::arg("tags") = py::none(),
           py::arg("sync") = false,
           "Inserts or replaces len(keys) records, all or nothing. keys: a 1-D integer array "
           "or a sequence of int (uint64) / str; vectors: (n, dimension) float32 (other "
           "dtypes are converted); attributes: n dicts (or None) of bool/int/float/str; tags: "
           "n lists of str (or None). sync=True fsyncs before returning. Returns n.")
      .def("build_index", &Database::BuildIndex, py::arg("collection"), py::arg("spec") = "spann",
           "Builds the approximate index from a spec string, e.g. "
           "'spann:centroid_ratio=0.02,replicas=4' ('flat' returns to exact search). Blocks "
           "until it serves; the GIL is released meanwhile.")
      .def("flush_index_updates", &Database::FlushIndexUpdates, py::arg("collection"),
           "Blocks until every acknowledged write is in the SSD index's posting lists and every "
           "tombstone is swept (a strict flush).")
      .def("drain_index_updates", &Database::DrainIndexUpdates, py::arg("collection"),
           "Blocks until every acknowledged write is in the SSD index's posting lists; "
           "tombstones are collected lazily, as in the background.")
      .def(
          "search",
          [](Database& db, const std::string& c, const FloatArray& q, uint32_t k,
             uint32_t max_postings, float pruning_ratio, const Filter* filter) {
            return db.Search(c, q, Knobs(k, max_postings, pruning_ratio, filter));
          },
          py::arg("collection"), py::arg("query"), py::arg("k") = 10, py::kw_only(),
          py::arg("max_postings") = 0, py::arg("pruning_ratio") = 0.0f,
          py::arg("filter") = py::none(),
          "One query of shape (dimension,) -> (keys, distances), closest first, at most k "
          "each. keys: uint64 array (object array when string keys are among them); distances: "
          "float32, smaller is closer. max_postings / pruning_ratio tune an SSD index (0 = "
          "its default); filter (shoal_embedded.filters) limits the records searched.")
      .def(
          "search_batch",
          [](Database& db, const std::string& c, const FloatArray& q, uint32_t k,
             uint32_t max_postings, float pruning_ratio, const Filter* filter) {
            return db.SearchBatch(c, q, Knobs(k, max_postings, pruning_ratio, filter));
          },
          py::arg("collection"), py::arg("queries"), py::arg("k") = 10, py::kw_only(),
          py::arg("max_postings") = 0, py::arg("pruning_ratio") = 0.0f,
          py::arg("filter") = py::none(),
          "Queries of shape (n, dimension) -> (keys, distances), each (n, k); a row with fewer "
          "than k hits is padded with distance inf and key 0 (None for object keys). The "
          "queries are read in place when they are C-contiguous float32.")
      .def("get", &Database::Get, py::arg("collection"), py::arg("keys"),
           "One entry per key: a Record, or None where the key does not exist.")
      .def("delete", &Database::Delete, py::arg("collection"), py::arg("keys"), py::kw_only(),
           py::arg("sync") = false,
           "Deletes the keys that exist (all or nothing); returns how many did.");
}

}  // namespace
}  // namespace shoal::python

PYBIND11_MODULE(_core, m) {
  m.doc() = "Shoal's embedded library (include/shoal/db.h) for Python; import shoal_embedded.";
  shoal::python::BindCollectionInfo(m);
  shoal::python::BindRecord(m);
  shoal::python::BindFilter(m);
  shoal::python::BindDatabase(m);
}

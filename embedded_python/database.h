// shoal_embedded.Database: Shoal's embedded library (include/shoal/db.h) as a Python object,
// no server. Bound to Python by module.cc, which also holds the Python-facing docstrings.
//
//   db = shoal_embedded.Database("/tmp/shoal", search_threads=1)
//   db.create_collection("docs", 128, "cosine")
//   db.upsert("docs", numpy.arange(n, dtype=numpy.uint64), vectors)   # (n, 128) float32
//   db.build_index("docs", "spann:centroid_ratio=0.02,replicas=4")
//   keys, distances = db.search_batch("docs", queries, k=10)           # (m, 10) each
//   db.close()
//
// Ownership: a Database owns its shoal::DB; close() (or the end of a `with` block, or garbage
// collection) closes the directory. A call in flight on another thread keeps the DB alive
// until it returns; calls after close() raise FailedPreconditionError.
//
// Threads: every method may be called from any number of Python threads. Calls that do work
// in C++ (open, writes, builds, searches, reads, close) release the GIL for that work; the
// numpy arrays passed in must not be resized or written while such a call runs.
//
// Errors: every failure raises shoal_embedded.Error (a subclass per absl canonical code, see
// shoal_embedded/_errors.py) carrying the code's name and the message, which names the field.
#ifndef SHOAL_EMBEDDED_PYTHON_DATABASE_H_
#define SHOAL_EMBEDDED_PYTHON_DATABASE_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "embedded_python/conversions.h"
#include "shoal/db.h"
#include "shoal/filter.h"

namespace shoal::python {

namespace py = pybind11;

// A record read back by Database::Get.
struct PyRecord {
  py::object key;
  py::array_t<float> vector;
  py::dict attributes;
  py::list tags;
};

// Per-search parameters (SearchParams). max_postings / pruning_ratio tune an SSD index (0 = the
// index's default; "flat" ignores them); filter (not owned; nullptr = every record) limits the
// records scored (shoal/filter.h).
struct SearchKnobs {
  uint32_t k = 10;
  uint32_t max_postings = 0;
  float pruning_ratio = 0;
  const Filter* filter = nullptr;
};

class Database {
 public:
  // Opens (or creates) the database in `path`; raises on failure (e.g. UnavailableError when
  // another process holds the directory).
  Database(const std::string& path, const Options& options);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void Close();
  bool closed() const;
  const std::string& path() const { return path_; }

  void CreateCollection(const std::string& name, uint32_t dimension, const std::string& metric);
  void DropCollection(const std::string& name);
  std::vector<CollectionInfo> ListCollections();
  CollectionInfo DescribeCollection(const std::string& name);

  // keys: see KeysFromPython; vectors (n, d). Returns n.
  size_t Upsert(const std::string& collection, py::handle keys, const FloatArray& vectors,
                py::handle attributes, py::handle tags, bool sync);
  void BuildIndex(const std::string& collection, const std::string& spec);
  void FlushIndexUpdates(const std::string& collection);
  void DrainIndexUpdates(const std::string& collection);

  // One query (d,) -> (keys (h,), distances (h,)) with h <= k hits found.
  py::tuple Search(const std::string& collection, const FloatArray& query,
                   const SearchKnobs& knobs);
  // Queries (n, d) -> (keys (n, k), distances (n, k)); short rows padded (see HitsToPython).
  py::tuple SearchBatch(const std::string& collection, const FloatArray& queries,
                        const SearchKnobs& knobs);

  // One entry per key, None where the key does not exist.
  std::vector<std::optional<PyRecord>> Get(const std::string& collection, py::handle keys);
  // Deletes the keys that exist; returns how many did.
  uint64_t Delete(const std::string& collection, py::handle keys, bool sync);

 private:
  // The open DB, or raises FailedPreconditionError after Close.
  std::shared_ptr<DB> Handle() const;
  // Runs fn(DB&) with the GIL released; the DB handle is dropped before the GIL is taken back,
  // so that the last reference closing the DB never holds the GIL.
  template <typename Fn>
  auto WithoutGil(Fn&& fn) {
    std::shared_ptr<DB> db = Handle();
    py::gil_scoped_release release;
    auto result = fn(*db);
    db.reset();
    return result;
  }

  py::tuple SearchRows(const std::string& collection, const float* data, size_t rows,
                       size_t dimension, const SearchKnobs& knobs, bool squeeze);

  const std::string path_;
  mutable absl::Mutex mu_;
  std::shared_ptr<DB> db_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::python

#endif  // SHOAL_EMBEDDED_PYTHON_DATABASE_H_

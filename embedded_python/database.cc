#include "embedded_python/database.h"

#include <pybind11/stl.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "embedded_python/status_error.h"

namespace shoal::python {

Database::Database(const std::string& path, const Options& options) : path_(path) {
  absl::StatusOr<std::unique_ptr<DB>> opened;
  {
    py::gil_scoped_release release;
    opened = DB::Open(path, options);
  }
  std::unique_ptr<DB> db = ValueOrRaise(std::move(opened));
  absl::MutexLock lock(&mu_);
  db_ = std::move(db);
}

Database::~Database() {
  // Python's garbage collector may drop the last reference with the GIL held; closing waits for
  // background maintenance threads, which never take the GIL, so this cannot deadlock.
  absl::MutexLock lock(&mu_);
  db_.reset();
}

void Database::Close() {
  std::shared_ptr<DB> db;
  {
    absl::MutexLock lock(&mu_);
    db = std::move(db_);
  }
  py::gil_scoped_release release;
  db.reset();  // closes now unless a call on another thread still holds it
}

bool Database::closed() const {
  absl::MutexLock lock(&mu_);
  return db_ == nullptr;
}

std::shared_ptr<DB> Database::Handle() const {
  absl::MutexLock lock(&mu_);
  if (db_ == nullptr) {
    RaiseIfError(absl::FailedPreconditionError(absl::StrCat("database '", path_, "' is closed")));
  }
  return db_;
}

void Database::CreateCollection(const std::string& name, uint32_t dimension,
                                const std::string& metric) {
  std::optional<Metric> parsed = ParseMetric(metric);
  if (!parsed.has_value()) {
    RaiseIfError(absl::InvalidArgumentError(
        absl::StrCat("metric: '", metric,
                     "' is not one of l2, ip, cosine (euclidean, inner_product, angular)")));
  }
  CollectionSpec spec{.name = name, .dimension = dimension, .metric = *parsed};
  RaiseIfError(WithoutGil([&](DB& db) { return db.CreateCollection(spec); }));
}

void Database::DropCollection(const std::string& name) {
  RaiseIfError(WithoutGil([&](DB& db) { return db.DropCollection(name); }));
}

std::vector<CollectionInfo> Database::ListCollections() {
  return ValueOrRaise(WithoutGil([](DB& db) { return db.ListCollections(); }));
}

CollectionInfo Database::DescribeCollection(const std::string& name) {
  return ValueOrRaise(WithoutGil([&](DB& db) { return db.DescribeCollection(name); }));
}

size_t Database::Upsert(const std::string& collection, py::handle keys, const FloatArray& vectors,
                        py::handle attributes, py::handle tags, bool sync) {
  std::vector<Record> records =
      RecordsFromPython(KeysFromPython(keys, "keys"), vectors, attributes, tags);
  RaiseIfError(WithoutGil(
      [&](DB& db) { return db.Upsert(collection, records, WriteOptions{.sync = sync}); }));
  return records.size();
}

void Database::BuildIndex(const std::string& collection, const std::string& spec) {
  RaiseIfError(WithoutGil([&](DB& db) { return db.BuildIndex(collection, spec); }));
}

void Database::FlushIndexUpdates(const std::string& collection) {
  RaiseIfError(WithoutGil([&](DB& db) { return db.FlushIndexUpdates(collection); }));
}

void Database::DrainIndexUpdates(const std::string& collection) {
  RaiseIfError(WithoutGil([&](DB& db) { return db.DrainIndexUpdates(collection); }));
}

py::tuple Database::Search(const std::string& collection, const FloatArray& query,
                           const SearchKnobs& knobs) {
  if (query.ndim() != 1) {
    RaiseIfError(absl::InvalidArgumentError(
        absl::StrCat("query: expected a 1-D array (dimension,), got ", query.ndim(),
                     " dimensions (search_batch takes (n, dimension))")));
  }
  return SearchRows(collection, query.data(), 1, static_cast<size_t>(query.shape(0)), knobs,
                    /*squeeze=*/true);
}

py::tuple Database::SearchBatch(const std::string& collection, const FloatArray& queries,
                                const SearchKnobs& knobs) {
  if (queries.ndim() != 2) {
    RaiseIfError(absl::InvalidArgumentError(absl::StrCat(
        "queries: expected a 2-D array (n, dimension), got ", queries.ndim(), " dimensions")));
  }
  return SearchRows(collection, queries.data(), static_cast<size_t>(queries.shape(0)),
                    static_cast<size_t>(queries.shape(1)), knobs, /*squeeze=*/false);
}

py::tuple Database::SearchRows(const std::string& collection, const float* data, size_t rows,
                               size_t dimension, const SearchKnobs& knobs, bool squeeze) {
  SearchParams params;
  params.k = knobs.k;
  params.max_postings = knobs.max_postings;
  params.pruning_ratio = knobs.pruning_ratio;
  params.filter = knobs.filter;
  // The query floats are read in place (no copy): the caller's array outlives this call.
  std::span<const float> queries(data, rows * dimension);
  std::vector<std::vector<Hit>> hits =
      ValueOrRaise(WithoutGil([&](DB& db) { return db.Search(collection, queries, params); }));
  return HitsToPython(hits, knobs.k, squeeze);
}

std::vector<std::optional<PyRecord>> Database::Get(const std::string& collection, py::handle keys) {
  std::vector<Key> wanted = KeysFromPython(keys, "keys");
  std::vector<std::optional<Record>> found =
      ValueOrRaise(WithoutGil([&](DB& db) { return db.Get(collection, wanted); }));
  std::vector<std::optional<PyRecord>> out;
  out.reserve(found.size());
  for (std::optional<Record>& record : found) {
    if (!record.has_value()) {
      out.emplace_back();
      continue;
    }
    PyRecord r{.key = KeyToPython(record->key),
               .vector = py::array_t<float>(static_cast<py::ssize_t>(record->vector.size()),
                                            record->vector.data()),
               .attributes = AttributesToPython(record->attributes),
               .tags = py::cast(record->tags)};
    out.push_back(std::move(r));
  }
  return out;
}

uint64_t Database::Delete(const std::string& collection, py::handle keys, bool sync) {
  std::vector<Key> doomed = KeysFromPython(keys, "keys");
  return ValueOrRaise(WithoutGil(
      [&](DB& db) { return db.Delete(collection, doomed, WriteOptions{.sync = sync}); }));
}

}  // namespace shoal::python

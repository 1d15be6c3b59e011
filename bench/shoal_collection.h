// Shoal as the bench sees it: a DB opened in a fresh temporary directory through the public
// embedded API (include/shoal/db.h) holding one collection "bench". Keys are row numbers, so
// results compare with FAISS's labels directly.
//
//   SHOAL_ASSIGN_OR_RETURN(auto shoal, ShoalCollection::Create(options, 784, Metric::kL2));
//   SHOAL_RETURN_IF_ERROR(shoal->Load(base, /*batch=*/10000));
//   SHOAL_RETURN_IF_ERROR(shoal->Search(queries.Row(0), nq, 10, &neighbors, 0));
//
// The temporary directory (and everything in it) is removed on destruction; a directory the
// caller named (`keep_dir`) is kept, and an existing collection there is reused.
// Thread safety: as shoal::DB (Search may run concurrently).
#ifndef SHOAL_BENCH_SHOAL_COLLECTION_H_
#define SHOAL_BENCH_SHOAL_COLLECTION_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "bench/recall.h"
#include "shoal/dataset.h"
#include "shoal/db.h"

namespace shoal::bench {

class ShoalCollection {
 public:
  static constexpr char kName[] = "bench";

  // Makes a directory under $TMPDIR (or /tmp) -- or uses `keep_dir` when set --, opens a DB
  // there and creates the collection (an existing one in keep_dir must have the same
  // dimension and metric: else InvalidArgument).
  static absl::StatusOr<std::unique_ptr<ShoalCollection>> Create(const Options& options,
                                                                 uint32_t dim, Metric metric,
                                                                 const std::string& keep_dir = "");
  ~ShoalCollection();

  // Upserts rows [0, base.rows) as keys 0..rows-1 in batches of `batch` records.
  absl::Status Load(const Matrix& base, size_t batch);
  // Writes queries [0, n) into rows [first, first + n) of `out` (out->k >= k).
  // `params.k` is replaced by k.
  absl::Status Search(const float* queries, size_t n, size_t k, Neighbors* out, size_t first,
                      SearchParams params = {});

  DB& db() { return *db_; }
  const std::string& dir() const { return dir_; }

 private:
  ShoalCollection(std::string dir, bool remove_dir, std::unique_ptr<DB> db, uint32_t dim)
      : dir_(std::move(dir)), remove_dir_(remove_dir), db_(std::move(db)), dim_(dim) {}

  std::string dir_;
  bool remove_dir_;
  std::unique_ptr<DB> db_;
  uint32_t dim_;
};

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_SHOAL_COLLECTION_H_

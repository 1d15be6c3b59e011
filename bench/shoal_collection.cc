#include "bench/shoal_collection.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <span>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace shoal::bench {

absl::StatusOr<std::unique_ptr<ShoalCollection>> ShoalCollection::Create(
    const Options& options, uint32_t dim, Metric metric, const std::string& keep_dir) {
  std::string dir = keep_dir;
  if (dir.empty()) {
    const char* tmp = getenv("TMPDIR");
    dir = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/shoal_bench_XXXXXX");
    if (mkdtemp(dir.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("mkdtemp ", dir, ": ", std::strerror(errno)));
    }
  }
  const bool remove_dir = keep_dir.empty();
  absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(dir + "/db", options);
  if (!db.ok()) {
    std::error_code ignored;
    if (remove_dir) std::filesystem::remove_all(dir, ignored);
    return db.status();
  }
  std::unique_ptr<ShoalCollection> c(new ShoalCollection(dir, remove_dir, std::move(*db), dim));
  absl::Status created =
      c->db_->CreateCollection({.name = kName, .dimension = dim, .metric = metric});
  if (absl::IsAlreadyExists(created) && !remove_dir) {
    SHOAL_ASSIGN_OR_RETURN(CollectionInfo info, c->db_->DescribeCollection(kName));
    if (info.spec.dimension != dim || info.spec.metric != metric) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir, ": collection '", kName, "' has another dimension or metric"));
    }
    return c;
  }
  SHOAL_RETURN_IF_ERROR(created);
  return c;
}

ShoalCollection::~ShoalCollection() {
  db_.reset();  // close before removing the files
  if (!remove_dir_) return;
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

absl::Status ShoalCollection::Load(const Matrix& base, size_t batch) {
  batch = std::max<size_t>(batch, 1);
  std::vector<Record> records;
  for (size_t first = 0; first < base.rows; first += batch) {
    const size_t n = std::min(batch, base.rows - first);
    records.resize(n);
    for (size_t i = 0; i < n; ++i) {
      records[i].key = uint64_t{first + i};
      records[i].vector.assign(base.Row(first + i), base.Row(first + i) + base.cols);
    }
    SHOAL_RETURN_IF_ERROR(db_->Upsert(kName, records, {.sync = false}));
  }
  return absl::OkStatus();
}

absl::Status ShoalCollection::Search(const float* queries, size_t n, size_t k, Neighbors* out,
                                     size_t first, SearchParams params) {
  if (out->k < k || first + n > out->nq) {
    return absl::InvalidArgumentError("ShoalCollection::Search: output too small");
  }
  params.k = static_cast<uint32_t>(k);
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::vector<Hit>> hits,
                         db_->Search(kName, std::span<const float>(queries, n * dim_), params));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < k; ++j) {
      const bool found = j < hits[i].size();
      const uint64_t* key = found ? std::get_if<uint64_t>(&hits[i][j].key) : nullptr;
      out->Ids(first + i)[j] = key != nullptr ? static_cast<int64_t>(*key) : -1;
      out->Distances(first + i)[j] = found ? hits[i][j].distance : 0;
    }
  }
  return absl::OkStatus();
}

}  // namespace shoal::bench

#include "bench/ground_truth.h"

#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench/faiss_index.h"

namespace shoal::bench {
namespace {

constexpr char kMagic[8] = {'S', 'H', 'G', 'T', 'v', '1', '\0', '\0'};

struct CacheHeader {
  char magic[8];
  uint64_t nq, k, base_rows, dim;
};

std::string CachePath(const std::string& dir, const std::string& spec, size_t nq, size_t k) {
  std::string name;
  for (char c : spec) name.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return absl::StrCat(dir, "/", name, "-q", nq, "-k", k, ".gt");
}

bool ReadCache(const std::string& path, const AnnDataset& ds, size_t nq, size_t k, Neighbors* out) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  CacheHeader h;
  *out = Neighbors(nq, k);
  const bool ok = std::fread(&h, sizeof(h), 1, f) == 1 &&
                  std::memcmp(h.magic, kMagic, sizeof(kMagic)) == 0 && h.nq == nq && h.k == k &&
                  h.base_rows == ds.train.rows && h.dim == ds.train.cols &&
                  std::fread(out->ids.data(), sizeof(int64_t), nq * k, f) == nq * k &&
                  std::fread(out->distances.data(), sizeof(float), nq * k, f) == nq * k;
  std::fclose(f);
  return ok;
}

absl::Status WriteCache(const std::string& path, const AnnDataset& ds, const Neighbors& gt) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return absl::InternalError(absl::StrCat(tmp, ": ", std::strerror(errno)));
  CacheHeader h{
      .magic = {}, .nq = gt.nq, .k = gt.k, .base_rows = ds.train.rows, .dim = ds.train.cols};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  bool ok = std::fwrite(&h, sizeof(h), 1, f) == 1 &&
            std::fwrite(gt.ids.data(), sizeof(int64_t), gt.ids.size(), f) == gt.ids.size() &&
            std::fwrite(gt.distances.data(), sizeof(float), gt.distances.size(), f) ==
                gt.distances.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat(path, ": write failed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// Exhaustive search for k + margin candidates (FAISS's float32 GEMM can misorder near-ties),
// then the k closest by double-precision TrueDistance.
absl::StatusOr<Neighbors> Compute(const AnnDataset& ds, size_t nq, Metric metric, size_t k) {
  const size_t wide = std::min(k + 10, ds.train.rows);
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<FaissIndex> flat,
                         FaissIndex::Create("Flat", ds.train.cols, metric));
  SHOAL_RETURN_IF_ERROR(flat->Add(ds.train.data.data(), ds.train.rows));
  Neighbors candidates(nq, wide);
  SHOAL_RETURN_IF_ERROR(flat->Search(ds.test.data.data(), nq, wide, &candidates, 0));
  SetTrueDistances(ds.train, ds.test, metric, &candidates);
  Neighbors out(nq, k);
  std::vector<size_t> order(wide);
  for (size_t q = 0; q < nq; ++q) {
    std::iota(order.begin(), order.end(), 0);
    const int64_t* ids = candidates.Ids(q);
    const float* dist = candidates.Distances(q);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if ((ids[a] < 0) != (ids[b] < 0)) return ids[b] < 0;
      return dist[a] < dist[b];
    });
    for (size_t j = 0; j < k && j < wide; ++j) {
      out.Ids(q)[j] = ids[order[j]];
      out.Distances(q)[j] = dist[order[j]];
    }
  }
  return out;
}

}  // namespace

std::string DefaultCacheDir() {
  const char* xdg = getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg) return absl::StrCat(xdg, "/shoal_bench");
  const char* home = getenv("HOME");
  if (home != nullptr && *home) return absl::StrCat(home, "/.cache/shoal_bench");
  return "/tmp/shoal_bench_cache";
}

absl::StatusOr<GroundTruth> LoadGroundTruth(const AnnDataset& ds, const std::string& spec,
                                            size_t nq, Metric metric, size_t k,
                                            const std::string& cache_dir) {
  if (nq > ds.test.rows) return absl::InvalidArgumentError("ground truth: too many queries");
  GroundTruth gt;
  if (ds.neighbors.rows >= nq && ds.neighbors.cols >= k) {
    gt.neighbors = Neighbors(nq, k);
    for (size_t q = 0; q < nq; ++q) {
      std::copy_n(ds.neighbors.Row(q), k, gt.neighbors.Ids(q));
    }
    SetTrueDistances(ds.train, ds.test, metric, &gt.neighbors);
    gt.source = "dataset file";
    const bool file_distances = ds.distances.rows >= nq && ds.distances.cols >= k;
    for (size_t q = 0; q < nq; ++q) {
      // ann-benchmarks' threshold is the file's k-th distance.
      gt.kth_distance.push_back(file_distances ? ds.distances.Row(q)[k - 1]
                                               : gt.neighbors.Distances(q)[k - 1]);
    }
    return gt;
  }
  // ds.name carries the generator's parameters, so a changed generator never reuses stale truth.
  const std::string path = CachePath(cache_dir, absl::StrCat(ds.name, "-", spec), nq, k);
  if (ReadCache(path, ds, nq, k, &gt.neighbors)) {
    gt.source = absl::StrCat("cache ", path);
  } else {
    SHOAL_ASSIGN_OR_RETURN(gt.neighbors, Compute(ds, nq, metric, k));
    absl::Status saved = WriteCache(path, ds, gt.neighbors);
    if (!saved.ok())
      std::fprintf(stderr, "warning: ground truth not cached: %s\n", saved.ToString().c_str());
    gt.source = absl::StrCat("computed (exact FAISS Flat)", saved.ok() ? ", saved to " : "",
                             saved.ok() ? path : "");
  }
  for (size_t q = 0; q < nq; ++q) gt.kth_distance.push_back(gt.neighbors.Distances(q)[k - 1]);
  return gt;
}

}  // namespace shoal::bench

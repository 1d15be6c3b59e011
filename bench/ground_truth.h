// Exact k nearest neighbours of a bench's queries, with the distances ann-benchmarks judges
// recall by (TrueDistance: Euclidean for L2), from the dataset file when it has them, else
// computed once by exhaustive search and cached on disk.
//
//   SHOAL_ASSIGN_OR_RETURN(GroundTruth gt,
//                          LoadGroundTruth(ds, "fashion-mnist", 1000, Metric::kL2, 10, cache));
//   double r = AnnBenchmarksRecall(found, gt.kth_distance, 10);
//
// Thread safety: LoadGroundTruth uses FAISS's thread pool; call it from one thread.
#ifndef SHOAL_BENCH_GROUND_TRUTH_H_
#define SHOAL_BENCH_GROUND_TRUTH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/recall.h"
#include "shoal/dataset.h"
#include "shoal/types.h"

namespace shoal::bench {

struct GroundTruth {
  Neighbors neighbors;               // nq x k, closest first, TrueDistance distances
  std::vector<double> kth_distance;  // per query: the true k-th distance
  std::string source;                // "dataset file", "cache FILE", "computed (saved to FILE)"
};

// Ground truth of the first nq test queries of `ds`. Uses ds.neighbors/ds.distances when
// they cover nq x k; else reads `cache_dir`/<spec>-q<nq>-k<k>.gt when it exists and matches
// the dataset's shape; else runs exact search (FAISS IndexFlat, k + 10 candidates re-ranked
// by TrueDistance in double precision) and writes that file (a failed write only warns).
absl::StatusOr<GroundTruth> LoadGroundTruth(const AnnDataset& ds, const std::string& spec,
                                            size_t nq, Metric metric, size_t k,
                                            const std::string& cache_dir);

// $XDG_CACHE_HOME/shoal_bench, else $HOME/.cache/shoal_bench, else /tmp/shoal_bench_cache.
std::string DefaultCacheDir();

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_GROUND_TRUTH_H_

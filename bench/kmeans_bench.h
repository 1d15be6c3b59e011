// `shoal_bench kmeans`: k-means iterations (assignment + centroid update) over seeded Gaussian
// mixtures, in one run: our CPU backend (fused AVX-512 AssignTopM), our CUDA backend (device-
// resident and streamed from pinned memory), the cuBLAS SGEMM rate of the assignment's shape,
// FAISS's CPU faiss::Clustering on the same points and threads, and the end-to-end SSD index
// build (BuildSpann) with the GPU and the CPU backend. Prints seconds per iteration, achieved
// TFLOP/s (2 N K D per assignment) and the ratios; GPU rows print "n/a (no device)" without one.
//
//   shoal_bench kmeans                                  # N=1M, D=128, K=1024, 2 iterations
//   shoal_bench kmeans --n 1000000 8000000 --d 128 768 --k 1024 16384 --iterations 5
//   shoal_bench kmeans --n 2000000 --build-n 2000000 --build-dataset fashion-mnist
#ifndef SHOAL_BENCH_KMEANS_BENCH_H_
#define SHOAL_BENCH_KMEANS_BENCH_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace CLI {
class App;
}  // namespace CLI

namespace shoal::bench {

struct KMeansBenchOptions {
  std::vector<size_t> n = {1000000};  // every (n, d, k) combination runs
  std::vector<size_t> d = {128};
  std::vector<size_t> k = {1024};
  int iterations = 2;
  int threads = 2;            // CPU threads for ours and FAISS
  bool faiss = true;          // run faiss::Clustering
  bool cpu = true;            // run our CPU backend
  size_t build_n = 200000;    // points of the index-build comparison (0 = skip)
  std::string build_dataset;  // also the index build on this LoadDataset spec (empty = skip)
  size_t gpu_budget_mb = 0;   // > 0: also a streamed GPU run under this device budget
  size_t top_m = 0;           // > 0: also time the device's AssignTopM(m) over n / 50 points
  uint64_t seed = 1;
};

absl::Status RunKMeansBench(const KMeansBenchOptions& options);

// Adds the `kmeans` subcommand; when it runs, its exit status goes to *exit_code.
void RegisterKMeansCommand(CLI::App& app, int* exit_code);

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_KMEANS_BENCH_H_

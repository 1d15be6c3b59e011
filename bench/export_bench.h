// `shoal_bench export`: writes a dataset as the files other engines read, so that a peer run
// outside this process (bench/peers/sptag_spann.sh: SPTAG's SPANN) sees exactly the vectors,
// queries and ground truth that `shoal_bench ann` uses for the same spec:
//   OUT/base.fbin   the train set (float32, big-ann layout; SPTAG VectorType=DEFAULT)
//   OUT/query.fbin  the first --queries test queries
//   OUT/truth.ibin  their exact --k nearest ids, closest first (SPTAG TruthType=DEFAULT),
//                   from the same ground-truth cache `ann` reads and fills
//
//   shoal_bench export --dataset synthetic:n=2000000,d=128,seed=1 --queries 1000 --out /data/s2m
#ifndef SHOAL_BENCH_EXPORT_BENCH_H_
#define SHOAL_BENCH_EXPORT_BENCH_H_

#include <string>

#include "absl/status/status.h"

namespace CLI {
class App;
}  // namespace CLI

namespace shoal::bench {

struct ExportOptions {
  std::string dataset;        // any shoal::LoadDataset spec
  size_t queries = 1000;      // first N test queries; 0 = all
  size_t warmup_queries = 0;  // W test queries after the first N -> warmup.fbin (as `ann`'s)
  size_t k = 10;              // ground-truth width (10 shares `ann`'s cache)
  std::string out;            // directory, created if missing
  std::string cache_dir;      // ground-truth cache (default DefaultCacheDir())
};

// InvalidArgument for an empty --dataset/--out, k == 0 or a set without test queries; the
// loaders' and writers' errors otherwise.
absl::Status RunExport(const ExportOptions& options);

// Adds the `export` subcommand; when it runs, its exit status goes to *exit_code.
void RegisterExportCommand(CLI::App& app, int* exit_code);

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_EXPORT_BENCH_H_

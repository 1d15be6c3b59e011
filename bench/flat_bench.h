// `shoal_bench flat`: exact-search throughput of Shoal (through the public DB API) and FAISS
// IndexFlat on the same queries, threads and k, in one run; prints QPS, time per query, the
// ratio shoal/faiss, and recall@k of Shoal against FAISS (and both against the dataset's
// ground truth when it has one).
#ifndef SHOAL_BENCH_FLAT_BENCH_H_
#define SHOAL_BENCH_FLAT_BENCH_H_

#include <string>

#include "absl/status/status.h"

namespace CLI {
class App;
}  // namespace CLI

namespace shoal::bench {

struct FlatBenchOptions {
  std::string dataset = "fashion-mnist";  // any shoal::LoadDataset spec
  size_t queries = 1000;                  // capped by the dataset's test set
  int threads = 1;
  size_t k = 10;
  size_t batch = 100;         // queries per Search call
  size_t load_batch = 10000;  // records per Upsert
  std::string csv;            // append result rows here when set
};

absl::Status RunFlatBench(const FlatBenchOptions& options);

// Adds the `flat` subcommand; when it runs, its exit status goes to *exit_code.
void RegisterFlatCommand(CLI::App& app, int* exit_code);

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_FLAT_BENCH_H_

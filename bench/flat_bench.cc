#include "bench/flat_bench.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench/blas_env.h"
#include "bench/faiss_index.h"
#include "bench/recall.h"
#include "bench/report.h"
#include "bench/shoal_collection.h"
#include "shoal/dataset.h"

namespace shoal::bench {
namespace {

// One system's build and timed search over the same queries.
struct SystemRun {
  std::string system;
  double build_seconds = 0;
  BatchTiming timing;
  Neighbors results;
  std::optional<double> index_ram_bytes;
};

using SearchFn = std::function<absl::Status(const float*, size_t, size_t, Neighbors*, size_t)>;

// Warms up on the first batch (untimed), then times the whole query set.
absl::Status TimeSearch(const FlatBenchOptions& o, const Matrix& queries, size_t nq,
                        const SearchFn& search, SystemRun* run) {
  run->results = Neighbors(nq, o.k);
  SHOAL_RETURN_IF_ERROR(search(queries.Row(0), std::min(o.batch, nq), o.k, &run->results, 0));
  SHOAL_ASSIGN_OR_RETURN(run->timing, TimeBatches(nq, o.batch, [&](size_t first, size_t n) {
                           return search(queries.Row(first), n, o.k, &run->results, first);
                         }));
  return absl::OkStatus();
}

absl::StatusOr<SystemRun> RunFaiss(const FlatBenchOptions& o, const AnnDataset& ds, Metric metric,
                                   size_t nq) {
  SystemRun run;
  run.system = "faiss-flat";
  FaissIndex::SetThreads(o.threads);
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<FaissIndex> index,
                         FaissIndex::Create("Flat", ds.train.cols, metric));
  const double t0 = NowSeconds();
  SHOAL_RETURN_IF_ERROR(index->Add(ds.train.data.data(), ds.train.rows));
  run.build_seconds = NowSeconds() - t0;
  run.index_ram_bytes = static_cast<double>(index->CodeBytes());
  SHOAL_RETURN_IF_ERROR(TimeSearch(
      o, ds.test, nq,
      [&](const float* q, size_t n, size_t k, Neighbors* out, size_t first) {
        return index->Search(q, n, k, out, first);
      },
      &run));
  return run;
}

absl::StatusOr<SystemRun> RunShoal(const FlatBenchOptions& o, const AnnDataset& ds, Metric metric,
                                   size_t nq) {
  SystemRun run;
  run.system = "shoal-flat";
  Options options;
  options.search_threads = static_cast<uint32_t>(o.threads);
  SHOAL_ASSIGN_OR_RETURN(
      std::unique_ptr<ShoalCollection> shoal,
      ShoalCollection::Create(options, static_cast<uint32_t>(ds.train.cols), metric));
  const double t0 = NowSeconds();
  SHOAL_RETURN_IF_ERROR(shoal->Load(ds.train, o.load_batch));
  run.build_seconds = NowSeconds() - t0;
  SHOAL_RETURN_IF_ERROR(TimeSearch(
      o, ds.test, nq,
      [&](const float* q, size_t n, size_t k, Neighbors* out, size_t first) {
        return shoal->Search(q, n, k, out, first);
      },
      &run));
  return run;
}

void PrintRun(const SystemRun& run, const std::string& label) {
  std::printf(
      "%-26s build %7.2f s | %9.1f QPS | %8.1f us/query | Search call p50 %.0f us, "
      "p99 %.0f us\n",
      label.c_str(), run.build_seconds, run.timing.Qps(), run.timing.MeanUsPerQuery(),
      run.timing.CallPercentileUs(50), run.timing.CallPercentileUs(99));
}

absl::Status Report(const FlatBenchOptions& o, const AnnDataset& ds, const SystemRun& faiss,
                    const SystemRun& shoal) {
  PrintRun(faiss, "faiss IndexFlat");
  PrintRun(shoal, "shoal flat (DB API)");
  const double recall = RecallAtK(shoal.results, faiss.results, o.k);
  const double recall_ties = RecallAtK(shoal.results, faiss.results, o.k, 1e-4);
  std::printf("recall@%zu shoal vs faiss: %.4f by id, %.4f counting distance ties\n", o.k, recall,
              recall_ties);
  std::optional<double> faiss_truth, shoal_truth;
  if (ds.neighbors.rows > 0) {
    Neighbors truth = FromIntMatrix(ds.neighbors);
    faiss_truth = RecallAtK(faiss.results, truth, o.k);
    shoal_truth = RecallAtK(shoal.results, truth, o.k);
    std::printf("recall@%zu vs dataset ground truth: faiss %.4f, shoal %.4f\n", o.k, *faiss_truth,
                *shoal_truth);
  }
  std::printf("ratio shoal/faiss QPS: %.3f\n", shoal.timing.Qps() / faiss.timing.Qps());
  if (o.csv.empty()) return absl::OkStatus();
  CsvWriter csv;
  SHOAL_RETURN_IF_ERROR(csv.Open(o.csv));
  const std::string params = absl::StrCat("dataset=", ds.name, ";k=", o.k, ";batch=", o.batch,
                                          ";queries=", faiss.timing.queries);
  for (const SystemRun* run : {&faiss, &shoal}) {
    std::optional<double> r = run == &shoal ? std::optional<double>(recall) : faiss_truth;
    if (run == &shoal && shoal_truth) r = shoal_truth;
    SHOAL_RETURN_IF_ERROR(csv.Write({.system = run->system,
                                     .params = params,
                                     .threads = o.threads,
                                     .recall_at_10 = r,
                                     .qps = run->timing.Qps(),
                                     .p50_us = run->timing.CallPercentileUs(50),
                                     .p99_us = run->timing.CallPercentileUs(99),
                                     .index_ram_bytes = run->index_ram_bytes,
                                     .build_seconds = run->build_seconds,
                                     .bytes_read_per_query = std::nullopt}));
  }
  std::printf("appended 2 rows to %s\n", o.csv.c_str());
  return absl::OkStatus();
}

}  // namespace

absl::Status RunFlatBench(const FlatBenchOptions& o) {
  if (o.k == 0 || o.queries == 0 || o.threads < 1 || o.batch == 0 || o.load_batch == 0) {
    return absl::InvalidArgumentError(
        "--k, --queries, --threads, --batch and --load-batch must be at least 1");
  }
  const double t0 = NowSeconds();
  SHOAL_ASSIGN_OR_RETURN(AnnDataset ds, LoadDataset(o.dataset));
  SHOAL_ASSIGN_OR_RETURN(Metric metric, MetricOfDataset(ds));
  const size_t nq = std::min(o.queries, ds.test.rows);
  if (nq == 0) return absl::InvalidArgumentError(absl::StrCat(ds.name, ": no test queries"));
  std::printf("dataset %s: %zu x %zu base, %zu queries, %s (loaded in %.2f s)\n", ds.name.c_str(),
              ds.train.rows, ds.train.cols, nq, ds.distance.c_str(), NowSeconds() - t0);
  std::printf("k=%zu threads=%d batch=%zu | openblas: %s\n", o.k, o.threads, o.batch,
              BlasDescription().c_str());
  std::fflush(stdout);
  SHOAL_ASSIGN_OR_RETURN(SystemRun faiss, RunFaiss(o, ds, metric, nq));
  SHOAL_ASSIGN_OR_RETURN(SystemRun shoal, RunShoal(o, ds, metric, nq));
  return Report(o, ds, faiss, shoal);
}

void RegisterFlatCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<FlatBenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "flat", "Exact-search QPS of Shoal (DB API) vs FAISS IndexFlat, same queries and threads");
  cmd->add_option("--dataset", options->dataset,
                  "fashion-mnist[:DIR] | PATH.hdf5 | synthetic:n=..,d=..,q=..,clusters=..,seed=..")
      ->capture_default_str();
  cmd->add_option("--queries", options->queries, "number of test queries")->capture_default_str();
  cmd->add_option("--threads", options->threads, "search threads for both systems")
      ->capture_default_str();
  cmd->add_option("--k", options->k, "neighbours per query")->capture_default_str();
  cmd->add_option("--batch", options->batch, "queries per Search call")->capture_default_str();
  cmd->add_option("--load-batch", options->load_batch, "records per Upsert")->capture_default_str();
  cmd->add_option("--csv", options->csv, "append result rows to this CSV file");
  cmd->callback([options, exit_code] {
    absl::Status status = RunFlatBench(*options);
    if (!status.ok()) std::fprintf(stderr, "shoal_bench flat: %s\n", status.ToString().c_str());
    *exit_code = status.ok() ? 0 : 1;
  });
}

}  // namespace shoal::bench

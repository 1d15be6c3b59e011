// `shoal_bench ann`: the ann-benchmarks protocol on one machine, in one run. Builds Shoal
// (DB API + BuildIndex), hnswlib and FAISS IVF (Flat, SQ8, PQ + exact refine) on a dataset's
// train set, sweeps each one's search parameters, and for every point measures
// ann-benchmarks' recall@10 against exact ground truth, QPS of T client threads issuing
// single queries (or --batch N), per-call p50/p99 latency, full-precision vectors read per
// query to re-rank (Shoal, FAISS refine) and, for Shoal, SSD bytes/postings read per query.
// Prints per system QPS at recall 0.90 / 0.95 / 0.99 and Shoal's ratio to each peer; appends
// one CSV row per point; draws the recall@10 vs QPS curves (bench/plot.h).
//
//   shoal_bench ann --dataset fashion-mnist --threads 1 --csv ann.csv --plot ann.png
//   shoal_bench ann --dataset synthetic:n=2000000,d=128,seed=1 --systems shoal,faiss-ivf-flat
#ifndef SHOAL_BENCH_ANN_BENCH_H_
#define SHOAL_BENCH_ANN_BENCH_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "bench/ann_system.h"
#include "bench/report.h"

namespace CLI {
class App;
}  // namespace CLI

namespace shoal::bench {

struct AnnBenchOptions {
  std::string dataset = "fashion-mnist";  // any shoal::LoadDataset spec
  size_t queries = 1000;                  // first N test queries; 0 = all
  int threads = 1;                        // client threads (and build threads)
  size_t batch = 1;                       // queries per Search call (ann-benchmarks: 1)
  int runs = 1;                           // timed passes per point; the fastest is kept
  size_t warmup_queries = 0;  // warm-up on test queries [queries, queries + N); 0 = the timed ones
  // Keep every system built and take the timed passes round-robin (run 1 of each system's
  // points, then run 2, ...), so that load on a shared machine falls on all systems alike.
  bool interleave = false;
  std::string systems = "shoal,hnswlib,faiss-ivf-flat";
  std::string csv;        // append one row per sweep point when set
  std::string plot;       // draw this run's recall@10 vs QPS into this PNG when set
  std::string cache_dir;  // ground-truth cache (default DefaultCacheDir())
  ShoalSystemOptions shoal;
  int hnsw_m = 16;
  int hnsw_ef_construction = 200;
  std::string hnsw_ef = "10,12,14,16,18,20,24,28,32,40,48,64,80,100,120,160,200,300,400,600,800";
  size_t faiss_nlist = 1024;
  size_t faiss_train_rows = 0;  // 0 = the whole train set
  std::string faiss_nprobe = "1,2,4,8,16,32,64,128,256";
  // IVF-PQ sub-quantizers of 8 bits (0 = dim / 4: 2 bits per dimension, as RaBitQ's 1-4);
  // the fast-scan peer uses 2x as many of 4 bits (the same code size).
  size_t faiss_pq_m = 0;
  std::string faiss_k_factor = "1,2,4,8";  // IndexRefineFlat's k_factor_rf sweep (x nprobe)
  // --suite: every dataset of SuiteDatasets() in turn, one table at the end.
  bool suite = false;
  size_t suite_n = 50000;               // rows of each generated set
  std::vector<std::string> suite_hdf5;  // ann-benchmarks files added to the suite
  std::string suite_only;               // comma-separated suite names (empty: all)
};

// One system's sweep on one dataset.
struct SystemResult {
  std::string name;
  std::vector<RecallQps> curve;
  double build_seconds = 0;
  double ram_bytes = 0;  // after the sweep (caches filled)
};

struct DatasetResult {
  std::string name;
  size_t rows = 0, dim = 0;
  std::string distance;
  std::vector<SystemResult> systems;
};

// The suite: (short name, LoadDataset spec) of Fashion-MNIST, embedding-like sets at 100-d
// angular, 128-d euclidean, 256-, 384- and 768-d angular (the common text-embedding widths),
// 960-d euclidean and 1536-d angular of `n` rows (seeded; storage/dataset/embedding_synthetic.h),
// then each HDF5 file.
std::vector<std::pair<std::string, std::string>> SuiteDatasets(
    size_t n, const std::vector<std::string>& hdf5);

// Sub-quantizers of the IVF-PQ peers for `dim`-dimensional vectors: pq_m, or dim / 4 when 0.
size_t FaissPqM(size_t pq_m, size_t dim);

absl::Status RunAnnBench(const AnnBenchOptions& options);
// One dataset (`dataset` in place of options.dataset): the per-system tables and summary.
absl::StatusOr<DatasetResult> RunAnnDataset(const AnnBenchOptions& options,
                                            const std::string& dataset);
// --suite: RunAnnDataset on each suite dataset, then one table of QPS at recall 0.90 / 0.95 /
// 0.99 per system, Shoal's ratio to each peer, RAM and build time (bench/ann_suite.cc).
absl::Status RunAnnSuite(const AnnBenchOptions& options);

// Adds the `ann` subcommand; when it runs, its exit status goes to *exit_code.
void RegisterAnnCommand(CLI::App& app, int* exit_code);

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_ANN_BENCH_H_

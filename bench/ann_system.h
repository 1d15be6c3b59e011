// The systems `shoal_bench ann` compares, behind one small interface so that adding a peer
// (another FAISS factory string, another library) is a few lines in MakeAnnSystems.
//
//   std::unique_ptr<AnnSystem> s = ...;
//   SHOAL_ASSIGN_OR_RETURN(BuildInfo b, s->Build(ds.train, metric, /*threads=*/1));
//   for (size_t p = 0; p < s->points().size(); ++p) {
//     SHOAL_RETURN_IF_ERROR(s->SetParams(p));
//     // from any number of client threads, each after s->PrepareClientThread():
//     SHOAL_RETURN_IF_ERROR(s->Search(queries.Row(i), 1, 10, &out, i, &counters));
//   }
//
// Thread safety: Build and SetParams exclusively; Search concurrently with Search.
#ifndef SHOAL_BENCH_ANN_SYSTEM_H_
#define SHOAL_BENCH_ANN_SYSTEM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/recall.h"
#include "bench/sweep.h"
#include "shoal/dataset.h"
#include "shoal/types.h"

namespace shoal::bench {

// What a build cost. build_seconds is the index build alone (CSV build_seconds); load_seconds
// any ingest before it (Shoal's Upserts), reported separately.
struct BuildInfo {
  double build_seconds = 0;
  double load_seconds = 0;
  std::string note;  // printed (e.g. a fallback taken; build_params() says it in the CSV)
};

// Work done by searches, summed by one client thread over its queries (systems without an
// SSD leave it zero).
struct IoCounters {
  uint64_t bytes_read = 0;
  uint64_t postings_read = 0;
  uint64_t cache_hits = 0;
  uint64_t vectors_scored = 0;
  // Full-precision vectors fetched to re-rank quantized candidates (Shoal's rerank, FAISS's
  // IndexRefineFlat); meaningful only where AnnSystem::CountsFullVectorReads().
  uint64_t full_vectors_read = 0;
  uint64_t read_batches = 0;  // batches of SSD reads waited for (round trips)
  // read_bytes of /proc/self/io over the pass (what the kernel read from storage for this
  // process: the cross-check of bytes_read, which the system counts itself).
  uint64_t proc_read_bytes = 0;
  void Add(const IoCounters& o) {
    bytes_read += o.bytes_read;
    postings_read += o.postings_read;
    cache_hits += o.cache_hits;
    vectors_scored += o.vectors_scored;
    full_vectors_read += o.full_vectors_read;
    read_batches += o.read_batches;
    proc_read_bytes += o.proc_read_bytes;
  }
};

class AnnSystem {
 public:
  virtual ~AnnSystem() = default;

  // "shoal", "hnswlib", "faiss-ivf-flat", ...: the CSV's `system`.
  virtual std::string name() const = 0;
  // Build-time knobs, e.g. "M=16;ef_construction=200" (valid after Build).
  virtual std::string build_params() const = 0;
  // Indexes `train` (keys/labels = row numbers) using up to `threads` cores.
  virtual absl::StatusOr<BuildInfo> Build(const Matrix& train, Metric metric, int threads) = 0;
  // The search-parameter points to sweep, e.g. {"ef=10", "ef=20"} (valid after Build).
  virtual std::vector<std::string> points() const = 0;
  virtual absl::Status SetParams(size_t point) = 0;
  // Once in each client thread before its first Search (pins library thread pools to 1).
  virtual void PrepareClientThread() {}
  // Writes the k nearest of queries [0, n) into rows [first, first + n) of `out` (-1 pads);
  // adds this search's work to *counters.
  virtual absl::Status Search(const float* queries, size_t n, size_t k, Neighbors* out,
                              size_t first, IoCounters* counters) = 0;
  // RAM the index holds (valid after Build); how it is counted is in each implementation.
  virtual double RamBytes() const = 0;
  // Whether Search counts IoCounters::full_vectors_read (valid after Build). False for
  // systems with no re-rank step (their column reads n/a): IVF-Flat's and hnswlib's scored
  // vectors are full vectors, IVF-SQ8's are codes, and neither is a re-rank read.
  virtual bool CountsFullVectorReads() const { return false; }
};

struct ShoalSystemOptions {
  std::string spec = "auto";  // DB::BuildIndex spec ("auto": chosen from the data)
  // SearchParams grid: max_postings, pruning_ratio, target_recall (calibrated at build).
  std::string sweep = "target_recall=0.8,0.85,0.9,0.93,0.95,0.97,0.98,0.99,0.995,0.999";
  std::string data_dir;  // keep the DB here (reused when it holds the same vectors)
  // Options::posting_cache_bytes; small values push searches to the SSD (0 = DB default).
  size_t posting_cache_bytes = 0;
  // Options::index_ram_bytes_limit: bounds centroids + navigator + cache (0 = no bound).
  size_t ram_limit_bytes = 0;
  size_t load_batch = 10000;
};

// Shoal through its public DB API: loads the vectors, BuildIndex(spec) ("flat" measures exact
// search), then sweeps SearchParams.
absl::StatusOr<std::unique_ptr<AnnSystem>> MakeShoalSystem(const ShoalSystemOptions& options);

// hnswlib's HierarchicalNSW, swept over efSearch.
std::unique_ptr<AnnSystem> MakeHnswSystem(int m, int ef_construction, std::vector<int> efs);

// A FAISS index from a factory string ("IVF1024,Flat", "IVF1024,PQ196,RFlat"), trained on the
// first `train_rows` train vectors (0 = all), swept over a grid of faiss::ParameterSpace
// names, e.g. ParseGrid("nprobe=1,4,16;k_factor_rf=1,4"): k_factor_rf is IndexRefine's
// candidates-per-result factor (the base index returns k * k_factor_rf, re-ranked exactly).
std::unique_ptr<AnnSystem> MakeFaissSystem(std::string name, std::string factory, size_t train_rows,
                                           std::vector<GridPoint> sweep);

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_ANN_SYSTEM_H_

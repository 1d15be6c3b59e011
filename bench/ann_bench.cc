#include "bench/ann_bench.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "bench/blas_env.h"
#include "bench/ground_truth.h"
#include "bench/plot.h"
#include "bench/recall.h"
#include "bench/report.h"
#include "bench/sweep.h"

namespace shoal::bench {
namespace {

constexpr size_t kK = 10;  // ann-benchmarks' recall@10
constexpr double kRecallTargets[] = {0.90, 0.95, 0.99};

// Called with the dataset's dimension (the IVF-PQ peers size their codes by it).
using SystemFactory = std::function<absl::StatusOr<std::unique_ptr<AnnSystem>>(size_t dim)>;

// Every system the bench knows, by CSV name. A new peer is one entry here.
absl::StatusOr<std::vector<std::pair<std::string, SystemFactory>>> KnownSystems(
    const AnnBenchOptions& o) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<double> efs, ParseNumberList(o.hnsw_ef, "--hnsw-ef"));
  SHOAL_ASSIGN_OR_RETURN(std::vector<GridPoint> nprobe,
                         ParseGrid(absl::StrCat("nprobe=", o.faiss_nprobe)));
  // IndexRefineFlat's k_factor_rf varies fastest: each nprobe with every k_factor.
  SHOAL_ASSIGN_OR_RETURN(
      std::vector<GridPoint> nprobe_refine,
      ParseGrid(absl::StrCat("nprobe=", o.faiss_nprobe, ";k_factor_rf=", o.faiss_k_factor)));
  std::vector<int> ef_ints(efs.begin(), efs.end());
  const std::string ivf = absl::StrCat("IVF", o.faiss_nlist, ",");
  // `codes(dim)` is the factory string after "IVF{nlist},".
  auto faiss = [&](std::string name, std::function<std::string(size_t)> codes,
                   const std::vector<GridPoint>& sweep) {
    return std::make_pair(
        name, SystemFactory([=, &o](size_t dim) -> absl::StatusOr<std::unique_ptr<AnnSystem>> {
          return MakeFaissSystem(name, ivf + codes(dim), o.faiss_train_rows, sweep);
        }));
  };
  const size_t pq_m = o.faiss_pq_m;
  return std::vector<std::pair<std::string, SystemFactory>>{
      {"shoal", [&o](size_t) { return MakeShoalSystem(o.shoal); }},
      {"hnswlib",
       [&o, ef_ints](size_t) -> absl::StatusOr<std::unique_ptr<AnnSystem>> {
         return MakeHnswSystem(o.hnsw_m, o.hnsw_ef_construction, ef_ints);
       }},
      faiss(
          "faiss-ivf-flat", [](size_t) { return "Flat"; }, nprobe),
      faiss(
          "faiss-ivf-sq8", [](size_t) { return "SQ8"; }, nprobe),
      // "np": no polysemous training (a Hamming-search aid unused here that took minutes).
      faiss(
          "faiss-ivf-pq",
          [pq_m](size_t dim) { return absl::StrCat("PQ", FaissPqM(pq_m, dim), "np,RFlat"); },
          nprobe_refine),
      // Fast-scan: twice the sub-quantizers at 4 bits each, the same code bytes as PQ{m}.
      faiss(
          "faiss-ivf-pq-fs",
          [pq_m](size_t dim) { return absl::StrCat("PQ", 2 * FaissPqM(pq_m, dim), "x4fs,RFlat"); },
          nprobe_refine),
  };
}

// The run's result rows: appended to --csv as they come (a long run keeps what it measured)
// and kept for --plot.
class RunRows {
 public:
  absl::Status Open(const AnnBenchOptions& o) {
    return o.csv.empty() ? absl::OkStatus() : csv_.Open(o.csv);
  }
  absl::Status Add(ResultRow row) {
    SHOAL_RETURN_IF_ERROR(csv_.Write(row));
    rows_.push_back(std::move(row));
    return absl::OkStatus();
  }
  const std::vector<ResultRow>& rows() const { return rows_; }

 private:
  CsvWriter csv_;
  std::vector<ResultRow> rows_;
};

struct PointResult {
  double recall = 0;
  BatchTiming timing;
  IoCounters io;             // summed over the queries of the kept timed pass
  double least_cpu_qps = 0;  // the best BatchTiming::CpuQps over the timed passes
  RecallQps ToRecallQps() const { return {recall, timing.Qps(), least_cpu_qps}; }
};

// read_bytes of /proc/self/io: what the kernel read from storage for this process (O_DIRECT
// reads included); 0 where the file cannot be read.
uint64_t ProcReadBytes() {
  std::FILE* f = std::fopen("/proc/self/io", "r");
  if (f == nullptr) return 0;
  char line[128];
  unsigned long long bytes = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "read_bytes: %llu", &bytes) == 1) break;
  }
  std::fclose(f);
  return bytes;
}

// One pass of all nq queries split over the client threads.
absl::StatusOr<BatchTiming> Pass(AnnSystem& sys, const AnnBenchOptions& o, const Matrix& queries,
                                 size_t nq, Neighbors* out, IoCounters* io) {
  std::vector<IoCounters> per_thread(o.threads);
  const uint64_t proc_before = ProcReadBytes();
  SHOAL_ASSIGN_OR_RETURN(BatchTiming timing,
                         TimeClients(
                             nq, o.batch, o.threads, [&](int) { sys.PrepareClientThread(); },
                             [&](int t, size_t first, size_t n) {
                               return sys.Search(queries.Row(first), n, kK, out, first,
                                                 &per_thread[t]);
                             }));
  *io = IoCounters();
  for (const IoCounters& c : per_thread) io->Add(c);
  io->proc_read_bytes = ProcReadBytes() - proc_before;
  return timing;
}

// Judges a point's answers by recomputed true distances, as ann-benchmarks does.
double Recall(const AnnDataset& ds, const GroundTruth& gt, Metric metric, Neighbors* found) {
  SetTrueDistances(ds.train, ds.test, metric, found);
  return AnnBenchmarksRecall(*found, gt.kth_distance, kK);
}

// Builds `sys` and prints its header line and the table's column names; returns the build time.
absl::StatusOr<double> BuildAndPrintHeader(AnnSystem& sys, const AnnBenchOptions& o,
                                           const AnnDataset& ds, Metric metric) {
  SHOAL_ASSIGN_OR_RETURN(BuildInfo build, sys.Build(ds.train, metric, o.threads));
  std::printf("\n== %s (%s): build %.2f s", sys.name().c_str(), sys.build_params().c_str(),
              build.build_seconds);
  if (build.load_seconds > 0) std::printf(", load %.2f s", build.load_seconds);
  std::printf(", index RAM after build %.1f MiB\n", sys.RamBytes() / (1 << 20));
  if (!build.note.empty()) std::printf("   NOTE: %s\n", build.note.c_str());
  // With --batch N the latencies are per Search call of N queries.
  const char* p50 = o.batch == 1 ? "p50 us" : "p50 us/call";
  const char* p99 = o.batch == 1 ? "p99 us" : "p99 us/call";
  // RAM is read after each point: caches fill while searching.
  // 4K/q: the system's own count of bytes read / 4 KiB; disk 4K/q: /proc/self/io's read_bytes
  // over the pass / 4 KiB (the kernel's count, the cross-check); trips/q: read batches waited.
  std::printf("   %-34s %8s %10s %10s %11s %11s %12s %10s %10s %10s %9s %9s %8s %9s %8s\n",
              "params", "recall", "QPS", "CPU QPS", p50, p99, "bytes/query", "posts/q", "scored/q",
              "cache/q", "full/q", "RAM MiB", "4K/q", "disk 4K/q", "trips/q");
  std::fflush(stdout);
  return build.build_seconds;
}

// Prints one point's row and adds it to the run's rows.
absl::Status ReportPoint(AnnSystem& sys, const AnnBenchOptions& o, size_t nq,
                         const std::string& point, const PointResult& r, double build_seconds,
                         RunRows& out) {
  const double per_q = 1.0 / static_cast<double>(nq);
  const double ram = sys.RamBytes();
  std::optional<double> full_reads;  // full_vector_reads_per_query; n/a without a re-rank
  if (sys.CountsFullVectorReads()) full_reads = r.io.full_vectors_read * per_q;
  constexpr double kPage = 4096;
  std::printf(
      "   %-34s %8.4f %10.1f %10.1f %11.1f %11.1f %12.0f %10.2f %10.1f %10.2f %9s %9.1f %8.1f "
      "%9.1f %8.2f\n",
      point.c_str(), r.recall, r.timing.Qps(), r.least_cpu_qps, r.timing.CallPercentileUs(50),
      r.timing.CallPercentileUs(99), r.io.bytes_read * per_q, r.io.postings_read * per_q,
      r.io.vectors_scored * per_q, r.io.cache_hits * per_q,
      full_reads ? absl::StrFormat("%.1f", *full_reads).c_str() : "n/a", ram / (1 << 20),
      r.io.bytes_read * per_q / kPage, r.io.proc_read_bytes * per_q / kPage,
      r.io.read_batches * per_q);
  std::fflush(stdout);
  std::string params = absl::StrCat("dataset=", o.dataset, ";queries=", nq, ";batch=", o.batch, ";",
                                    sys.build_params(), ";", point);
  return out.Add({.system = sys.name(),
                  .params = params,
                  .threads = o.threads,
                  .recall_at_10 = r.recall,
                  .qps = r.timing.Qps(),
                  .p50_us = r.timing.CallPercentileUs(50),
                  .p99_us = r.timing.CallPercentileUs(99),
                  .index_ram_bytes = ram,
                  .build_seconds = build_seconds,
                  .bytes_read_per_query = r.io.bytes_read * per_q,
                  .full_vector_reads_per_query = full_reads});
}

// A point's untimed warm-up pass: over the timed queries themselves, or with --warmup-queries W
// over the W test queries after them (so that caches hold what other queries left, not the
// timed queries' own postings and vectors).
absl::Status WarmUp(AnnSystem& sys, const AnnBenchOptions& o, const AnnDataset& ds, size_t nq,
                    Neighbors* found) {
  IoCounters io;
  if (o.warmup_queries == 0) return Pass(sys, o, ds.test, nq, found, &io).status();
  const size_t w = o.warmup_queries, d = ds.test.cols;
  const Matrix rows{w, d, std::vector<float>(ds.test.Row(nq), ds.test.Row(nq) + w * d)};
  Neighbors other(w, kK);
  return Pass(sys, o, rows, w, &other, &io).status();
}

// One timed pass of the current point; keeps it in *best when faster (best of runs, as
// ann-benchmarks does). The first call for a point is its warm-up and is not timed.
absl::Status TimePoint(AnnSystem& sys, const AnnBenchOptions& o, const AnnDataset& ds, size_t nq,
                       Neighbors* found, PointResult* best, bool* warm) {
  IoCounters io;
  if (!*warm) {
    SHOAL_RETURN_IF_ERROR(WarmUp(sys, o, ds, nq, found));
    *warm = true;
  }
  SHOAL_ASSIGN_OR_RETURN(BatchTiming timing, Pass(sys, o, ds.test, nq, found, &io));
  best->least_cpu_qps = std::max(best->least_cpu_qps, timing.CpuQps());
  if (best->timing.total_seconds == 0 || timing.total_seconds < best->timing.total_seconds) {
    best->timing = std::move(timing);
    best->io = io;
  }
  return absl::OkStatus();
}

// Builds one system, sweeps its points (all runs of a point, then the next point), prints and
// writes them; returns its (recall, qps) curve, build time and RAM.
absl::StatusOr<SystemResult> RunSystem(AnnSystem& sys, const AnnBenchOptions& o,
                                       const AnnDataset& ds, const GroundTruth& gt, Metric metric,
                                       size_t nq, RunRows& out) {
  SHOAL_ASSIGN_OR_RETURN(const double build_seconds, BuildAndPrintHeader(sys, o, ds, metric));
  std::vector<RecallQps> curve;
  const std::vector<std::string> points = sys.points();
  for (size_t p = 0; p < points.size(); ++p) {
    SHOAL_RETURN_IF_ERROR(sys.SetParams(p));
    Neighbors found(nq, kK);
    PointResult r;
    bool warm = false;
    for (int run = 0; run < o.runs; ++run) {
      SHOAL_RETURN_IF_ERROR(TimePoint(sys, o, ds, nq, &found, &r, &warm));
    }
    r.recall = Recall(ds, gt, metric, &found);
    SHOAL_RETURN_IF_ERROR(ReportPoint(sys, o, nq, points[p], r, build_seconds, out));
    curve.push_back(r.ToRecallQps());
  }
  return SystemResult{sys.name(), std::move(curve), build_seconds, sys.RamBytes()};
}

// --interleave: every system built first, then run 1 of every system's points, run 2, ...
absl::StatusOr<std::vector<SystemResult>> RunInterleaved(
    std::vector<std::pair<std::string, std::unique_ptr<AnnSystem>>> systems,
    const AnnBenchOptions& o, const AnnDataset& ds, const GroundTruth& gt, Metric metric, size_t nq,
    RunRows& out) {
  struct Point {
    Neighbors found;
    PointResult best;
    bool warm = false;
  };
  std::vector<std::vector<Point>> points(systems.size());
  std::vector<double> build_seconds(systems.size());
  for (size_t s = 0; s < systems.size(); ++s) {
    SHOAL_ASSIGN_OR_RETURN(build_seconds[s],
                           BuildAndPrintHeader(*systems[s].second, o, ds, metric));
    std::printf("   (points reported after the interleaved runs)\n");
    for (size_t p = 0; p < systems[s].second->points().size(); ++p) {
      points[s].push_back({Neighbors(nq, kK), PointResult(), false});
    }
  }
  for (int run = 0; run < o.runs; ++run) {
    for (size_t s = 0; s < systems.size(); ++s) {
      AnnSystem& sys = *systems[s].second;
      for (size_t p = 0; p < points[s].size(); ++p) {
        SHOAL_RETURN_IF_ERROR(sys.SetParams(p));
        Point& pt = points[s][p];
        SHOAL_RETURN_IF_ERROR(TimePoint(sys, o, ds, nq, &pt.found, &pt.best, &pt.warm));
      }
    }
  }
  std::vector<SystemResult> curves;
  for (size_t s = 0; s < systems.size(); ++s) {
    AnnSystem& sys = *systems[s].second;
    std::printf("\n== %s (%s), %d interleaved runs\n", sys.name().c_str(),
                sys.build_params().c_str(), o.runs);
    std::vector<RecallQps> curve;
    const std::vector<std::string> names = sys.points();
    for (size_t p = 0; p < points[s].size(); ++p) {
      SHOAL_RETURN_IF_ERROR(sys.SetParams(p));  // RAM and counters of this point
      Point& pt = points[s][p];
      pt.best.recall = Recall(ds, gt, metric, &pt.found);
      SHOAL_RETURN_IF_ERROR(ReportPoint(sys, o, nq, names[p], pt.best, build_seconds[s], out));
      curve.push_back(pt.best.ToRecallQps());
    }
    curves.push_back({systems[s].first, std::move(curve), build_seconds[s], sys.RamBytes()});
  }
  return curves;
}

std::string QpsCell(std::optional<double> qps) {
  return qps ? absl::StrFormat("%.0f", *qps) : std::string("n/a");
}

// One block of the summary: each system's QPS at the recall targets (as `at` reads a curve), then
// Shoal's ratio to each peer.
void PrintQpsBlock(const std::vector<SystemResult>& curves,
                   std::optional<double> (*at)(std::span<const RecallQps>, double)) {
  std::printf("  %-24s %10s %10s %10s\n", "system", "0.90", "0.95", "0.99");
  for (const auto& [name, curve, build, ram] : curves) {
    std::printf("  %-24s", name.c_str());
    for (double r : kRecallTargets) std::printf(" %10s", QpsCell(at(curve, r)).c_str());
    std::printf("\n");
  }
  const std::vector<RecallQps>* shoal = nullptr;
  for (const auto& [name, curve, build, ram] : curves) {
    if (name == "shoal") shoal = &curve;
  }
  if (shoal == nullptr) return;
  for (const auto& [name, curve, build, ram] : curves) {
    if (name == "shoal") continue;
    std::printf("  %-24s", absl::StrCat("shoal / ", name).c_str());
    for (double r : kRecallTargets) {
      std::optional<double> a = at(*shoal, r), b = at(curve, r);
      std::printf(" %10s", a && b ? absl::StrFormat("%.3fx", *a / *b).c_str() : "n/a");
    }
    std::printf("\n");
  }
}

void PrintSummary(const std::vector<SystemResult>& curves, int threads) {
  std::printf("\nQPS at recall@10 >= (best point reaching it; %d client thread%s)\n", threads,
              threads == 1 ? "" : "s");
  PrintQpsBlock(curves, QpsAtRecall);
  // Wall QPS carries whatever else the host ran; the client threads' CPU time does not (for
  // systems that search on the calling thread, as every system does at --threads 1).
  std::printf(
      "\nQueries per client-thread CPU second at recall@10 >= (least CPU time per point)\n");
  PrintQpsBlock(curves, CpuQpsAtRecall);
}

}  // namespace

size_t FaissPqM(size_t pq_m, size_t dim) { return pq_m != 0 ? pq_m : std::max<size_t>(dim / 4, 1); }

absl::Status RunAnnBench(const AnnBenchOptions& o) {
  if (o.suite) return RunAnnSuite(o);
  return RunAnnDataset(o, o.dataset).status();
}

absl::StatusOr<DatasetResult> RunAnnDataset(const AnnBenchOptions& o, const std::string& dataset) {
  if (o.threads < 1 || o.batch == 0 || o.runs < 1) {
    return absl::InvalidArgumentError("--threads, --batch and --runs must be at least 1");
  }
  SHOAL_ASSIGN_OR_RETURN(auto known, KnownSystems(o));
  std::vector<std::pair<std::string, SystemFactory>> chosen;
  for (absl::string_view want : absl::StrSplit(o.systems, ',', absl::SkipWhitespace())) {
    auto it =
        std::find_if(known.begin(), known.end(), [&](const auto& s) { return s.first == want; });
    if (it == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat("--systems: unknown system '", want, "'"));
    }
    chosen.push_back(*it);
  }
  if (!o.plot.empty()) SHOAL_RETURN_IF_ERROR(CheckPlotter());
  const double t0 = NowSeconds();
  SHOAL_ASSIGN_OR_RETURN(AnnDataset ds, LoadDataset(dataset));
  AnnBenchOptions named = o;  // the CSV's dataset= names this run's dataset (suite: each one)
  named.dataset = dataset;
  SHOAL_ASSIGN_OR_RETURN(Metric metric, MetricOfDataset(ds));
  const size_t nq = o.queries == 0 ? ds.test.rows : std::min(o.queries, ds.test.rows);
  if (nq == 0) return absl::InvalidArgumentError(absl::StrCat(ds.name, ": no test queries"));
  if (o.warmup_queries > ds.test.rows - nq) {
    return absl::InvalidArgumentError(absl::StrCat("--warmup-queries ", o.warmup_queries, ": ",
                                                   ds.name, " has ", ds.test.rows - nq,
                                                   " test queries after the timed ", nq));
  }
  std::printf("dataset %s: %zu x %zu base, %zu queries, %s (loaded in %.2f s)\n", ds.name.c_str(),
              ds.train.rows, ds.train.cols, nq, ds.distance.c_str(), NowSeconds() - t0);
  std::printf("client threads=%d batch=%zu runs=%d | openblas: %s\n", o.threads, o.batch, o.runs,
              BlasDescription().c_str());
  const double t1 = NowSeconds();
  SHOAL_ASSIGN_OR_RETURN(GroundTruth gt,
                         LoadGroundTruth(ds, dataset, nq, metric, kK,
                                         o.cache_dir.empty() ? DefaultCacheDir() : o.cache_dir));
  std::printf("ground truth: %s (%.2f s)\n", gt.source.c_str(), NowSeconds() - t1);
  std::fflush(stdout);
  RunRows out;
  SHOAL_RETURN_IF_ERROR(out.Open(o));
  std::vector<SystemResult> curves;
  if (o.interleave) {
    std::vector<std::pair<std::string, std::unique_ptr<AnnSystem>>> systems;
    for (const auto& [name, make] : chosen) {
      SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<AnnSystem> sys, make(ds.train.cols));
      systems.emplace_back(name, std::move(sys));
    }
    SHOAL_ASSIGN_OR_RETURN(curves,
                           RunInterleaved(std::move(systems), named, ds, gt, metric, nq, out));
  } else {
    for (const auto& [name, make] : chosen) {
      SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<AnnSystem> sys, make(ds.train.cols));
      SHOAL_ASSIGN_OR_RETURN(SystemResult r, RunSystem(*sys, named, ds, gt, metric, nq, out));
      curves.push_back(std::move(r));
    }  // each system is destroyed before the next is built
  }
  PrintSummary(curves, o.threads);
  if (!o.csv.empty()) std::printf("appended rows to %s\n", o.csv.c_str());
  if (!o.plot.empty()) {
    std::fflush(stdout);
    SHOAL_RETURN_IF_ERROR(
        PlotRecallQps(out.rows(), o.plot,
                      absl::StrFormat("%s: recall@10 vs QPS (%zu queries, %d thread%s, batch %zu)",
                                      ds.name, nq, o.threads, o.threads == 1 ? "" : "s", o.batch)));
  }
  return DatasetResult{ds.name, ds.train.rows, ds.train.cols, ds.distance, std::move(curves)};
}

void RegisterAnnCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<AnnBenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "ann", "ann-benchmarks protocol: Shoal vs hnswlib vs FAISS IVF, recall@10 vs QPS sweeps");
  cmd->add_option("--dataset", o->dataset,
                  "fashion-mnist[:DIR] | PATH.hdf5 | synthetic:n=..,d=..,q=..,clusters=..,seed=.. "
                  "| embedding:n=..,d=..,distance=angular|euclidean")
      ->capture_default_str();
  cmd->add_flag("--suite", o->suite,
                "run the dataset suite (Fashion-MNIST + embedding-like 100/128/256/960/1536-d "
                "sets + --suite-hdf5 files) and print one table");
  cmd->add_option("--suite-n", o->suite_n, "rows of each generated suite set")
      ->capture_default_str();
  cmd->add_option("--suite-hdf5", o->suite_hdf5, "ann-benchmarks HDF5 files added to the suite");
  cmd->add_option("--suite-only", o->suite_only,
                  "comma-separated suite dataset names to run (default: all)");
  cmd->add_option("--queries", o->queries, "test queries to run (0 = all)")->capture_default_str();
  cmd->add_option("--threads", o->threads, "client threads, each issuing its own queries")
      ->capture_default_str();
  cmd->add_option("--batch", o->batch, "queries per Search call")->capture_default_str();
  cmd->add_option("--runs", o->runs, "timed passes per point (best kept)")->capture_default_str();
  cmd->add_option("--warmup-queries", o->warmup_queries,
                  "warm each point up on this many test queries after the timed ones (0 = on "
                  "the timed queries themselves)")
      ->capture_default_str();
  cmd->add_flag("--interleave", o->interleave,
                "keep every system built and take the timed runs round-robin across systems and "
                "points (fairer ratios on a shared, noisy machine)");
  cmd->add_option("--systems", o->systems,
                  "comma-separated: shoal, hnswlib, faiss-ivf-flat, faiss-ivf-sq8, faiss-ivf-pq "
                  "(+ refine), faiss-ivf-pq-fs (fast-scan + refine)")
      ->capture_default_str();
  cmd->add_option("--csv", o->csv, "append one row per sweep point to this CSV file");
  cmd->add_option("--plot", o->plot,
                  "draw recall@10 vs QPS of every system of this run into this PNG "
                  "(bench/plot_recall_qps.py, python3-matplotlib)");
  cmd->add_option("--cache-dir", o->cache_dir, "ground-truth cache (default ~/.cache/shoal_bench)");
  cmd->add_option("--shoal-spec", o->shoal.spec, "DB::BuildIndex spec")->capture_default_str();
  cmd->add_option("--shoal-sweep", o->shoal.sweep, "grid of SearchParams")->capture_default_str();
  cmd->add_option("--data", o->shoal.data_dir, "keep Shoal's DB in this directory (reused)");
  cmd->add_option("--shoal-posting-cache-bytes", o->shoal.posting_cache_bytes,
                  "Shoal's posting cache (0 = DB default; small = SSD-bound)")
      ->capture_default_str();
  cmd->add_option("--shoal-ram-limit", o->shoal.ram_limit_bytes,
                  "Shoal's Options::index_ram_bytes_limit (0 = none)")
      ->capture_default_str();
  cmd->add_option("--load-batch", o->shoal.load_batch, "records per Upsert")->capture_default_str();
  cmd->add_option("--hnsw-m", o->hnsw_m, "hnswlib M")->capture_default_str();
  cmd->add_option("--hnsw-ef-construction", o->hnsw_ef_construction, "hnswlib ef_construction")
      ->capture_default_str();
  cmd->add_option("--hnsw-ef", o->hnsw_ef, "hnswlib ef sweep")->capture_default_str();
  cmd->add_option("--faiss-nlist", o->faiss_nlist, "IVF lists (4*sqrt(n) is the usual rule)")
      ->capture_default_str();
  cmd->add_option("--faiss-train-rows", o->faiss_train_rows, "IVF training rows (0 = all)")
      ->capture_default_str();
  cmd->add_option("--faiss-nprobe", o->faiss_nprobe, "FAISS nprobe sweep")->capture_default_str();
  cmd->add_option("--faiss-pq-m", o->faiss_pq_m,
                  "IVF-PQ sub-quantizers of 8 bits (0 = dim/4, 2 bits/dim); fast-scan uses 2x "
                  "of 4 bits")
      ->capture_default_str();
  cmd->add_option("--faiss-k-factor", o->faiss_k_factor,
                  "IVF-PQ refine sweep: exact re-rank of k * k_factor candidates (x nprobe)")
      ->capture_default_str();
  cmd->callback([o, exit_code] {
    absl::Status status = RunAnnBench(*o);
    if (!status.ok()) std::fprintf(stderr, "shoal_bench ann: %s\n", status.ToString().c_str());
    *exit_code = status.ok() ? 0 : 1;
  });
}

}  // namespace shoal::bench

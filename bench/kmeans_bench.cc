#include "bench/kmeans_bench.h"

#include <faiss/Clustering.h>
#include <faiss/IndexFlat.h>
#include <omp.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "bench/blas_env.h"
#include "bench/report.h"
#include "index/clustering/gpu/gpu_gemm.h"
#include "index/clustering/gpu/gpu_kmeans.h"
#include "index/clustering/kmeans.h"
#include "index/spann/spann_builder.h"
#include "shoal/dataset.h"

namespace shoal::bench {
namespace {

using index::ClusteringBackend;

// CPU seconds of every thread of this process: on a shared machine, wall time per iteration
// also counts other processes' turns; CPU time per iteration is the work done.
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// n points around k centres (spread 3 per coordinate), noise sigma 1: real cluster structure,
// so iterations move the centroids as they would on embeddings. Blocks of rows are drawn in
// parallel, each from its own seeded generator (8M x 768 takes seconds, not minutes).
std::vector<float> Mixture(size_t n, size_t d, size_t k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> centres(k * d);
  for (float& c : centres) c = 3 * g(rng);
  std::vector<float> x(n * d);
  constexpr size_t kBlock = 16384;
  const size_t blocks = (n + kBlock - 1) / kBlock;
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t b = next++; b < blocks; b = next++) {
      std::mt19937_64 block_rng(seed * 1000003 + b);
      std::normal_distribution<float> noise(0, 1);
      for (size_t i = b * kBlock; i < std::min(n, (b + 1) * kBlock); ++i) {
        const float* c = &centres[(block_rng() % k) * d];
        for (size_t j = 0; j < d; ++j) x[i * d + j] = c[j] + noise(block_rng);
      }
    }
  };
  std::vector<std::thread> threads(std::max(1u, std::thread::hardware_concurrency()) - 1);
  for (auto& t : threads) t = std::thread(work);
  work();
  for (auto& t : threads) t.join();
  return x;
}

struct LloydRun {
  double first_seconds = 0;   // an untimed first assignment (library loads, handles, caches)
  double upload_seconds = 0;  // RetainPoints (device copy), outside the iterations
  double assign_seconds = 0;  // per iteration
  double update_seconds = 0;  // per iteration
  double objective = 0;       // after the last assignment
  double cpu_seconds = 0;     // process CPU time per iteration
  double SecondsPerIteration() const { return assign_seconds + update_seconds; }
};

// `iterations` Lloyd steps from k seeded random points through `backend`.
absl::StatusOr<LloydRun> TimeLloyd(ClusteringBackend& backend, const std::vector<float>& x,
                                   size_t n, size_t d, size_t k, int iterations, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> centroids(k * d);
  for (size_t c = 0; c < k; ++c) {
    const size_t i = rng() % n;
    std::copy(&x[i * d], &x[(i + 1) * d], &centroids[c * d]);
  }
  std::vector<uint32_t> labels(n);
  std::vector<float> dists(n);
  LloydRun run;
  double t0 = NowSeconds();
  auto retained = backend.RetainPoints(x.data(), n, d);
  run.upload_seconds = NowSeconds() - t0;
  t0 = NowSeconds();
  SHOAL_RETURN_IF_ERROR(backend.AssignTopM(x.data(), n, centroids.data(), k, d, 1, nullptr,
                                           labels.data(), dists.data()));
  run.first_seconds = NowSeconds() - t0;
  const double cpu0 = ProcessCpuSeconds();
  for (int it = 0; it < iterations; ++it) {
    t0 = NowSeconds();
    SHOAL_RETURN_IF_ERROR(backend.AssignTopM(x.data(), n, centroids.data(), k, d, 1, nullptr,
                                             labels.data(), dists.data()));
    const double t1 = NowSeconds();
    SHOAL_RETURN_IF_ERROR(
        backend.UpdateCentroids(x.data(), n, d, labels.data(), k, centroids.data(), nullptr));
    run.assign_seconds += t1 - t0;
    run.update_seconds += NowSeconds() - t1;
    run.objective = std::accumulate(dists.begin(), dists.end(), 0.0);
  }
  run.cpu_seconds = (ProcessCpuSeconds() - cpu0) / iterations;
  run.assign_seconds /= iterations;
  run.update_seconds /= iterations;
  return run;
}

// The device with explicit options (a device budget forces streaming).
class GpuWithOptions final : public ClusteringBackend {
 public:
  explicit GpuWithOptions(index::gpu::GpuOptions options) : options_(options) {}
  std::string name() const override { return "cuda"; }
  absl::Status AssignTopM(const float* points, size_t n, const float* centroids, size_t k, size_t d,
                          size_t m, const float* bias, uint32_t* labels,
                          float* distances) override {
    return index::gpu::GpuAssignTopM(points, n, centroids, k, d, m, bias, labels, distances,
                                     options_);
  }
  absl::Status UpdateCentroids(const float* points, size_t n, size_t d, const uint32_t* labels,
                               size_t k, float* centroids, uint32_t* sizes) override {
    return index::gpu::GpuUpdateCentroids(points, n, d, labels, k, centroids, sizes, options_);
  }
  std::shared_ptr<const void> RetainPoints(const float* points, size_t n, size_t d) override {
    return options_.device_budget_bytes == 0 ? index::gpu::GpuRetainPoints(points, n, d, options_)
                                             : nullptr;
  }

 private:
  index::gpu::GpuOptions options_;
};

struct FaissRun {
  double seconds_per_iteration = 0;
  double search_share = 0;  // fraction of the time in assignment
  double objective = 0;
  double cpu_seconds = 0;  // process CPU time per iteration
};

// faiss::Clustering on every point (no subsampling); FAISS throws, so this is its one adapter.
absl::StatusOr<FaissRun> TimeFaiss(const std::vector<float>& x, size_t n, size_t d, size_t k,
                                   int iterations, int threads, uint64_t seed) {
  omp_set_num_threads(threads);
  SetBlasThreads(threads);
  faiss::ClusteringParameters cp;
  cp.niter = iterations;
  cp.seed = static_cast<int>(seed);
  cp.max_points_per_centroid = static_cast<int>(n / k + 1);
  try {
    faiss::Clustering clustering(static_cast<int>(d), static_cast<int>(k), cp);
    faiss::IndexFlatL2 index(static_cast<faiss::Index::idx_t>(d));
    const double t0 = NowSeconds(), cpu0 = ProcessCpuSeconds();
    clustering.train(static_cast<faiss::Index::idx_t>(n), x.data(), index);
    FaissRun run;
    run.seconds_per_iteration = (NowSeconds() - t0) / iterations;
    run.cpu_seconds = (ProcessCpuSeconds() - cpu0) / iterations;
    const auto& last = clustering.iteration_stats.back();
    run.search_share = last.time_search / last.time;
    run.objective = last.obj;
    return run;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("faiss::Clustering: ", e.what()));
  }
}

// BuildSpann of the first build_n points into a scratch directory; seconds (total, clustering).
// Forwards to a backend and sums the seconds its calls take (over all threads that call it),
// split by where AssignTopM runs: where a build's time goes, without a profiler on the device.
class TimedBackend final : public ClusteringBackend {
 public:
  explicit TimedBackend(ClusteringBackend& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  absl::Status AssignTopM(const float* points, size_t n, const float* centroids, size_t k, size_t d,
                          size_t m, const float* bias, uint32_t* labels,
                          float* distances) override {
    const double t0 = NowSeconds();
    absl::Status s = inner_.AssignTopM(points, n, centroids, k, d, m, bias, labels, distances);
    Add(inner_.AssignsOnDevice(n, k, d, m) ? device_assign_ : cpu_assign_, NowSeconds() - t0);
    return s;
  }
  absl::Status UpdateCentroids(const float* points, size_t n, size_t d, const uint32_t* labels,
                               size_t k, float* centroids, uint32_t* sizes) override {
    const double t0 = NowSeconds();
    absl::Status s = inner_.UpdateCentroids(points, n, d, labels, k, centroids, sizes);
    Add(update_, NowSeconds() - t0);
    return s;
  }
  bool AssignsOnDevice(size_t n, size_t k, size_t d, size_t m) const override {
    return inner_.AssignsOnDevice(n, k, d, m);
  }
  std::shared_ptr<const void> RetainPoints(const float* points, size_t n, size_t d) override {
    return inner_.RetainPoints(points, n, d);
  }
  std::string Summary() const {
    return absl::StrFormat("assign on device %.2f s (%d calls), on cpu %.2f s (%d), update %.2f s",
                           device_assign_.seconds, device_assign_.calls, cpu_assign_.seconds,
                           cpu_assign_.calls, update_.seconds);
  }

 private:
  struct Tally {
    double seconds = 0;
    int calls = 0;
  };
  void Add(Tally& t, double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    t.seconds += seconds;
    ++t.calls;
  }
  ClusteringBackend& inner_;
  std::mutex mu_;
  Tally device_assign_, cpu_assign_, update_;
};

struct BuildTimes {
  double seconds = 0, clustering = 0;
  std::string breakdown;  // seconds per BuildSpann phase, then the backend's calls
};

absl::StatusOr<BuildTimes> TimeIndexBuild(ClusteringBackend& backend, const std::vector<float>& x,
                                          size_t build_n, size_t d, int threads) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / absl::StrCat("shoal_kmeans_bench_", ::getpid());
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat(dir.string(), ": ", ec.message()));
  std::vector<uint64_t> ids(build_n);
  std::iota(ids.begin(), ids.end(), 0);
  index::SpannBuildInput input{ids, x.data(), d, index::Metric::kL2, build_n, 1};
  BuildTimes times;
  std::string phase = "start";
  const double t0 = NowSeconds();
  double phase_start = t0;
  input.progress = [&](std::string_view next, double) {
    if (next == phase) return;
    const double now = NowSeconds();
    absl::StrAppendFormat(&times.breakdown, "%s %.2f s, ", phase, now - phase_start);
    phase = std::string(next);
    phase_start = now;
  };
  TimedBackend timed(backend);
  auto built = index::BuildSpann(input, index::SpannOptions{}, dir.string(), timed,
                                 static_cast<uint32_t>(threads));
  times.seconds = NowSeconds() - t0;
  absl::StrAppendFormat(&times.breakdown, "%s %.2f s; %s", phase, t0 + times.seconds - phase_start,
                        timed.Summary());
  std::filesystem::remove_all(dir, ec);
  if (!built.ok()) return built.status();
  times.clustering = built->seconds_clustering;
  return times;
}

// GpuAssignTopM(m) of all n points over n / 50 of them taken as centroids (every 50th point):
// the shape of BuildSpann's assignment of every vector to its candidate leaves, with the
// default centroid_ratio of 0.02 (leaves that close together flag many points for a recheck).
absl::Status TimeTopM(const std::vector<float>& x, size_t n, size_t d, size_t m,
                      double cublas_tflops) {
  const size_t k = std::max<size_t>(n / 50, m);
  std::vector<float> centroids(k * d);
  for (size_t c = 0; c < k; ++c) {
    std::copy_n(&x[c * (n / k) * d], d, &centroids[c * d]);
  }
  std::vector<uint32_t> labels(n * m);
  std::vector<float> distances(n * m);
  for (int run = 0; run < 2; ++run) {  // the first pays the allocations
    const double t0 = NowSeconds();
    SHOAL_RETURN_IF_ERROR(index::gpu::GpuAssignTopM(x.data(), n, centroids.data(), k, d, m, nullptr,
                                                    labels.data(), distances.data()));
    const double seconds = NowSeconds() - t0;
    const double tflops = 2.0 * n * k * d / seconds / 1e12;
    std::printf("%-34s %8.3f s = %7.3f TFLOP/s (%.1f%% of cuBLAS tf32), run %d\n",
                absl::StrCat("shoal cuda top-", m, " of ", k, " (streamed)").c_str(), seconds,
                tflops, cublas_tflops > 0 ? 100 * tflops / cublas_tflops : 0.0, run + 1);
  }
  return absl::OkStatus();
}

void PrintLloyd(const char* label, const LloydRun& run, double flops) {
  std::printf("%-34s %8.3f s/iter (assign %.3f s = %7.3f TFLOP/s, update %.3f s) objective %.6g",
              label, run.SecondsPerIteration(), run.assign_seconds,
              flops / run.assign_seconds / 1e12, run.update_seconds, run.objective);
  if (run.upload_seconds > 1e-3) std::printf(", upload %.3f s once", run.upload_seconds);
  std::printf(", first assignment %.3f s", run.first_seconds);
  std::printf(", CPU time %.3f s/iter\n", run.cpu_seconds);
}

void NotAvailable(const char* label) { std::printf("%-34s n/a (no device)\n", label); }

absl::Status CompareBuilds(const std::vector<float>& x, size_t n, size_t d, int threads);

absl::Status RunShape(const KMeansBenchOptions& o, size_t n, size_t d, size_t k) {
  if (k > n) return absl::InvalidArgumentError(absl::StrCat("--k ", k, " > --n ", n));
  std::printf("\n== N=%zu D=%zu K=%zu, %d iterations, %d CPU threads ==\n", n, d, k, o.iterations,
              o.threads);
  double t0 = NowSeconds();
  const std::vector<float> x = Mixture(n, d, k, o.seed);
  std::printf("data: Gaussian mixture, %zu centres, generated in %.1f s\n", k, NowSeconds() - t0);
  std::fflush(stdout);
  const double flops = 2.0 * static_cast<double>(n) * k * d;
  const bool gpu = index::gpu::GpuAvailable();

  std::optional<LloydRun> cpu, device;
  if (o.cpu) {
    auto backend = index::MakeCpuClusteringBackend(static_cast<uint32_t>(o.threads));
    SHOAL_ASSIGN_OR_RETURN(cpu, TimeLloyd(*backend, x, n, d, k, o.iterations, o.seed));
    PrintLloyd(absl::StrCat("shoal ", backend->name()).c_str(), *cpu, flops);
    std::fflush(stdout);
  }
  std::optional<double> cublas_tf32;
  if (gpu) {
    GpuWithOptions resident{index::gpu::GpuOptions{}};
    SHOAL_ASSIGN_OR_RETURN(device, TimeLloyd(resident, x, n, d, k, o.iterations, o.seed));
    PrintLloyd("shoal cuda (tf32, resident)", *device, flops);
    if (o.gpu_budget_mb > 0) {
      index::gpu::GpuOptions budget;
      budget.device_budget_bytes = o.gpu_budget_mb << 20;
      GpuWithOptions streamed{budget};
      SHOAL_ASSIGN_OR_RETURN(LloydRun s, TimeLloyd(streamed, x, n, d, k, o.iterations, o.seed));
      PrintLloyd(absl::StrCat("shoal cuda (streamed, ", o.gpu_budget_mb, " MiB)").c_str(), s,
                 flops);
    }
    // The GEMM's output is m x k floats: m rows at a time keep it in memory; the rate is the same.
    const size_t m = std::min<size_t>(n, 65536);
    for (bool tf32 : {true, false}) {
      SHOAL_ASSIGN_OR_RETURN(double tflops, index::gpu::CublasGemmTflops(m, k, d, tf32));
      std::printf("%-34s %8.3f TFLOP/s (%zu x %zu x %zu GEMM)\n",
                  tf32 ? "cuBLAS SGEMM tf32" : "cuBLAS SGEMM fp32", tflops, m, k, d);
      if (tf32) cublas_tf32 = tflops;
    }
  } else {
    NotAvailable("shoal cuda (tf32)");
    NotAvailable("cuBLAS SGEMM");
  }
  if (gpu && o.top_m > 0) {
    SHOAL_RETURN_IF_ERROR(TimeTopM(x, n, d, o.top_m, cublas_tf32.value_or(0)));
  }
  std::optional<FaissRun> faiss;
  if (o.faiss) {
    SHOAL_ASSIGN_OR_RETURN(faiss, TimeFaiss(x, n, d, k, o.iterations, o.threads, o.seed));
    std::printf(
        "%-34s %8.3f s/iter (%.0f%% in assignment = %7.3f TFLOP/s) objective %.6g, CPU time "
        "%.3f s/iter\n",
        absl::StrCat("faiss::Clustering (", o.threads, " threads)").c_str(),
        faiss->seconds_per_iteration, 100 * faiss->search_share,
        flops / (faiss->seconds_per_iteration * faiss->search_share) / 1e12, faiss->objective,
        faiss->cpu_seconds);
  }
  if (faiss && cpu) {
    std::printf("ratio faiss/shoal-cpu per iteration: %.2f wall, %.2f CPU time\n",
                faiss->seconds_per_iteration / cpu->SecondsPerIteration(),
                faiss->cpu_seconds / cpu->cpu_seconds);
  }
  if (faiss && device) {
    std::printf("ratio faiss/shoal-cuda seconds per iteration: %.2f\n",
                faiss->seconds_per_iteration / device->SecondsPerIteration());
  }
  if (device && cublas_tf32) {
    std::printf("shoal cuda assignment / cuBLAS tf32 GEMM: %.1f%%\n",
                100 * flops / device->assign_seconds / 1e12 / *cublas_tf32);
  }
  if (o.build_n == 0) return absl::OkStatus();
  return CompareBuilds(x, std::min(o.build_n, n), d, o.threads);
}

// BuildSpann of the first n of x with each backend.
absl::Status CompareBuilds(const std::vector<float>& x, size_t n, size_t d, int threads) {
  auto cpu_backend = index::MakeCpuClusteringBackend(static_cast<uint32_t>(threads));
  SHOAL_ASSIGN_OR_RETURN(BuildTimes cpu, TimeIndexBuild(*cpu_backend, x, n, d, threads));
  std::printf("%-34s %8.2f s (clustering %.2f s), %zu x %zu points\n", "index build, cpu backend",
              cpu.seconds, cpu.clustering, n, d);
  std::printf("  phases: %s\n", cpu.breakdown.c_str());
  if (!index::gpu::GpuAvailable()) {
    NotAvailable("index build, cuda backend");
    return absl::OkStatus();
  }
  auto gpu_backend = index::MakeGpuClusteringBackend(static_cast<uint32_t>(threads));
  SHOAL_ASSIGN_OR_RETURN(BuildTimes gpu, TimeIndexBuild(*gpu_backend, x, n, d, threads));
  std::printf("%-34s %8.2f s (clustering %.2f s), ratio cpu/gpu %.2f\n",
              "index build, cuda backend", gpu.seconds, gpu.clustering, cpu.seconds / gpu.seconds);
  std::printf("  phases: %s\n", gpu.breakdown.c_str());
  return absl::OkStatus();
}

// The build comparison on a real dataset's base vectors (rows normalised for angular data).
absl::Status CompareBuildsOn(const std::string& spec, int threads) {
  SHOAL_ASSIGN_OR_RETURN(AnnDataset ds, LoadDataset(spec));
  std::vector<float>& x = ds.train.data;
  const size_t n = ds.train.rows, d = ds.train.cols;
  if (ds.distance == "angular" || ds.distance == "cosine") {
    for (size_t i = 0; i < n; ++i) {
      double norm = 0;
      for (size_t j = 0; j < d; ++j) norm += double{x[i * d + j]} * x[i * d + j];
      const float scale = norm > 0 ? static_cast<float>(1 / std::sqrt(norm)) : 1.0f;
      for (size_t j = 0; j < d; ++j) x[i * d + j] *= scale;
    }
  }
  std::printf("\n== index build on %s (%s) ==\n", spec.c_str(), ds.distance.c_str());
  return CompareBuilds(x, n, d, threads);
}

}  // namespace

absl::Status RunKMeansBench(const KMeansBenchOptions& o) {
  if (o.iterations < 1 || o.threads < 1) {
    return absl::InvalidArgumentError("--iterations and --threads must be at least 1");
  }
  std::printf("shoal_bench kmeans | device: %s | openblas: %s\n",
              index::gpu::GpuDescription().c_str(), BlasDescription().c_str());
  for (size_t n : o.n) {
    for (size_t d : o.d) {
      for (size_t k : o.k) {
        if (n == 0 || d == 0 || k == 0) return absl::InvalidArgumentError("--n, --d, --k: > 0");
        SHOAL_RETURN_IF_ERROR(RunShape(o, n, d, k));
      }
    }
  }
  if (!o.build_dataset.empty()) SHOAL_RETURN_IF_ERROR(CompareBuildsOn(o.build_dataset, o.threads));
  return absl::OkStatus();
}

void RegisterKMeansCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<KMeansBenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "kmeans", "k-means iterations: Shoal CPU / CUDA vs faiss::Clustering and cuBLAS GEMM");
  cmd->add_option("--n", options->n, "points (several: every combination runs)")
      ->capture_default_str();
  cmd->add_option("--d", options->d, "dimensions")->capture_default_str();
  cmd->add_option("--k", options->k, "clusters")->capture_default_str();
  cmd->add_option("--iterations", options->iterations, "Lloyd iterations timed")
      ->capture_default_str();
  cmd->add_option("--threads", options->threads, "CPU threads (ours and FAISS)")
      ->capture_default_str();
  cmd->add_option("--build-n", options->build_n, "points of the index-build comparison (0: skip)")
      ->capture_default_str();
  cmd->add_option("--gpu-budget-mb", options->gpu_budget_mb,
                  "also run the GPU streamed under this device budget (0: no)")
      ->capture_default_str();
  cmd->add_option("--build-dataset", options->build_dataset,
                  "also compare the index build on this dataset (a LoadDataset spec, e.g. "
                  "fashion-mnist)");
  cmd->add_option("--seed", options->seed, "data and initial centroids")->capture_default_str();
  cmd->add_option("--top-m", options->top_m,
                  "also time the device's top-m assignment over n / 50 of the points (0: no)")
      ->capture_default_str();
  cmd->add_flag("!--no-faiss", options->faiss, "skip faiss::Clustering");
  cmd->add_flag("!--no-cpu", options->cpu, "skip our CPU backend");
  cmd->callback([options, exit_code] {
    absl::Status status = RunKMeansBench(*options);
    if (!status.ok()) std::fprintf(stderr, "shoal_bench kmeans: %s\n", status.ToString().c_str());
    *exit_code = status.ok() ? 0 : 1;
  });
}

}  // namespace shoal::bench

// Micro-benchmarks of the clustering backend and the centroid tree (built, not run by ctest).
//   build/bin/kmeans_benchmark --benchmark_filter=AssignTopM
//   build/bin/kmeans_benchmark --benchmark_filter=TreeBuild   (needs Debian's fashion-mnist)
// AssignTopM reports GFLOP/s as 2 * n * k * d per call.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "index/clustering/centroid_tree.h"
#include "index/clustering/kmeans.h"
#include "shoal/dataset.h"

namespace shoal::index {
namespace {

std::vector<float> Random(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> v(count);
  for (float& x : v) x = g(rng);
  return v;
}

// Args: d, k, m, threads.
void BM_AssignTopM(benchmark::State& state) {
  const size_t n = 100000, d = state.range(0), k = state.range(1), m = state.range(2);
  const std::vector<float> x = Random(n * d, 1), c = Random(k * d, 2);
  auto backend = MakeCpuClusteringBackend(static_cast<uint32_t>(state.range(3)));
  std::vector<uint32_t> labels(n * m);
  std::vector<float> dists(n * m);
  for (auto _ : state) {
    auto s =
        backend->AssignTopM(x.data(), n, c.data(), k, d, m, nullptr, labels.data(), dists.data());
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
    benchmark::DoNotOptimize(labels.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * n * k * d * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(backend->name());
}
BENCHMARK(BM_AssignTopM)
    ->ArgNames({"d", "k", "m", "threads"})
    ->Args({128, 1024, 1, 1})
    ->Args({128, 1024, 1, 2})
    ->Args({784, 1024, 1, 1})
    ->Args({784, 1024, 1, 2})
    ->Args({128, 1024, 8, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

const AnnDataset* Dataset(const std::string& spec) {
  static auto* cache = new std::vector<std::pair<std::string, AnnDataset>>();
  for (const auto& [s, ds] : *cache) {
    if (s == spec) return &ds;
  }
  auto loaded = LoadDataset(spec);
  if (!loaded.ok()) return nullptr;
  cache->emplace_back(spec, std::move(loaded).value());
  return &cache->back().second;
}

// Builds a tree on `spec` into state.range(0) leaves with 2 threads; reports leaf count and the
// spread (std/mean) and max/mean of the leaf sizes.
void TreeBuild(benchmark::State& state, const std::string& spec) {
  const AnnDataset* ds = Dataset(spec);
  if (ds == nullptr) {
    state.SkipWithError(("cannot load " + spec).c_str());
    return;
  }
  auto backend = MakeCpuClusteringBackend(2);
  TreeOptions options;
  options.num_leaves = state.range(0);
  options.threads = 2;
  size_t leaves = 0;
  double spread = 0, max_ratio = 0;
  for (auto _ : state) {
    auto tree = CentroidTree::Build(*backend, ds->train.data.data(), ds->train.rows, ds->train.cols,
                                    options);
    if (!tree.ok()) {
      state.SkipWithError(std::string(tree.status().message()).c_str());
      return;
    }
    std::vector<double> size(tree->num_leaves(), 0);
    for (uint32_t l : tree->point_leaf()) ++size[l];
    const double mean = static_cast<double>(ds->train.rows) / size.size();
    double var = 0, biggest = 0;
    for (double s : size) {
      var += (s - mean) * (s - mean);
      biggest = std::max(biggest, s);
    }
    leaves = tree->num_leaves();
    spread = std::sqrt(var / size.size()) / mean;
    max_ratio = biggest / mean;
  }
  state.counters["leaves"] = static_cast<double>(leaves);
  state.counters["size_spread"] = spread;
  state.counters["max/mean"] = max_ratio;
}
BENCHMARK_CAPTURE(TreeBuild, fashion_mnist, std::string("fashion-mnist"))
    ->Arg(1000)
    ->Arg(4000)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(TreeBuild, synthetic_2m, std::string("synthetic:n=2000000,d=128,seed=1"))
    ->Arg(30000)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace
}  // namespace shoal::index

BENCHMARK_MAIN();

// Micro-benchmarks of FlatIndex: search throughput, and the latency of single Adds while the
// index grows (an Add runs under the collection's writer lock, so its worst case is a stall of
// every search).
//   build/bin/flat_index_benchmark --benchmark_filter=Growth
#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "index/distance/benchmark_data.h"
#include "index/flat/flat_index.h"
#include "index/id_filter.h"

namespace shoal::index {
namespace {

const FlatIndex& IndexOf(size_t n, size_t dim) {
  static auto* cache = new std::vector<std::pair<std::pair<size_t, size_t>, FlatIndex*>>();
  for (const auto& [key, index] : *cache) {
    if (key == std::make_pair(n, dim)) return *index;
  }
  const auto base = RandomFloats(n * dim, 5);
  auto* flat = new FlatIndex(dim, Metric::kL2);
  for (size_t i = 0; i < n; ++i) flat->Add(i, base.data() + i * dim);
  cache->push_back({{n, dim}, flat});
  return *flat;
}

// Args: {num_queries, threads, rows, dim, filtered}. Filtered: every third id allowed.
void BM_FlatSearch(benchmark::State& state) {
  const size_t nq = state.range(0), threads = state.range(1), n = state.range(2),
               dim = state.range(3);
  const FlatIndex& index = IndexOf(n, dim);
  IdBitmap allowed(n);
  for (size_t i = 0; i < n; i += 3) allowed.Set(i);
  const IdFilter* allow = state.range(4) != 0 ? &allowed : nullptr;
  const auto queries = RandomFloats(nq * dim, 6);
  for (auto _ : state) {
    benchmark::DoNotOptimize(index.Search(queries.data(), nq, 10, threads, allow));
  }
  state.counters["QPS"] =
      benchmark::Counter(double(nq) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FlatSearch)
    ->ArgNames({"nq", "threads", "rows", "dim", "filtered"})
    ->Args({1, 1, 20000, 784, 0})
    ->Args({256, 1, 20000, 784, 0})
    ->Args({256, 2, 20000, 784, 0})
    ->Args({256, 1, 20000, 784, 1})
    ->Args({1, 1, 200000, 128, 0})
    ->Args({16, 1, 200000, 128, 1})
    ->Args({256, 1, 200000, 128, 0})
    ->Unit(benchmark::kMillisecond);

double ThreadCpuMs() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

// Grows one index to `rows` x `dim` by single Adds, timing each: worst_ms is the longest Add
// (what a search waiting on the writer lock would see), over_1ms how many took longer than 1 ms.
// Wall time includes being preempted on a busy host; worst_cpu_ms counts only this thread's CPU
// time (page faults included), which preemption does not inflate.
void BM_FlatGrowth(benchmark::State& state) {
  const size_t rows = state.range(0), dim = state.range(1);
  constexpr size_t kPool = 4096;  // distinct vectors, reused: the source stays in cache
  const auto pool = RandomFloats(kPool * dim, 7);
  double worst_ms = 0, worst_cpu_ms = 0, over_1ms = 0;
  for (auto _ : state) {
    FlatIndex index(dim, Metric::kL2);
    for (size_t i = 0; i < rows; ++i) {
      const double cpu_start = ThreadCpuMs();
      const auto start = std::chrono::steady_clock::now();
      index.Add(i * 2654435761u, pool.data() + (i % kPool) * dim);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      worst_cpu_ms = std::max(worst_cpu_ms, ThreadCpuMs() - cpu_start);
      worst_ms = std::max(worst_ms, ms);
      over_1ms += ms > 1.0;
    }
    benchmark::DoNotOptimize(index.size());
  }
  state.counters["worst_ms"] = worst_ms;
  state.counters["worst_cpu_ms"] = worst_cpu_ms;
  state.counters["over_1ms"] = over_1ms;
}
BENCHMARK(BM_FlatGrowth)
    ->ArgNames({"rows", "dim"})
    ->Args({1 << 20, 64})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shoal::index

BENCHMARK_MAIN();

// Micro-benchmarks of the distance kernels (every supported level); FlatIndex search and growth
// are in flat_index_benchmark.cc.
//   build-*/bin/distance_benchmark --benchmark_filter=L2
#include <algorithm>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "index/distance/benchmark_data.h"
#include "index/distance/distance_internal.h"

namespace shoal::index {
namespace {

using internal::KernelLevelId;

// One kernel against rows of a 1 MiB-ish block so the data sits in L2, like a posting scan.
void BM_Kernel(benchmark::State& state, KernelLevelId level, bool l2) {
  if (!internal::LevelSupported(level)) {
    state.SkipWithError("level not supported on this CPU");
    return;
  }
  const size_t dim = state.range(0);
  const size_t rows = std::max<size_t>(1, (1 << 18) / dim);
  const auto q = RandomFloats(dim, 1);
  const auto x = RandomFloats(rows * dim, 2);
  const auto& kernels = internal::KernelsFor(level);
  const internal::DistanceFn fn = l2 ? kernels.l2_sqr : kernels.inner_product;
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(fn(q.data(), x.data() + i * dim, dim));
    if (++i == rows) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * dim * sizeof(float));
}

#define SHOAL_KERNEL_BENCHMARK(name, level, l2) \
  BENCHMARK_CAPTURE(BM_Kernel, name, level, l2)->Arg(16)->Arg(100)->Arg(128)->Arg(784)->Arg(960)

SHOAL_KERNEL_BENCHMARK(L2Sqr_scalar, KernelLevelId::kScalar, true);
SHOAL_KERNEL_BENCHMARK(L2Sqr_avx2, KernelLevelId::kAvx2, true);
SHOAL_KERNEL_BENCHMARK(L2Sqr_avx512, KernelLevelId::kAvx512, true);
SHOAL_KERNEL_BENCHMARK(InnerProduct_scalar, KernelLevelId::kScalar, false);
SHOAL_KERNEL_BENCHMARK(InnerProduct_avx2, KernelLevelId::kAvx2, false);
SHOAL_KERNEL_BENCHMARK(InnerProduct_avx512, KernelLevelId::kAvx512, false);

// The register-blocked kernel: 8 queries x 48 rows per call.
void BM_ScoreBlock(benchmark::State& state) {
  if (!internal::LevelSupported(KernelLevelId::kAvx512)) {
    state.SkipWithError("no AVX-512");
    return;
  }
  const size_t dim = state.range(0);
  const auto qpack = RandomFloats(dim * internal::kQueryBlock, 3);
  const auto panel = RandomFloats(dim * internal::kPanelWidth, 4);
  const std::vector<float> bias(internal::kPanelWidth, 0.0f);
  const std::vector<float> thresholds(internal::kQueryBlock, 0.0f);
  std::vector<float> scores(internal::kQueryBlock * internal::kPanelWidth);
  uint64_t masks[internal::kQueryBlock];
  for (auto _ : state) {
    internal::ScoreBlockAvx512(qpack.data(), panel.data(), dim, bias.data(), -2.0f,
                               thresholds.data(), scores.data(), masks);
    benchmark::DoNotOptimize(masks);
    benchmark::DoNotOptimize(scores.data());
  }
  // FLOPs: 2 per multiply-add.
  state.counters["GFLOPS"] = benchmark::Counter(
      2.0 * dim * internal::kQueryBlock * internal::kPanelWidth * state.iterations(),
      benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_ScoreBlock)->Arg(128)->Arg(784);

// SelectNotAbove over a posting's worth of bounds (state.range(0)), a tenth of them kept, as a
// scan's listing step sees them once its top is full.
void BM_SelectNotAbove(benchmark::State& state, KernelLevelId level) {
  if (!internal::LevelSupported(level)) {
    state.SkipWithError("level not supported on this CPU");
    return;
  }
  const size_t n = state.range(0);
  auto values = RandomFloats(n, 5);
  std::vector<float> sorted = values;
  std::nth_element(sorted.begin(), sorted.begin() + n / 10, sorted.end());
  const float bound = sorted[n / 10];
  std::vector<uint32_t> out(n);
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        level == KernelLevelId::kAvx512
            ? internal::SelectNotAboveAvx512(values.data(), n, bound, out.data())
            : internal::SelectNotAboveScalar(values.data(), n, bound, out.data()));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK_CAPTURE(BM_SelectNotAbove, scalar, KernelLevelId::kScalar)->Arg(64)->Arg(500);
BENCHMARK_CAPTURE(BM_SelectNotAbove, avx512, KernelLevelId::kAvx512)->Arg(64)->Arg(500);

}  // namespace
}  // namespace shoal::index

BENCHMARK_MAIN();

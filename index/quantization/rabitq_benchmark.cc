// RaBitQ scoring throughput: EstimatePacked codes/second for one prepared query against a posting
// of codes, per kernel level, versus exact L2Sqr over the full float vectors.
//
//   build/bin/rabitq_benchmark --benchmark_filter='d:128'
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "index/distance/distance.h"
#include "index/quantization/rabitq.h"
#include "index/quantization/rabitq_internal.h"

namespace shoal::index {
namespace {

constexpr size_t kCodes = 4096;  // one large posting; codes stay in L2 at d=128

std::vector<float> RandomRows(size_t rows, size_t dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(rows * dim);
  for (float& x : v) x = normal(rng);
  return v;
}

void BM_EstimateBatch(benchmark::State& state) {
  const size_t dim = state.range(0);
  const uint32_t bits = static_cast<uint32_t>(state.range(1));
  const auto level = static_cast<internal::KernelLevelId>(state.range(2));
  if (!internal::RabitqLevelSupported(level)) {
    state.SkipWithError("kernel level not supported here");
    return;
  }
  RaBitQ rq(dim, bits, 1);
  const std::vector<float> base = RandomRows(kCodes, dim, 2);
  const std::vector<float> centroid(dim, 0.0f);
  const std::vector<float> query = RandomRows(1, dim, 3);
  std::vector<uint8_t> codes(kCodes * rq.code_bytes());
  for (size_t i = 0; i < kCodes; ++i) {
    rq.Encode(&base[i * dim], centroid.data(), &codes[i * rq.code_bytes()]);
  }
  RaBitQ::Query q;
  rq.PrepareQuery(query.data(), centroid.data(), &q);
  std::vector<uint8_t> packed(rq.PackedBytes(kCodes));
  rq.Pack(codes.data(), kCodes, packed.data());
  std::vector<RaBitQ::Estimate> out(kCodes);
  for (auto _ : state) {
    EstimatePackedAtLevel(rq, level, q, packed.data(), kCodes, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["codes/s"] = benchmark::Counter(static_cast<double>(state.iterations() * kCodes),
                                                 benchmark::Counter::kIsRate);
  state.counters["code_bytes"] = static_cast<double>(rq.code_bytes());
}

void BM_PrepareQuery(benchmark::State& state) {
  const size_t dim = state.range(0);
  RaBitQ rq(dim, static_cast<uint32_t>(state.range(1)), 1);
  const std::vector<float> centroid(dim, 0.0f);
  const std::vector<float> query = RandomRows(1, dim, 3);
  RaBitQ::Query q;
  for (auto _ : state) {
    rq.PrepareQuery(query.data(), centroid.data(), &q);
    benchmark::DoNotOptimize(q.luts.data());
  }
}

// One posting as the SSD index scans it (SpannIndex::SearchQuantized): the per-(query, posting)
// preparation from the rotated query and centroid, then the scan of its n codes. At the sizes
// the auto spec gives (tens of codes per posting) the preparation is a large part of the total.
void BM_Posting(benchmark::State& state) {
  const size_t dim = state.range(0);
  const uint32_t bits = static_cast<uint32_t>(state.range(1));
  const size_t n = state.range(2);
  RaBitQ rq(dim, bits, 1);
  const std::vector<float> base = RandomRows(n, dim, 2);
  const std::vector<float> centroid = RandomRows(1, dim, 5);
  const std::vector<float> query = RandomRows(1, dim, 3);
  std::vector<uint8_t> codes(n * rq.code_bytes());
  for (size_t i = 0; i < n; ++i) {
    rq.Encode(&base[i * dim], centroid.data(), &codes[i * rq.code_bytes()]);
  }
  std::vector<uint8_t> packed(rq.PackedBytes(n));
  rq.Pack(codes.data(), n, packed.data());
  std::vector<float> rotated_q(rq.padded_dim()), rotated_c(rq.padded_dim());
  rq.rotation().Apply(query.data(), rotated_q.data());
  rq.rotation().Apply(centroid.data(), rotated_c.data());
  RaBitQ::Query q;
  std::vector<RaBitQ::Estimate> out(n);
  for (auto _ : state) {
    rq.PrepareRotated(rotated_q.data(), rotated_c.data(), &q);
    if (n > 0) rq.EstimatePacked(q, packed.data(), n, out.data());
    benchmark::DoNotOptimize(out.data());
  }
}

// Encoding cost (what an index build pays per posting entry): extended codes search for their
// grid scale, 1-bit codes do not.
void BM_Encode(benchmark::State& state) {
  const size_t dim = state.range(0);
  RaBitQ rq(dim, static_cast<uint32_t>(state.range(1)), 1);
  const std::vector<float> centroid(dim, 0.0f);
  const std::vector<float> x = RandomRows(1, dim, 4);
  std::vector<uint8_t> code(rq.code_bytes());
  for (auto _ : state) {
    rq.Encode(x.data(), centroid.data(), code.data());
    benchmark::DoNotOptimize(code.data());
  }
}

void BM_L2Sqr(benchmark::State& state) {
  const size_t dim = state.range(0);
  const std::vector<float> base = RandomRows(kCodes, dim, 2);
  const std::vector<float> query = RandomRows(1, dim, 3);
  std::vector<float> out(kCodes);
  for (auto _ : state) {
    for (size_t i = 0; i < kCodes; ++i) out[i] = L2Sqr(query.data(), &base[i * dim], dim);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["codes/s"] = benchmark::Counter(static_cast<double>(state.iterations() * kCodes),
                                                 benchmark::Counter::kIsRate);
}

// Args: dim, bits, kernel level (0 scalar, 1 avx2, 2 avx512).
BENCHMARK(BM_EstimateBatch)
    ->ArgNames({"d", "bits", "level"})
    ->ArgsProduct({{128, 784}, {1, 2, 4}, {0, 1, 2}});
BENCHMARK(BM_PrepareQuery)->ArgNames({"d", "bits"})->ArgsProduct({{128, 784}, {1, 4}});
// Args: dim, bits, codes (0: the preparation alone).
BENCHMARK(BM_Posting)
    ->ArgNames({"d", "bits", "n"})
    ->Args({128, 5, 0})
    ->Args({128, 5, 65})
    ->Args({784, 3, 0})
    ->Args({784, 3, 82});
BENCHMARK(BM_Encode)->ArgNames({"d", "bits"})->ArgsProduct({{128, 784}, {1, 2, 4}});
BENCHMARK(BM_L2Sqr)->ArgNames({"d"})->Arg(128)->Arg(784);

}  // namespace
}  // namespace shoal::index

BENCHMARK_MAIN();

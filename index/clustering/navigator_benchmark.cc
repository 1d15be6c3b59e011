// Micro-benchmark of the query navigator: CentroidTree::NearestLeaves on the float centroids vs
// the half copy, over Fashion-MNIST's test queries (built, not run by ctest; needs Debian's
// fashion-mnist), or another dataset's.
//   build/bin/navigator_benchmark                        builds a 1200-leaf tree first (~1 min)
//   SHOAL_NAV_TREE=DIR/index/c1.g2/centroids.ckpt build/bin/navigator_benchmark   a built index's
//   SHOAL_NAV_DATASET=synthetic:n=100000,d=64,q=500,clusters=100,seed=3
//   build/bin/navigator_benchmark
//       --benchmark_filter=Navigate/float/8    an updater's placement as in `shoal_bench updates`
// Navigate args: m (beam = m, as SpannIndex navigates by default). Counters: same_set = fraction of
// queries whose m leaves equal the float descent's; overlap = mean fraction of shared leaves.
#include <algorithm>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "index/clustering/centroid_tree.h"
#include "index/clustering/kmeans.h"
#include "index/clustering/navigation_copy.h"
#include "shoal/dataset.h"

namespace shoal::index {
namespace {

struct Setup {
  AnnDataset ds;
  std::unique_ptr<CentroidTree> tree;
};

const Setup* Load() {
  static const Setup* setup = []() -> const Setup* {
    const char* name = std::getenv("SHOAL_NAV_DATASET");
    auto ds = LoadDataset(name != nullptr ? name : "fashion-mnist");
    if (!ds.ok()) return nullptr;
    auto* s = new Setup{std::move(ds).value(), nullptr};
    absl::StatusOr<CentroidTree> tree = absl::UnknownError("");
    if (const char* path = std::getenv("SHOAL_NAV_TREE")) {
      std::ifstream in(path, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), {});
      tree = CentroidTree::Deserialize(bytes, path);
    } else {
      auto backend = MakeCpuClusteringBackend(2);
      TreeOptions options;
      options.num_leaves = s->ds.train.rows / 50;  // centroid_ratio 0.02
      options.threads = 2;
      tree = CentroidTree::Build(*backend, s->ds.train.data.data(), s->ds.train.rows,
                                 s->ds.train.cols, options);
    }
    if (!tree.ok()) return nullptr;
    s->tree = std::make_unique<CentroidTree>(std::move(tree).value());
    return s;
  }();
  return setup;
}

void Navigate(benchmark::State& state, CentroidScoring scoring) {
  const Setup* s = Load();
  if (s == nullptr) {
    state.SkipWithError("the dataset or SHOAL_NAV_TREE cannot be loaded");
    return;
  }
  const size_t m = state.range(0), nq = s->ds.test.rows;
  std::vector<std::pair<float, uint32_t>> got, want;
  double same = 0, overlap = 0;
  for (size_t i = 0; i < nq; ++i) {
    s->tree->NearestLeaves(s->ds.test.Row(i), m, m, &got, scoring);
    s->tree->NearestLeaves(s->ds.test.Row(i), m, m, &want, CentroidScoring::kFloat);
    auto leaf_set = [](std::vector<std::pair<float, uint32_t>> v) {
      std::vector<uint32_t> ids;
      for (const auto& e : v) ids.push_back(e.second);
      std::sort(ids.begin(), ids.end());
      return ids;
    };
    same += leaf_set(got) == leaf_set(want);
    for (const auto& g : got) {
      overlap += std::any_of(want.begin(), want.end(),
                             [&](const auto& w) { return w.second == g.second; });
    }
  }
  size_t i = 0;
  for (auto _ : state) {
    s->tree->NearestLeaves(s->ds.test.Row(i), m, m, &got, scoring);
    benchmark::DoNotOptimize(got.data());
    if (++i == nq) i = 0;
  }
  state.counters["same_set"] = same / nq;
  state.counters["overlap"] = overlap / (nq * m);
  state.counters["leaves"] = static_cast<double>(s->tree->num_leaves());
}
// The flat navigator (CentroidTree::ScanLeaves: every leaf scored, the m nearest kept), which the
// index uses where the tree's descent costs more (low dimension, many postings asked for).
void Scan(benchmark::State& state, CentroidScoring scoring) {
  const Setup* s = Load();
  if (s == nullptr) {
    state.SkipWithError("the dataset or SHOAL_NAV_TREE cannot be loaded");
    return;
  }
  const size_t m = state.range(0), nq = s->ds.test.rows;
  std::vector<std::pair<float, uint32_t>> got;
  size_t i = 0;
  for (auto _ : state) {
    s->tree->ScanLeaves(s->ds.test.Row(i), m, &got, scoring);
    benchmark::DoNotOptimize(got.data());
    if (++i == nq) i = 0;
  }
  state.counters["leaves"] = static_cast<double>(s->tree->num_leaves());
}
// Building the copy (as every index open does) over the tree's leaf centroids.
void CopyBuild(benchmark::State& state) {
  const Setup* s = Load();
  if (s == nullptr) {
    state.SkipWithError("the dataset or SHOAL_NAV_TREE cannot be loaded");
    return;
  }
  for (auto _ : state) {
    NavigationCopy copy =
        NavigationCopy::Build(s->tree->leaf_centroids(), s->tree->num_leaves(), s->tree->dim());
    benchmark::DoNotOptimize(copy);
  }
}
BENCHMARK(CopyBuild)->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(Navigate, float, CentroidScoring::kFloat)->Arg(2)->Arg(8)->Arg(16)->Arg(32);
BENCHMARK_CAPTURE(Navigate, half, CentroidScoring::kHalf)->Arg(8)->Arg(16)->Arg(32);
BENCHMARK_CAPTURE(Scan, half, CentroidScoring::kHalf)->Arg(8)->Arg(64);

}  // namespace
}  // namespace shoal::index

BENCHMARK_MAIN();

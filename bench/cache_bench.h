// `shoal_bench cache`: the semantic cache on a seeded synthetic workload (issue 17), with its
// peers measured in the same run on the same query stream:
//   exact      exact-prompt matches only (threshold 1)
//   global T   one threshold for every category, swept 0.70..0.99
//   per-cat    each category's best fixed threshold from the sweep (false hits <= delta there)
//   shoal      Shoal's learned thresholds: start at --base-threshold, delta = --delta, feedback
//              on every hit (the client learns whether a hit was right), neighbour learning
// The workload (bench/cache_workload.h; --mix paper, the default, or legacy) is printed first
// with its ceilings: what an exact and a perfect semantic cache could hit on the stream alone.
// Prints hit rate and false-hit rate per peer, the curves (for each false-hit budget in
// --curve-deltas: the best global threshold, per-category thresholds and the learned peer run
// at that delta) and the ratio the goal names: shoal hit rate / best global hit rate at
// false hits <= delta.
// --latency-entries N instead measures lookup latency (p50/p99/max, hit and miss) of one shard
// holding N random entries, pinned to one core, and the RSS growth per entry
// (cache_latency_bench.cc). --backend-qps Q adds a simulated model backend serving Q calls per
// simulated second from a queue (its load reported to Shoal before each lookup) and runs the
// learned peer without and with the load band (--load-band): model calls, hit and false rates.
#ifndef SHOAL_BENCH_CACHE_BENCH_H_
#define SHOAL_BENCH_CACHE_BENCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "bench/cache_workload.h"

namespace CLI {
class App;
}  // namespace CLI

namespace shoal::bench {

struct CacheBenchOptions {
  uint64_t seed = 1;
  size_t queries = 20000;
  uint32_t dimension = 64;
  size_t intents = 200;  // per category (legacy mix)
  double delta = 0.02;   // target false-hit rate
  double base_threshold = 0.85;
  double step_seconds = 0.1;
  std::string dir;         // scratch (default: a fresh one under /tmp)
  double backend_qps = 0;  // > 0: also run the overloaded-backend comparison
  double load_band = 0.05;
  bool backend_only = false;  // only the backend runs
  CacheMix mix = CacheMix::kPaper;
  std::vector<double> curve_deltas = {0.005, 0.01, 0.02, 0.03, 0.05};
};

absl::Status RunCacheBench(const CacheBenchOptions& options);

struct CacheLatencyOptions {
  uint64_t seed = 1;
  size_t entries = 0;  // 0: not asked for
  uint32_t dimension = 384;
  size_t lookups = 1000;  // of each kind (hit, miss)
  size_t response_bytes = 256;
  std::string dir;
};

absl::Status RunCacheLatencyBench(const CacheLatencyOptions& options);

void RegisterCacheCommand(CLI::App& app, int* exit_code);

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_CACHE_BENCH_H_

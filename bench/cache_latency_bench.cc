// `shoal_bench cache --latency-entries N`: lookup latency of one semantic-cache shard holding N
// entries (issue 17's "p99 <= 1 ms hit or miss at 1,000,000 entries of 384-d on one core"),
// and the RAM each entry costs. See cache_bench.h.
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench/cache_bench.h"
#include "shoal/db.h"

namespace shoal::bench {
namespace {

// Resident set size of this process in bytes (0 when /proc is unreadable).
uint64_t RssBytes() {
  std::ifstream in("/proc/self/status");
  std::string word;
  while (in >> word) {
    if (word == "VmRSS:") {
      uint64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

std::vector<float> RandomUnit(uint32_t dimension, std::mt19937_64& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> v(dimension);
  double n = 0;
  for (float& x : v) {
    x = normal(rng);
    n += double{x} * x;
  }
  for (float& x : v) x = static_cast<float>(x / std::sqrt(n));
  return v;
}

struct Percentiles {
  double p50 = 0, p99 = 0, max = 0;
};

Percentiles Of(std::vector<double> micros) {
  std::sort(micros.begin(), micros.end());
  auto at = [&](double q) {
    return micros[std::min(micros.size() - 1, static_cast<size_t>(q * micros.size()))];
  };
  return {at(0.5), at(0.99), micros.back()};
}

}  // namespace

absl::Status RunCacheLatencyBench(const CacheLatencyOptions& o) {
  if (o.entries == 0 || o.lookups == 0) {
    return absl::InvalidArgumentError("--latency-entries and --latency-lookups: must be > 0");
  }
  // One core: pin the process (lookups search with one thread either way).
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
  sched_setaffinity(0, sizeof(one), &one);
  std::string dir = o.dir;
  if (dir.empty()) {
    std::string tmpl = "/tmp/shoal_cache_latency_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return absl::InternalError("mkdtemp failed");
    dir = tmpl;
  }
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<DB> db, DB::Open(dir, Options{}));
  SHOAL_RETURN_IF_ERROR(db->CreateCache({.name = "lat", .dimension = o.dimension}));
  SHOAL_RETURN_IF_ERROR(db->SetCachePolicy(
      "lat", "", {.threshold = 0.9, .target_false_hit_rate = 0}));  // no neighbour search
  std::mt19937_64 rng(o.seed);
  std::vector<std::vector<float>> kept;  // vectors later looked up as hits
  const uint64_t rss_before = RssBytes();
  const auto fill_start = std::chrono::steady_clock::now();
  const std::string response(o.response_bytes, 'r');
  for (size_t i = 0; i < o.entries; ++i) {
    CacheStoreRequest s{.lookup = {.partition = {.model = "m"},
                                   .category = "c",
                                   .embedding = RandomUnit(o.dimension, rng)},
                        .response = response};
    if (i % (o.entries / o.lookups + 1) == 0 && kept.size() < o.lookups) {
      kept.push_back(s.lookup.embedding);
    }
    SHOAL_RETURN_IF_ERROR(db->CacheStore("lat", s, {}).status());
  }
  const double fill_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - fill_start).count();
  const uint64_t rss_after = RssBytes();
  std::vector<double> hit_us, miss_us;
  for (size_t i = 0; i < o.lookups; ++i) {
    for (bool hit : {true, false}) {
      CacheLookupRequest q{.partition = {.model = "m"},
                           .category = "c",
                           .embedding = hit ? kept[i % kept.size()] : RandomUnit(o.dimension, rng)};
      const auto start = std::chrono::steady_clock::now();
      SHOAL_ASSIGN_OR_RETURN(CacheLookupResult r, db->CacheLookup("lat", q));
      const double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count();
      if (r.hit != hit) {
        return absl::InternalError(absl::StrCat("lookup ", i, ": expected a ", hit ? "hit" : "miss",
                                                ", similarity ", r.similarity));
      }
      (hit ? hit_us : miss_us).push_back(us);
    }
  }
  const Percentiles h = Of(hit_us), m = Of(miss_us);
  std::printf("cache latency: %zu entries of %u-d (one shard), %zu hits + %zu misses, one core\n",
              o.entries, o.dimension, hit_us.size(), miss_us.size());
  std::printf("fill: %.1f s (%.0f stores/s)\n", fill_s, o.entries / fill_s);
  std::printf("hit  lookup us: p50 %.1f  p99 %.1f  max %.1f\n", h.p50, h.p99, h.max);
  std::printf("miss lookup us: p50 %.1f  p99 %.1f  max %.1f\n", m.p50, m.p99, m.max);
  std::printf("RSS growth per entry: %.0f bytes (vector alone %u bytes; response %zu bytes)\n",
              static_cast<double>(rss_after - rss_before) / o.entries, o.dimension * 4,
              o.response_bytes);
  std::printf("goal p99 <= 1000 us: hit %s, miss %s\n", h.p99 <= 1000 ? "met" : "NOT met",
              m.p99 <= 1000 ? "met" : "NOT met");
  db.reset();
  if (o.dir.empty()) std::filesystem::remove_all(dir);
  return absl::OkStatus();
}

}  // namespace shoal::bench

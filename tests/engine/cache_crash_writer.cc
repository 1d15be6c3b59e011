// The child of cache_crash_test: stores semantic-cache entries, synced, as fast as it can,
// until it is killed. Protocol on stdout, one line each, flushed:
//   "P <i>"  store i is about to start        "A <i> <id>"  store i is acknowledged (durable)
// Entry i: prompt "p<i>", response "r<i>", category "keep" (no TTL) for even i, "short" (a
// 1-second TTL) for odd i. Usage: cache_crash_writer DIR FIRST_I.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "shoal/db.h"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  auto db = shoal::DB::Open(argv[1], shoal::Options{});
  if (!db.ok()) {
    std::fprintf(stderr, "open: %s\n", db.status().ToString().c_str());
    return 1;
  }
  absl::Status created = (*db)->CreateCache({.name = "crash", .dimension = 8});
  if (!created.ok() && !absl::IsAlreadyExists(created)) return 1;
  if (!(*db)->SetCachePolicy("crash", "keep", {.threshold = 1.0}).ok()) return 1;
  if (!(*db)->SetCachePolicy("crash", "short", {.threshold = 1.0, .ttl_seconds = 1}).ok()) {
    return 1;
  }
  std::mt19937 rng(std::stoul(argv[2]));
  std::normal_distribution<float> normal;
  for (uint64_t i = std::stoull(argv[2]);; ++i) {
    shoal::CacheStoreRequest r;
    r.lookup.category = i % 2 == 0 ? "keep" : "short";
    r.lookup.partition.tenant = "t" + std::to_string(i % 3);
    r.lookup.prompt = "p" + std::to_string(i);
    r.lookup.embedding.resize(8);
    for (float& x : r.lookup.embedding) x = normal(rng);
    r.response = "r" + std::to_string(i);
    std::printf("P %llu\n", static_cast<unsigned long long>(i));
    std::fflush(stdout);
    auto id = (*db)->CacheStore("crash", r, {.sync = true});
    if (!id.ok()) {
      std::fprintf(stderr, "store: %s\n", id.status().ToString().c_str());
      return 1;
    }
    std::printf("A %llu %llu\n", static_cast<unsigned long long>(i),
                static_cast<unsigned long long>(*id));
    std::fflush(stdout);
  }
}

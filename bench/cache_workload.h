// `shoal_bench cache`'s seeded query stream (issue 17): categories whose intents have a given
// density (cosine to the category centre), a repetition law (Zipf exponent, 0 = uniform),
// paraphrase noise (cosine of a phrasing to its intent; 8 phrasings per intent drawn by their own
// Zipf law, so exact repeats happen), hard negatives (a twin intent at cosine 0.97 with a
// different answer, asked with a given probability) and answer versions that change every
// `period` simulated seconds. A hit is correct when its answer is the asked intent's current
// version (CacheAnswer).
//
//   CacheWorkload w = MakeCacheWorkload({.seed = 1, .queries = 20000, .mix = CacheMix::kPaper});
//   std::vector<CacheCeiling> c = StreamCeilings(w);   // what exact / an oracle could hit
//
// Two mixes (docs/PERFORMANCE.md, "Semantic cache", says why):
//   kPaper   per-category parameters set so that, on the stream alone, a perfect semantic cache
//            hits at the middle of the published range of the category-aware caching paper
//            (code 40–60%, chat and stocks 5–15%) and the exact-match peer inside the range;
//   kLegacy  the mix of the sessions before (200 intents per category, 8 uniform phrasings:
//            exact repeats carry ~70% of the traffic).
// Embeddings are made per (category, intent, phrasing) from seeds derived from `seed`, so only
// the phrasings the stream asks for are built. Not thread-safe (a plain value).
#ifndef SHOAL_BENCH_CACHE_WORKLOAD_H_
#define SHOAL_BENCH_CACHE_WORKLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

namespace shoal::bench {

struct CacheCategorySpec {
  const char* name;
  double density;        // cosine of intents to the category centre (<= 0: random)
  double zipf;           // repetition exponent over intents; 0 = uniform
  double paraphrase;     // cosine of a phrasing to its intent
  double hard_negative;  // probability that a query asks the intent's twin instead
  double period_s;       // answer version period; 0 = never changes
  double share;          // of the queries
  int64_t ttl_s;         // every peer's TTL for the category; 0 = none
  // Intents = this × the category's expected query count; 0: CacheWorkloadOptions::intents.
  double intents_per_query;
  double phrasing_zipf;  // popularity law of an intent's phrasings; 0 = uniform
};

enum class CacheMix { kPaper, kLegacy };

// The mix's categories (static storage).
const std::vector<CacheCategorySpec>& CacheMixCategories(CacheMix mix);

struct CacheWorkloadOptions {
  uint64_t seed = 1;
  size_t queries = 20000;
  uint32_t dimension = 64;
  size_t intents = 200;  // per category, for mixes that fix it (kLegacy)
  double step_seconds = 0.1;
  CacheMix mix = CacheMix::kPaper;
};

struct CacheQuery {
  int category;
  int intent;  // twins (hard negatives) are intent + intents of the category
  int phrasing;
  double time_s;
};

struct CacheWorkload {
  std::vector<CacheCategorySpec> categories;
  std::vector<int> intents;  // per category (twins not counted)
  std::vector<CacheQuery> queries;
  std::vector<std::vector<float>> embeddings;  // per query, unit length
};

CacheWorkload MakeCacheWorkload(const CacheWorkloadOptions& options);

// The answer the model gives `q` (intent and current version).
std::string CacheAnswer(const CacheWorkload& w, const CacheQuery& q);

// What the stream allows per category, with no cache involved: the share of its queries that an
// exact-prompt cache answers correctly (`exact`: it stores on its misses and keeps an entry for
// the category's TTL from its store), an oracle cache's hits (`oracle`: it stores on its misses
// too, keeps an entry for the TTL from its store, and hits exactly when a live entry holds the
// asked intent at its current version: the most any threshold policy can hit without a false
// hit), and an upper bound on every policy (`semantic`: the same intent was asked at its current
// version within the TTL; a cache holds only answers asked before).
struct CacheCeiling {
  uint64_t queries = 0;
  double exact = 0;
  double oracle = 0;
  double semantic = 0;
};
std::vector<CacheCeiling> StreamCeilings(const CacheWorkload& w);

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_CACHE_WORKLOAD_H_

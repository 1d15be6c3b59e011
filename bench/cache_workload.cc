#include "bench/cache_workload.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"

namespace shoal::bench {
namespace {

constexpr int kPhrasings = 8;

// The paper mix: intents per query and the phrasing law were chosen from the stream's ceilings
// alone (StreamCeilings), before any policy was run on it: docs/PERFORMANCE.md.
const std::vector<CacheCategorySpec> kPaperMix = {
    {"code", 0.90, 1.0, 0.95, 0.20, 0, 0.4, 0, 12.5, 2.5},
    {"chat", 0.00, 0.0, 0.90, 0.05, 0, 0.4, 0, 4.0, 2.5},
    {"stocks", 0.50, 0.8, 0.95, 0.10, 600, 0.2, 300, 17.5, 2.5},
};
const std::vector<CacheCategorySpec> kLegacyMix = {
    {"code", 0.90, 1.1, 0.95, 0.20, 0, 0.4, 0, 0, 0},
    {"chat", 0.00, 0.0, 0.90, 0.05, 0, 0.4, 0, 0, 0},
    {"stocks", 0.50, 0.8, 0.95, 0.10, 600, 0.2, 300, 0, 0},
};

using Vec = std::vector<float>;

Vec Normalized(Vec v) {
  double n = 0;
  for (float x : v) n += double{x} * x;
  for (float& x : v) x = static_cast<float>(x / std::sqrt(n));
  return v;
}

// A unit vector at cosine `c` to unit vector `base` (c <= 0: random).
Vec AtCosine(const Vec& base, double c, std::mt19937_64& rng) {
  std::normal_distribution<float> normal;
  Vec u(base.size());
  for (float& x : u) x = normal(rng);
  if (c <= 0) return Normalized(u);
  double dot = 0;
  for (size_t i = 0; i < u.size(); ++i) dot += double{u[i]} * base[i];
  for (size_t i = 0; i < u.size(); ++i) u[i] -= static_cast<float>(dot * base[i]);
  u = Normalized(u);
  const double s = std::sqrt(1 - c * c);
  for (size_t i = 0; i < u.size(); ++i) u[i] = static_cast<float>(c * base[i] + s * u[i]);
  return Normalized(u);
}

uint64_t Mix64(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::mt19937_64 KeyRng(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  return std::mt19937_64(Mix64(Mix64(Mix64(Mix64(seed) ^ a) ^ b) ^ c));
}

std::discrete_distribution<int> Zipf(int n, double exponent) {
  std::vector<double> weights(n);
  for (int i = 0; i < n; ++i) weights[i] = exponent > 0 ? 1.0 / std::pow(i + 1, exponent) : 1.0;
  return {weights.begin(), weights.end()};
}

// Embeddings of one category, built on demand: centre, intents, twins, phrasings.
class CategoryVectors {
 public:
  CategoryVectors(uint64_t seed, int category, const CacheCategorySpec& spec, int intents,
                  uint32_t dimension)
      : seed_(seed), category_(category), spec_(spec), intents_(intents) {
    std::mt19937_64 rng = KeyRng(seed, category, ~0ULL, ~0ULL);
    centre_ = AtCosine(Vec(dimension, 0), 0, rng);
  }

  Vec Phrasing(int intent, int phrasing) {
    std::mt19937_64 rng = KeyRng(seed_, category_, intent, phrasing);
    return AtCosine(Intent(intent), spec_.paraphrase, rng);
  }

 private:
  const Vec& Intent(int intent) {
    auto it = intents_made_.find(intent);
    if (it != intents_made_.end()) return it->second;
    Vec v;
    if (intent >= intents_) {  // a twin: at 0.97 to its intent
      std::mt19937_64 rng = KeyRng(seed_, category_, intent, kPhrasings);
      v = AtCosine(Intent(intent - intents_), 0.97, rng);
    } else {
      std::mt19937_64 rng = KeyRng(seed_, category_, intent, kPhrasings + 1);
      v = AtCosine(centre_, spec_.density, rng);
    }
    return intents_made_.emplace(intent, std::move(v)).first->second;
  }

  uint64_t seed_;
  int category_;
  CacheCategorySpec spec_;
  int intents_;
  Vec centre_;
  std::map<int, Vec> intents_made_;
};

}  // namespace

const std::vector<CacheCategorySpec>& CacheMixCategories(CacheMix mix) {
  return mix == CacheMix::kPaper ? kPaperMix : kLegacyMix;
}

CacheWorkload MakeCacheWorkload(const CacheWorkloadOptions& o) {
  CacheWorkload w;
  w.categories = CacheMixCategories(o.mix);
  std::mt19937_64 rng(o.seed);
  std::vector<std::discrete_distribution<int>> popularity, phrasing;
  std::vector<CategoryVectors> vectors;
  for (size_t c = 0; c < w.categories.size(); ++c) {
    const CacheCategorySpec& s = w.categories[c];
    const double expected = static_cast<double>(o.queries) * s.share;
    const int n = s.intents_per_query > 0
                      ? std::max(1, static_cast<int>(std::lround(s.intents_per_query * expected)))
                      : static_cast<int>(o.intents);
    w.intents.push_back(n);
    popularity.push_back(Zipf(n, s.zipf));
    phrasing.push_back(Zipf(kPhrasings, s.phrasing_zipf));
    vectors.emplace_back(o.seed, static_cast<int>(c), s, n, o.dimension);
  }
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t q = 0; q < o.queries; ++q) {
    double r = u(rng);
    int cat = 0;
    while (cat + 1 < static_cast<int>(w.categories.size()) && r > w.categories[cat].share) {
      r -= w.categories[cat].share;
      ++cat;
    }
    int intent = popularity[cat](rng);
    if (u(rng) < w.categories[cat].hard_negative) intent += w.intents[cat];
    const int p = phrasing[cat](rng);
    w.queries.push_back({cat, intent, p, static_cast<double>(q) * o.step_seconds});
    w.embeddings.push_back(vectors[cat].Phrasing(intent, p));
  }
  return w;
}

std::string CacheAnswer(const CacheWorkload& w, const CacheQuery& q) {
  const double period = w.categories[q.category].period_s;
  const int64_t version = period > 0 ? static_cast<int64_t>(q.time_s / period) : 0;
  return absl::StrCat(w.categories[q.category].name, ":", q.intent, ":v", version);
}

std::vector<CacheCeiling> StreamCeilings(const CacheWorkload& w) {
  std::vector<CacheCeiling> out(w.categories.size());
  struct Stored {
    double time_s;
    std::string answer;
  };
  // Per category and key: the exact cache's entry (its last store), the oracle's (its newest
  // store of the intent: it expires last and holds the newest version, so an older entry never
  // hits where it misses), and the intent's last ask.
  std::vector<std::map<std::pair<int, int>, Stored>> exact(out.size()), oracle(out.size()),
      asked(out.size());
  std::vector<uint64_t> exact_hits(out.size()), oracle_hits(out.size()), semantic_hits(out.size());
  for (const CacheQuery& q : w.queries) {
    const double ttl = static_cast<double>(w.categories[q.category].ttl_s);
    const std::string answer = CacheAnswer(w, q);
    auto live = [&](const std::map<std::pair<int, int>, Stored>& held, std::pair<int, int> key) {
      auto it = held.find(key);
      return it != held.end() && (ttl <= 0 || q.time_s < it->second.time_s + ttl) &&
             it->second.answer == answer;
    };
    ++out[q.category].queries;
    const std::pair<int, int> phrase{q.intent, q.phrasing}, intent{q.intent, -1};
    if (live(exact[q.category], phrase)) {
      ++exact_hits[q.category];
    } else {
      exact[q.category][phrase] = {q.time_s, answer};  // a miss: the answer is stored
    }
    if (live(oracle[q.category], intent)) {
      ++oracle_hits[q.category];
    } else {
      oracle[q.category][intent] = {q.time_s, answer};
    }
    // Any cache stores only answers asked before, so an intent asked at this version within
    // the TTL bounds every policy's hits.
    semantic_hits[q.category] += live(asked[q.category], intent);
    asked[q.category][intent] = {q.time_s, answer};
  }
  for (size_t c = 0; c < out.size(); ++c) {
    if (out[c].queries == 0) continue;
    out[c].exact = static_cast<double>(exact_hits[c]) / static_cast<double>(out[c].queries);
    out[c].oracle = static_cast<double>(oracle_hits[c]) / static_cast<double>(out[c].queries);
    out[c].semantic = static_cast<double>(semantic_hits[c]) / static_cast<double>(out[c].queries);
  }
  return out;
}

}  // namespace shoal::bench

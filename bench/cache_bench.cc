#include "bench/cache_bench.h"

#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "cache/clock.h"
#include "db/db_impl.h"
#include "shoal/db.h"

namespace shoal::bench {
namespace {

struct CategorySpec {
  const char* name;
  double density;     // cosine of intents to the category centre
  double zipf;        // repetition exponent; 0 = uniform
  double paraphrase;  // cosine of a paraphrase to its intent
  double hard_negative;
  double period_s;  // answer version period; 0 = never changes
  double share;     // of the queries
  int64_t ttl_s;    // every peer's TTL for the category
};

constexpr CategorySpec kCategories[] = {
    {"code", 0.90, 1.1, 0.95, 0.20, 0, 0.4, 0},
    {"chat", 0.00, 0.0, 0.90, 0.05, 0, 0.4, 0},
    {"stocks", 0.50, 0.8, 0.95, 0.10, 600, 0.2, 300},
};
constexpr int kParaphrases = 8;

using Vec = std::vector<float>;

Vec Normalized(Vec v) {
  double n = 0;
  for (float x : v) n += double{x} * x;
  for (float& x : v) x = static_cast<float>(x / std::sqrt(n));
  return v;
}

// A unit vector at cosine `c` to unit vector `base` (c <= 0 near-orthogonal: random).
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

struct Query {
  int category;
  int intent;  // twins (hard negatives) are intent + intents
  int paraphrase;
  double time_s;
};

struct Workload {
  // vectors[category][intent][paraphrase]
  std::vector<std::vector<std::vector<Vec>>> vectors;
  std::vector<Query> queries;
};

Workload MakeWorkload(const CacheBenchOptions& o) {
  std::mt19937_64 rng(o.seed);
  Workload w;
  const int n = static_cast<int>(o.intents);
  for (const CategorySpec& c : kCategories) {
    Vec centre = AtCosine(Vec(o.dimension, 0), 0, rng);
    std::vector<std::vector<Vec>> intents(2 * n);
    for (int i = 0; i < n; ++i) {
      Vec intent = AtCosine(centre, c.density, rng);
      Vec twin = AtCosine(intent, 0.97, rng);
      for (int p = 0; p < kParaphrases; ++p) {
        intents[i].push_back(AtCosine(intent, c.paraphrase, rng));
        intents[i + n].push_back(AtCosine(twin, c.paraphrase, rng));
      }
    }
    w.vectors.push_back(std::move(intents));
  }
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::discrete_distribution<int>> popularity;
  for (const CategorySpec& c : kCategories) {
    std::vector<double> weights(n);
    for (int i = 0; i < n; ++i) weights[i] = c.zipf > 0 ? 1.0 / std::pow(i + 1, c.zipf) : 1.0;
    popularity.emplace_back(weights.begin(), weights.end());
  }
  for (size_t q = 0; q < o.queries; ++q) {
    double r = u(rng);
    int cat = 0;
    while (cat + 1 < static_cast<int>(std::size(kCategories)) && r > kCategories[cat].share) {
      r -= kCategories[cat].share;
      ++cat;
    }
    int intent = popularity[cat](rng);
    if (u(rng) < kCategories[cat].hard_negative) intent += n;
    w.queries.push_back({cat, intent, static_cast<int>(rng() % kParaphrases),
                         static_cast<double>(q) * o.step_seconds});
  }
  return w;
}

struct Outcome {
  uint64_t lookups = 0, hits = 0, false_hits = 0;
  double hit_rate() const { return lookups ? double(hits) / lookups : 0; }
  double false_rate() const { return lookups ? double(false_hits) / lookups : 0; }
  void Add(const Outcome& o) {
    lookups += o.lookups;
    hits += o.hits;
    false_hits += o.false_hits;
  }
};
using PerCategory = std::vector<Outcome>;

std::string Answer(const Query& q) {
  const double period = kCategories[q.category].period_s;
  const int64_t version = period > 0 ? static_cast<int64_t>(q.time_s / period) : 0;
  return absl::StrCat(kCategories[q.category].name, ":", q.intent, ":v", version);
}

// The simulated model backend: serves `qps` calls per simulated second from a queue; its load
// (queued calls / queue_limit, at most 1) is reported to Shoal before every lookup.
struct Backend {
  double qps = 0;  // 0: no backend (nothing reported)
  double queue_limit = 20;
  double band = 0;  // load band: thresholds may loosen by this much, TTLs double
  double queued = 0;
  double last_s = 0;
  uint64_t calls = 0;
  double load_sum = 0;
  void Advance(double now_s) {
    queued = std::max(0.0, queued - (now_s - last_s) * qps);
    last_s = now_s;
  }
  double Load() const { return std::min(1.0, queued / queue_limit); }
};

// One peer over the whole query stream on a fresh cache; `threshold[c]` per category.
absl::StatusOr<PerCategory> RunPeer(DB& db, cache::FakeClock& clock, const Workload& w,
                                    const CacheBenchOptions& o,
                                    const std::vector<double>& threshold, bool learn,
                                    Backend* backend = nullptr) {
  const int64_t start = clock.NowMicros();
  (void)db.DropCache("bench");
  SHOAL_RETURN_IF_ERROR(db.CreateCache({.name = "bench", .dimension = o.dimension}));
  for (size_t c = 0; c < std::size(kCategories); ++c) {
    CachePolicy p{.threshold = threshold[c],
                  .ttl_seconds = kCategories[c].ttl_s,
                  .target_false_hit_rate = learn ? o.delta : 0};
    if (learn) p.max_threshold = std::max(0.995, threshold[c]);
    if (backend != nullptr && backend->band > 0) {
      p.min_threshold = threshold[c] - backend->band;
      p.max_ttl_seconds = 2 * p.ttl_seconds;
    }
    SHOAL_RETURN_IF_ERROR(db.SetCachePolicy("bench", kCategories[c].name, p));
  }
  PerCategory out(std::size(kCategories));
  for (const Query& q : w.queries) {
    clock.SetMicros(start + static_cast<int64_t>(q.time_s * 1e6));
    if (backend != nullptr) {
      backend->Advance(q.time_s);
      backend->load_sum += backend->Load();
      SHOAL_RETURN_IF_ERROR(db.ReportModelLoad("m", backend->Load()));
    }
    CacheLookupRequest r{.partition = {.model = "m"},
                         .category = kCategories[q.category].name,
                         .embedding = w.vectors[q.category][q.intent][q.paraphrase],
                         .prompt = absl::StrCat("q ", q.intent, " p", q.paraphrase)};
    SHOAL_ASSIGN_OR_RETURN(CacheLookupResult hit, db.CacheLookup("bench", r));
    Outcome& k = out[q.category];
    ++k.lookups;
    const std::string answer = Answer(q);
    if (hit.hit) {
      ++k.hits;
      const bool wrong = hit.response != answer;
      k.false_hits += wrong;
      if (learn) {
        SHOAL_RETURN_IF_ERROR(db.CacheFeedback(
            "bench", {.entry_id = hit.entry_id,
                      .verdict = wrong ? CacheVerdict::kWrong : CacheVerdict::kCorrect,
                      .similarity = hit.similarity}));
      }
      continue;  // the client serves the hit (it learns it was wrong only by feedback)
    }
    if (backend != nullptr) {
      ++backend->calls;
      backend->queued += 1;
    }
    SHOAL_RETURN_IF_ERROR(db.CacheStore("bench", {.lookup = r, .response = answer}, {}).status());
  }
  return out;
}

void Print(const std::string& peer, const std::string& thresholds, const PerCategory& per) {
  Outcome total;
  std::string cats;
  for (size_t c = 0; c < per.size(); ++c) {
    total.Add(per[c]);
    absl::StrAppendFormat(&cats, "  %s %.3f/%.3f", kCategories[c].name, per[c].hit_rate(),
                          per[c].false_rate());
  }
  std::printf("%-10s %-22s hit %.4f  false %.4f  |%s\n", peer.c_str(), thresholds.c_str(),
              total.hit_rate(), total.false_rate(), cats.c_str());
}

Outcome Total(const PerCategory& per) {
  Outcome t;
  for (const Outcome& o : per) t.Add(o);
  return t;
}

// Overloaded backend: the same learned peer without and with the load band; model calls, hit
// and false-hit rates (per category too).
absl::Status RunBackendPeers(DB& db, cache::FakeClock& clock, const Workload& w,
                             const CacheBenchOptions& o) {
  const size_t n = std::size(kCategories);
  uint64_t calls_without = 0;
  for (double band : {0.0, o.load_band}) {
    Backend b{.qps = o.backend_qps, .band = band};
    SHOAL_ASSIGN_OR_RETURN(PerCategory run,
                           RunPeer(db, clock, w, o, std::vector(n, o.base_threshold), true, &b));
    const Outcome t = Total(run);
    if (band == 0) calls_without = b.calls;
    std::printf(
        "backend %.1f qps, band %.2f: model calls %llu (%+.1f%%), mean load %.2f, hit %.4f, "
        "false %.4f\n",
        o.backend_qps, band, static_cast<unsigned long long>(b.calls),
        calls_without > 0 ? 100.0 * (static_cast<double>(b.calls) / calls_without - 1) : 0.0,
        b.load_sum / static_cast<double>(w.queries.size()), t.hit_rate(), t.false_rate());
    Print("backend", absl::StrFormat("band %.2f", band), run);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunCacheBench(const CacheBenchOptions& o) {
  std::string dir = o.dir;
  if (dir.empty()) {
    std::string tmpl = "/tmp/shoal_cache_bench_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return absl::InternalError("mkdtemp failed");
    dir = tmpl;
  }
  cache::FakeClock clock;
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<DB> db,
                         db::DBImpl::Open(dir, Options{}, {.cache_clock = &clock}));
  const Workload w = MakeWorkload(o);
  std::printf("cache bench: seed %llu, %zu queries, d=%u, %zu intents per category, delta %.3f\n",
              static_cast<unsigned long long>(o.seed), o.queries, o.dimension, o.intents, o.delta);
  std::printf("%-10s %-22s %s\n", "peer", "threshold(s)",
              "hit rate, false-hit rate (per category "
              "hit/false)");
  if (o.backend_only) {
    SHOAL_RETURN_IF_ERROR(RunBackendPeers(*db, clock, w, o));
    db.reset();
    if (o.dir.empty()) std::filesystem::remove_all(dir);
    return absl::OkStatus();
  }
  const size_t n = std::size(kCategories);
  SHOAL_ASSIGN_OR_RETURN(PerCategory exact, RunPeer(*db, clock, w, o, std::vector(n, 1.0), false));
  Print("exact", "1", exact);
  std::map<int, PerCategory> sweep;
  double best_global = -1;
  int best_t = -1;
  for (int t = 80; t <= 99; ++t) {
    SHOAL_ASSIGN_OR_RETURN(sweep[t], RunPeer(*db, clock, w, o, std::vector(n, t / 100.0), false));
    Print("global", absl::StrFormat("%.2f", t / 100.0), sweep[t]);
    const Outcome total = Total(sweep[t]);
    if (total.false_rate() <= o.delta && total.hit_rate() > best_global) {
      best_global = total.hit_rate();
      best_t = t;
    }
  }
  // Per category: the sweep's best threshold there (categories do not interact).
  PerCategory per_cat(n);
  std::vector<double> chosen(n, 1.0);
  for (size_t c = 0; c < n; ++c) {
    per_cat[c] = exact[c];
    for (const auto& [t, per] : sweep) {
      if (per[c].false_rate() <= o.delta && per[c].hit_rate() > per_cat[c].hit_rate()) {
        per_cat[c] = per[c];
        chosen[c] = t / 100.0;
      }
    }
  }
  Print("per-cat", absl::StrFormat("%.2f/%.2f/%.2f", chosen[0], chosen[1], chosen[2]), per_cat);
  SHOAL_ASSIGN_OR_RETURN(PerCategory adaptive,
                         RunPeer(*db, clock, w, o, std::vector(n, o.base_threshold), true));
  Print("shoal", absl::StrFormat("base %.2f, learned", o.base_threshold), adaptive);
  SHOAL_ASSIGN_OR_RETURN(CacheStats stats, db->GetCacheStats("bench"));
  for (const CacheCategoryStats& c : stats.categories) {
    std::printf("  learned offset %-7s %+.3f (false-hit reports %llu of %llu hits)\n",
                c.category.c_str(), c.threshold_offset,
                static_cast<unsigned long long>(c.counters.false_hit_reports),
                static_cast<unsigned long long>(c.counters.hits));
  }
  // Learning on top of the per-category thresholds the sweep found (an operator's tuned start).
  SHOAL_ASSIGN_OR_RETURN(PerCategory tuned, RunPeer(*db, clock, w, o, chosen, true));
  Print("shoal", "per-cat base, learned", tuned);
  SHOAL_ASSIGN_OR_RETURN(stats, db->GetCacheStats("bench"));
  for (const CacheCategoryStats& c : stats.categories) {
    std::printf("  learned offset %-7s %+.3f (false-hit reports %llu of %llu hits)\n",
                c.category.c_str(), c.threshold_offset,
                static_cast<unsigned long long>(c.counters.false_hit_reports),
                static_cast<unsigned long long>(c.counters.hits));
  }
  if (o.backend_qps > 0) SHOAL_RETURN_IF_ERROR(RunBackendPeers(*db, clock, w, o));
  const Outcome a = Total(adaptive);
  std::printf("best global threshold at false hits <= %.3f: %s (hit %.4f)\n", o.delta,
              best_t < 0 ? "none" : absl::StrFormat("%.2f", best_t / 100.0).c_str(),
              std::max(best_global, 0.0));
  std::printf("ratio shoal / best global hit rate: %.2f (false %.4f; goal >= 1.5 at <= %.3f)\n",
              best_global > 0 ? a.hit_rate() / best_global : 0.0, a.false_rate(), o.delta);
  std::printf("ratio shoal (per-cat base) / best global hit rate: %.2f (false %.4f)\n",
              best_global > 0 ? Total(tuned).hit_rate() / best_global : 0.0,
              Total(tuned).false_rate());
  std::printf("ratio per-cat / best global hit rate: %.2f\n",
              best_global > 0 ? Total(per_cat).hit_rate() / best_global : 0.0);
  db.reset();
  if (o.dir.empty()) std::filesystem::remove_all(dir);
  return absl::OkStatus();
}

void RegisterCacheCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<CacheBenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "cache", "Semantic cache: hit and false-hit rates vs exact, global and per-category peers");
  cmd->add_option("--seed", options->seed, "workload seed")->capture_default_str();
  cmd->add_option("--queries", options->queries, "queries")->capture_default_str();
  cmd->add_option("--dimension", options->dimension, "embedding dimension")->capture_default_str();
  cmd->add_option("--intents", options->intents, "intents per category")->capture_default_str();
  cmd->add_option("--delta", options->delta, "target false-hit rate")->capture_default_str();
  cmd->add_option("--base-threshold", options->base_threshold,
                  "shoal peer: starting threshold of every category")
      ->capture_default_str();
  cmd->add_option("--step", options->step_seconds, "simulated seconds per query")
      ->capture_default_str();
  cmd->add_option("--dir", options->dir, "scratch directory")->capture_default_str();
  cmd->add_option("--backend-qps", options->backend_qps,
                  "also: a simulated model backend of this capacity (calls per simulated s)")
      ->capture_default_str();
  cmd->add_option("--load-band", options->load_band,
                  "backend runs: how far thresholds may loosen under load (TTLs double)")
      ->capture_default_str();
  cmd->add_flag("--backend-only", options->backend_only,
                "with --backend-qps: only the backend runs (no sweep of peers)");
  auto latency = std::make_shared<CacheLatencyOptions>();
  cmd->add_option("--latency-entries", latency->entries,
                  "instead: lookup latency of one shard holding this many entries");
  cmd->add_option("--latency-dimension", latency->dimension, "latency: embedding dimension")
      ->capture_default_str();
  cmd->add_option("--latency-lookups", latency->lookups, "latency: lookups of each kind")
      ->capture_default_str();
  cmd->callback([options, latency, exit_code] {
    if (latency->entries > 0) {
      latency->seed = options->seed;
      latency->dir = options->dir;
    }
    absl::Status s =
        latency->entries > 0 ? RunCacheLatencyBench(*latency) : RunCacheBench(*options);
    if (!s.ok()) {
      std::fprintf(stderr, "shoal_bench cache: %s\n", s.ToString().c_str());
      *exit_code = 1;
    }
  });
}

}  // namespace shoal::bench

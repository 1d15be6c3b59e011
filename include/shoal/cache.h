// Value types of Shoal's semantic cache (DESIGN.md §6): a cache of (prompt embedding -> model
// response) that an LLM service asks before calling a model. See DB's "Semantic caches".
//
//   db->CreateCache({.name = "answers", .dimension = 384, .metric = shoal::Metric::kCosine});
//   db->SetCachePolicy("answers", "code", {.threshold = 0.92, .ttl_seconds = 30 * 86400});
//   shoal::CacheLookupRequest q{.partition = {.tenant = "acme", .model = "llama-3-8b"},
//                               .category = "code", .embedding = emb, .prompt = text};
//   auto r = db->CacheLookup("answers", q);
//   if (r.ok() && r->hit) return r->response;
//   std::string answer = CallModel(text);
//   db->CacheStore("answers", {.lookup = q, .response = answer}, {.sync = true});
//
// SIMILARITY AND THRESHOLD (the direction, once and for all): every threshold is a minimum
// SIMILARITY in [0, 1]; higher means more alike. A lookup hits when
//     similarity(query, entry) >= threshold
// (compared in single precision; equality hits). Threshold 1 hits only identical directions;
// raising a threshold makes the cache STRICTER (fewer, safer hits). Similarity per metric:
//   kCosine       cos(q, x)                 (vectors are normalised by the cache)
//   kInnerProduct <q, x>                    (meant for unit-norm embeddings)
//   kL2           1 - |q - x|^2 / 2         (equals cos(q, x) for unit-norm embeddings)
// It may be negative for unrelated vectors; a miss still reports it.
//
// Hard partitions: an entry is only ever seen by lookups with the same CachePartition (tenant,
// model, params_fingerprint, context_hash compared byte for byte), whatever the similarity.
// Partitions are never derived from embedding distance.
#ifndef SHOAL_CACHE_H_
#define SHOAL_CACHE_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/types.h"

namespace shoal {

// Cache names follow collection names: [A-Za-z_][A-Za-z0-9_-]{0,63}. Category names too, or
// "" for the cache's default policy (used by every category that has none of its own).
struct CacheSpec {
  std::string name;
  uint32_t dimension = 0;  // 1..kMaxDimension
  Metric metric = Metric::kCosine;
};

enum class CacheEviction { kLru = 0, kLfu = 1, kFifo = 2 };
const char* CacheEvictionName(CacheEviction eviction);

// The policy of one category (or the default policy, category ""). Set and read at run time;
// a change applies at once to the category's existing entries (thresholds, TTLs, quotas).
struct CachePolicy {
  bool enabled = true;  // false: lookups miss without searching, stores are dropped (privacy)
  // Minimum similarity for a hit, in [0, 1] (see the file comment for the direction).
  double threshold = 0.9;
  // Entry lifetime from its store (or from its last hit with refresh_ttl_on_hit); 0 = no
  // expiry. An entry is served while now < start + ttl and never at or after it.
  int64_t ttl_seconds = 0;
  bool refresh_ttl_on_hit = false;
  // Quotas of the category over the whole cache (all partitions); 0 = unlimited. A store over
  // either evicts this category's entries only, in `eviction` order.
  uint64_t max_entries = 0;
  uint64_t max_bytes = 0;  // entry bytes: vector + response + prompt hash + metadata
  CacheEviction eviction = CacheEviction::kLru;

  // ---- Adaptive band (hard limits; see DB::ReportModelLoad and DB::CacheFeedback) ----
  // Load-adaptive: while the entry's model reports a load above `load_high`, with
  // f = (load - load_high) / (1 - load_high) in [0, 1]:
  //   threshold_under_load = threshold - f * (threshold - min_threshold)
  //   ttl_under_load       = ttl + f * (max_ttl - ttl)
  // min_threshold <= threshold and max_ttl_seconds >= ttl_seconds (or 0 with ttl 0); equal
  // values (the defaults: NaN / -1 mean "same as threshold / ttl") switch the band off.
  double min_threshold = std::numeric_limits<double>::quiet_NaN();
  int64_t max_ttl_seconds = -1;
  double load_high = 0.8;  // in [0, 1)
  // Learned thresholds (vCache-style): each entry's threshold rises above similarities at
  // which it was reported wrong, and the category's offset keeps the reported false-hit rate
  // at or below `target_false_hit_rate` (delta); never above max_threshold, never below
  // `threshold`. 0 switches learning off. max_threshold NaN = 1.
  double target_false_hit_rate = 0.02;
  double max_threshold = std::numeric_limits<double>::quiet_NaN();
};

// The hard partition of an entry. Each field is opaque bytes (at most 256); "" is a value like
// any other. With tenant-bound API keys the server sets `tenant` from the caller.
struct CachePartition {
  std::string tenant;
  std::string model;
  std::string params_fingerprint;  // e.g. a hash of temperature, top_p, system prompt
  std::string context_hash;        // conversation context, for multi-turn prompts
  friend bool operator==(const CachePartition&, const CachePartition&) = default;
};

struct CacheLookupRequest {
  CachePartition partition;
  std::string category;          // "" = the default policy
  std::vector<float> embedding;  // exactly `dimension` finite floats
  // The prompt text (normalised: trimmed, whitespace runs collapsed, ASCII lower-cased, then
  // hashed with CachePromptHash) or its hash computed by the caller; at most one. Either gives
  // the exact-match shortcut; neither: vector search only. A prompt that normalises to "" is
  // InvalidArgument (empty prompts would all match each other).
  std::string prompt;
  std::string prompt_hash;  // at most 64 bytes
};

// Hash of a prompt's normalised text, as the cache computes it (16 hex digits, FNV-1a 64).
std::string CachePromptHash(std::string_view prompt);

// Hit or miss. Always carries the nearest entry's similarity (NaN when the partition and
// category hold no entry) and the threshold the decision used, so callers can tune.
struct CacheLookupResult {
  bool hit = false;
  bool exact = false;     // answered by the exact-match shortcut (similarity 1)
  uint64_t entry_id = 0;  // the hit (or on a miss the nearest entry; 0 = none)
  std::string response;   // the hit's stored response
  double similarity = std::numeric_limits<double>::quiet_NaN();
  double threshold = 0;    // the effective threshold of the nearest entry (band, learning)
  double age_seconds = 0;  // since the nearest entry was stored
  bool disabled = false;   // the category's policy is off
};

struct CacheStoreRequest {
  CacheLookupRequest lookup;  // partition, category, embedding, prompt / prompt_hash
  std::string response;       // at most 16 MiB
};

// Which entries CacheInvalidate removes: all conditions hold. "" / 0 = any.
struct CacheInvalidation {
  std::string category;
  bool match_partition = false;  // true: only entries of exactly `partition`
  CachePartition partition;
  std::string tenant;             // only this tenant's entries (any model)
  double older_than_seconds = 0;  // only entries at least this old
  bool dry_run = true;            // count only
};

enum class CacheVerdict { kCorrect = 0, kWrong = 1 };

struct CacheFeedbackReport {
  uint64_t entry_id = 0;
  CacheVerdict verdict = CacheVerdict::kCorrect;
  // The similarity of the hit judged (from its CacheLookupResult); NaN = the last hit the
  // entry served.
  double similarity = std::numeric_limits<double>::quiet_NaN();
};

// Counters since the DB opened (entries and bytes are current).
struct CacheCounters {
  uint64_t lookups = 0;
  uint64_t hits = 0;
  uint64_t exact_hits = 0;
  uint64_t misses = 0;
  uint64_t stores = 0;
  uint64_t false_hit_reports = 0;
  uint64_t correct_reports = 0;
  uint64_t evicted_by_entries = 0;  // quota max_entries
  uint64_t evicted_by_bytes = 0;    // quota max_bytes
  uint64_t invalidated = 0;
  uint64_t expirations = 0;
  uint64_t entries = 0;
  uint64_t bytes = 0;
};

struct CacheCategoryStats {
  std::string category;
  CacheCounters counters;
  double threshold_offset = 0;  // learned (see CachePolicy::target_false_hit_rate)
  // The overload budget: the share in [0, 1] of the load-adaptive band's threshold half the
  // category may use now, so that its false hits stay within target + 1 point, from its measured
  // false-hit rate and the would-be false hits seen inside the band (threshold_learning.h: g);
  // the TTL half too unless the category's answers were seen to change. 1 when learning is off.
  double band_share = 1;
  // The TTL learned from stale answers (wrong verdicts on exact hits, by the entry's age), in
  // seconds: entries older than this are misses. Never longer than the policy's TTL, never shorter
  // than 1/8 of it (1 s with no TTL). 0 = none learned: the policy's TTL alone applies.
  double learned_ttl_seconds = 0;
};

struct CachePartitionStats {
  CachePartition partition;
  CacheCounters counters;
};

struct CacheStats {
  std::string name;
  CacheCounters total;
  std::vector<CacheCategoryStats> categories;  // by name
  std::vector<CachePartitionStats> partitions;
  // Lookup latency (microseconds): bucket upper bounds and counts (the last bucket is +inf).
  std::vector<double> latency_bounds_us;
  std::vector<uint64_t> latency_counts;
  double latency_sum_us = 0;
  double lookup_p50_us = 0;
  double lookup_p99_us = 0;
};

struct CacheInfo {
  CacheSpec spec;
  uint64_t entries = 0;
  uint64_t bytes = 0;
  std::vector<std::string> categories;  // those with their own policy
  // Shards whose clustered index is being rebuilt in the background (as they grow, and after
  // open); meanwhile their lookups search the previous index, or scan exactly after open.
  uint64_t index_builds = 0;
  // Background index builds that failed since open (k-means refused the shard's vectors), and
  // the last failure's message ("" if none). A shard whose build failed keeps searching its
  // previous index (or exactly) and tries again once it has grown by an eighth.
  uint64_t index_build_failures = 0;
  std::string index_build_error;
  // Non-empty when the cache could not be loaded at open (a damaged row): why. It serves
  // nothing (DataLoss) until dropped; the other caches are unaffected.
  std::string quarantine;
};

}  // namespace shoal

#endif  // SHOAL_CACHE_H_

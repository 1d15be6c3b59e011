// Learned thresholds of the semantic cache (after vCache): how feedback and observed
// neighbours move a hit's threshold, inside the hard limits of the category's policy.
//
// The threshold an entry e of category c hits at, for a query at model load L:
//   base(L)   = ThresholdUnderLoad(policy, L, g_c)            (cache_policy.h: the load band)
//   t         = min(base(L) + offset_c, max_threshold)         (the category's learned offset)
//   t_e       = max(t, next float above wrong_floor_e)         (the entry's own evidence)
// and the query hits e when similarity >= t_e (single precision).
//   - r = w * h, the category's false-hit rate per LOOKUP: w is the share of reported hits
//     judged wrong (a running mean over the first 50 reports, then an exponential average with
//     weight 1/50) and h the share of the category's lookups that hit (its counters since
//     open). So delta bounds false hits among all lookups, as the goal and
//     `shoal_bench cache` count them, and feedback on only a sample of hits estimates the same.
//   - offset_c in [0, max_threshold - threshold] is chosen, at each report, from the reports'
//     similarities (vCache's evidence, kept per category): reports and wrong ones are counted
//     per similarity bin of 0.005, both decayed by 1/1000 per report. At a threshold t the
//     false-hit rate per lookup is bounded as r(t) = h * U(wrong reports at similarity >= t,
//     reports), U the 95% Wilson upper confidence bound on that share (as vCache bounds its
//     estimate, so the learning phase's noise does not carry false hits past delta), and the offset
//     is the smallest one (in steps to the next bin edge) with r(threshold + offset) <= max(delta,
//     r(max_threshold)): false hits no threshold under the cap removes (a stale exact answer at
//     similarity 1) do not push the offset up. It loosens again once decay and right reports bring
//     the estimate under. delta = target_false_hit_rate; 0 = off.
//   - wrong_floor_e is the highest similarity at which e was judged wrong: by Feedback(wrong)
//     on a hit it served, or by an observed neighbour — a CacheStore in e's partition and
//     category whose vector lies within min_threshold of e and whose response differs from e's
//     (the new prompt would have been served e's answer wrongly; the new entry gets the same
//     floor against e). The same store with an equal response counts as a correct neighbour.
//   - g_c in [0, 1], the budgeted band: the share of the load band (threshold and TTL alike)
//     the category may use while overloaded. Its false hits may then reach delta + 1 point
//     (kOverloadAllowance; the bound under load), and g_c spends that budget:
//       g = clamp((delta + 0.01 - r) / e, 0, 1)
//     with r its measured false-hit rate per lookup (above) and e the false hits per lookup the
//     whole band would add, estimated from observed neighbours: each store whose nearest entry
//     lies inside the band (a threshold the full band reaches, but not the unloaded one) and
//     holds another answer would have been a false hit (band_wrong; e = band_wrong / lookups).
//     e = 0 (no wrong neighbour seen in the band): the whole band. So categories with hard
//     negatives just under their paraphrases loosen little, sparse ones fully, and one already
//     at delta + 1 point not at all. Before kMinReportsToLoosen reports there is no measured r:
//     g = 0. Learning off (delta 0): g = 1, the band as the policy sets it.
//   - The TTL half of the band is used (with the same g) only by categories whose answers were
//     never seen to change: a store whose identical prompt still held an entry with another
//     answer counts as an answer change (answer_changes), and one rules TTL extension out.
//   - The learned TTL L_c: a wrong verdict on an exact hit (similarity 1: the same question) is
//     a stale answer, which no threshold removes. Such reports are counted by the entry's age
//     at the report (since its store; kAgeBins geometric bins, decayed like the similarity bins)
//     instead of in the similarity bins, and entries are served only while younger than L_c.
//     With S(< L) the stale reports younger than L and W(>= t) the other wrong reports at
//     similarity >= t, the false-hit rate per lookup at threshold t and TTL L is bounded as
//       r(t, L) = h * U(W(>= t) + S(< L), reports)
//     The offset is chosen as above with S(< L_c) counted at similarity 1; then L_c is the
//     longest TTL (the configured one, or a bin edge under it) with r(t_c, L) <= max(delta,
//     r(t_c, floor)), t_c = threshold + offset: stale answers older than L_c are then misses.
//     L_c is never longer than the configured TTL (none: no limit) and never shorter than the
//     floor, kTtlFloorShare of the configured TTL (kFirstAgeEdge without one). No stale report
//     (or learning off): no learned TTL (0), the configured TTL alone.
// So t_e >= min_threshold always, and t_e <= max_threshold unless the entry itself was judged
// wrong above it (then only closer queries, or the exact-match shortcut, reach it).
// Pure functions and a plain struct; the caller locks.
#ifndef SHOAL_CACHE_THRESHOLD_LEARNING_H_
#define SHOAL_CACHE_THRESHOLD_LEARNING_H_

#include <array>
#include <cstdint>
#include <limits>

#include "shoal/cache.h"

namespace shoal::cache {

// False hits a category may reach while overloaded: delta + this (the "δ + 1 point").
inline constexpr double kOverloadAllowance = 0.01;

inline constexpr int kSimilarityBins = 200;  // 0.005 wide over [0, 1]
// Age bins of stale reports: [0, kFirstAgeEdge), then each kAgeRatio times as wide as the one
// before (the last one open-ended, from ~5 years).
inline constexpr int kAgeBins = 200;
inline constexpr double kFirstAgeEdge = 1.0;  // seconds
inline constexpr double kAgeRatio = 1.1;
// The shortest learned TTL, as a share of the configured one.
inline constexpr double kTtlFloorShare = 1.0 / 8;

struct CategoryLearning {
  double offset = 0;
  // Evidence by similarity (decayed counts): every report, and the wrong ones per bin
  // (similarities under 0 in the first bin, 1 and above in the last).
  double reported = 0;
  std::array<double, kSimilarityBins> wrong_at{};
  double wrong_share = 0;  // running estimate of w (per reported hit)
  double rate = 0;         // r = w * h at the last report
  uint64_t reports = 0;
  uint64_t band_correct = 0;    // neighbours observed inside the band with the same answer
  uint64_t band_wrong = 0;      // ... with another answer (would-be false hits)
  uint64_t answer_changes = 0;  // stores that replaced an identical prompt's other answer
  // Stale answers (wrong verdicts on exact hits) by the entry's age at the report, decayed like
  // wrong_at; not counted in wrong_at.
  std::array<double, kAgeBins> stale_at{};
  int64_t ttl_us = 0;  // L_c, the learned TTL in microseconds; 0 = none
};

// The lower edge of age bin `bin`, in seconds (0 for bin 0).
double AgeEdge(int bin);
// The learned TTL in microseconds, clamped to [floor, configured TTL] of the `resolved` policy
// as it is now; 0 = none (the configured TTL alone applies).
int64_t LearnedTtlMicros(const CachePolicy& resolved, const CategoryLearning& learning);

// g_c above for the category's `resolved` policy; `lookups` is the category's lookup count (the
// denominator of e).
double BandShare(const CachePolicy& resolved, const CategoryLearning& learning, uint64_t lookups);
// The share of the TTL band: g_c, or 0 once an answer change was seen.
double TtlBandShare(const CachePolicy& resolved, const CategoryLearning& learning,
                    uint64_t lookups);

// Whether a neighbour at `similarity` to a new store, with the entry's own `wrong_floor` and the
// category's `offset`, lies inside the band: the full band would serve it, no load would not.
bool InsideBand(const CachePolicy& resolved, double category_offset, float wrong_floor,
                float similarity);

// Updates the category's estimate, offset and TTL with one verdict on a hit at `similarity` (NaN:
// unknown, counted as a report at no similarity; only right verdicts may lack it) under the
// `resolved` policy; `hit_rate` is h above, in [0, 1]; `age_seconds` is the entry's age at the
// report (NaN: unknown; a stale answer of unknown age is then counted in wrong_at, at
// similarity 1).
void LearnFromReport(const CachePolicy& resolved, bool wrong, float similarity, double hit_rate,
                     CategoryLearning* learning,
                     double age_seconds = std::numeric_limits<double>::quiet_NaN());

// t_e above, as a float (the precision similarities are compared in); `band_share` is g_c.
float EntryThreshold(const CachePolicy& resolved, double load, double category_offset,
                     float wrong_floor, double band_share = 1);

}  // namespace shoal::cache

#endif  // SHOAL_CACHE_THRESHOLD_LEARNING_H_

// Learned thresholds of the semantic cache (after vCache): how feedback and observed
// neighbours move a hit's threshold, inside the hard limits of the category's policy.
//
// The threshold an entry e of category c hits at, for a query at model load L:
//   base(L)   = ThresholdUnderLoad(policy, L, g_c)            (cache_policy.h: the load band)
//   t         = min(base(L) + offset_c, max_threshold)         (the category's learned offset)
//   t_e       = max(t, next float above wrong_floor_e)         (the entry's own evidence)
// and the query hits e when similarity >= t_e (single precision).
//   - offset_c in [0, max_threshold - threshold] moves with the category's false-hit rate per
//     LOOKUP, r = w * h: w is the share of reported hits judged wrong (a running mean over
//     the first 50 reports, then an exponential average with weight 1/50) and h the share of
//     the category's lookups that hit (its counters since open). So delta bounds false hits
//     among all lookups, as the goal and `shoal_bench cache` count them, and feedback
//     on only a sample of hits estimates the same r. Each report with r > delta raises the
//     offset by 0.01; each with r < delta / 2, after at least 20 reports, lowers it by 0.005.
//     delta = target_false_hit_rate; 0 = off.
//   - wrong_floor_e is the highest similarity at which e was judged wrong: by Feedback(wrong)
//     on a hit it served, or by an observed neighbour — a CacheStore in e's partition and
//     category whose vector lies within min_threshold of e and whose response differs from e's
//     (the new prompt would have been served e's answer wrongly; the new entry gets the same
//     floor against e). The same store with an equal response counts as a correct neighbour.
//   - g_c in [0, 1], the margin-aware band: the share of the load band (threshold and TTL alike)
//     the category may use, g = clamp((delta - r) / delta, 0, 1) with r its measured false-hit
//     rate per lookup (above): a category at delta gets none of the band, one with no false
//     hits all of it, so the band loosens only by what the measured margin allows. Before
//     kMinReportsToLoosen reports there is no measured margin: g = 0. Learning off (delta 0):
//     g = 1, the band as the policy sets it.
// So t_e >= min_threshold always, and t_e <= max_threshold unless the entry itself was judged
// wrong above it (then only closer queries, or the exact-match shortcut, reach it).
// Pure functions and a plain struct; the caller locks.
#ifndef SHOAL_CACHE_THRESHOLD_LEARNING_H_
#define SHOAL_CACHE_THRESHOLD_LEARNING_H_

#include <cstdint>

#include "shoal/cache.h"

namespace shoal::cache {

struct CategoryLearning {
  double offset = 0;
  double wrong_share = 0;  // running estimate of w (per reported hit)
  double rate = 0;         // r = w * h at the last report
  uint64_t reports = 0;
};

// g_c above for the category's `resolved` policy.
double BandShare(const CachePolicy& resolved, const CategoryLearning& learning);

// Updates the category's estimate and offset with one verdict (`resolved` policy); `hit_rate`
// is h above, in [0, 1].
void LearnFromReport(const CachePolicy& resolved, bool wrong, double hit_rate,
                     CategoryLearning* learning);

// t_e above, as a float (the precision similarities are compared in); `band_share` is g_c.
float EntryThreshold(const CachePolicy& resolved, double load, double category_offset,
                     float wrong_floor, double band_share = 1);

}  // namespace shoal::cache

#endif  // SHOAL_CACHE_THRESHOLD_LEARNING_H_

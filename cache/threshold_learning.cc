#include "cache/threshold_learning.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cache/cache_policy.h"

namespace shoal::cache {
namespace {

constexpr uint64_t kAverageOver = 50;
constexpr uint64_t kMinReportsToLoosen = 20;
constexpr double kEvidenceWindow = 1000;  // reports
constexpr double kBinWidth = 1.0 / kSimilarityBins;
// One-sided normal quantile of the confidence the false-hit estimate is bounded at (95%).
constexpr double kConfidenceZ = 1.645;

int BinOf(double similarity) {
  return std::clamp(static_cast<int>(std::floor(similarity / kBinWidth + 1e-6)), 0,
                    kSimilarityBins - 1);
}

// Wilson score upper bound (confidence kConfidenceZ) on a share of `wrong` in `n` reports.
double UpperBound(double wrong, double n) {
  const double p = std::clamp(wrong / n, 0.0, 1.0);
  const double z2 = kConfidenceZ * kConfidenceZ;
  const double spread = kConfidenceZ * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n));
  return std::min(1.0, (p + z2 / (2 * n) + spread) / (1 + z2 / n));
}

int AgeBinOf(double seconds) {
  if (!(seconds >= kFirstAgeEdge)) return 0;
  const double steps = std::log(seconds / kFirstAgeEdge) / std::log(kAgeRatio);
  return std::min(kAgeBins - 1, 1 + static_cast<int>(std::floor(steps + 1e-9)));
}

// The number of age bins starting below `seconds`: those that hold ages < seconds (all of them
// when seconds <= 0, i.e. no TTL).
int AgeBinsBelow(double seconds) {
  if (seconds <= 0) return kAgeBins;
  const int b = AgeBinOf(seconds);
  return AgeEdge(b) < seconds ? b + 1 : b;
}

// below[b]: the stale reports in age bins < b.
std::array<double, kAgeBins + 1> StaleBelow(const CategoryLearning& l) {
  std::array<double, kAgeBins + 1> below{};
  for (int b = 0; b < kAgeBins; ++b) below[b + 1] = below[b] + l.stale_at[b];
  return below;
}

double TtlFloorSeconds(const CachePolicy& p) {
  return p.ttl_seconds > 0 ? static_cast<double>(p.ttl_seconds) * kTtlFloorShare : kFirstAgeEdge;
}

// The offset: the smallest threshold from `threshold` up (next bin edge each step, at most
// max_threshold) whose estimated false-hit rate per lookup is within the target; `stale` stale
// reports (those the TTL serves) count at similarity 1.
double ChooseOffset(const CachePolicy& p, double hit_rate, const CategoryLearning& l,
                    double stale) {
  if (l.reported <= 0) return 0;
  std::array<double, kSimilarityBins + 1> above{};  // above[b]: wrong reports in bins >= b
  above[kSimilarityBins] = stale;
  for (int b = kSimilarityBins - 1; b >= 0; --b) above[b] = above[b + 1] + l.wrong_at[b];
  const double h = std::clamp(hit_rate, 0.0, 1.0);
  auto rate_at = [&](double t) { return h * UpperBound(above[BinOf(t)], l.reported); };
  const double cap = std::max(p.threshold, p.max_threshold);
  const double target = std::max(p.target_false_hit_rate, rate_at(cap));
  double t = p.threshold;
  while (t < cap && rate_at(t) > target) {
    t = std::min(cap, (BinOf(t) + 1) * kBinWidth);
  }
  return t - p.threshold;
}

// L_c (threshold_learning.h) at the threshold `t`, in microseconds; 0 = none.
int64_t ChooseTtl(const CachePolicy& p, double hit_rate, const CategoryLearning& l, double t) {
  const std::array<double, kAgeBins + 1> below = StaleBelow(l);
  if (l.reported <= 0 || below[kAgeBins] <= 0) return 0;
  double others = 0;  // W(>= t)
  for (int b = BinOf(t); b < kSimilarityBins; ++b) others += l.wrong_at[b];
  const double h = std::clamp(hit_rate, 0.0, 1.0);
  auto rate = [&](double ttl_s) {
    return h * UpperBound(others + below[AgeBinsBelow(ttl_s)], l.reported);
  };
  const double configured = static_cast<double>(p.ttl_seconds);  // 0: none
  const double floor = TtlFloorSeconds(p);
  // What no TTL down to the floor removes (the bins wholly under it) is not chased.
  const double target = std::max(p.target_false_hit_rate,
                                 h * UpperBound(others + below[AgeBinOf(floor)], l.reported));
  if (rate(configured) <= target) return 0;
  for (int b = kAgeBins - 1; b >= 1; --b) {
    const double edge = AgeEdge(b);
    if (configured > 0 && edge >= configured) continue;
    if (edge <= floor) break;
    if (rate(edge) <= target) return static_cast<int64_t>(edge * 1e6);
  }
  return static_cast<int64_t>(floor * 1e6);
}

}  // namespace

double AgeEdge(int bin) {
  static const std::array<double, kAgeBins> edges = [] {
    std::array<double, kAgeBins> e{};
    for (int b = 1; b < kAgeBins; ++b) e[b] = kFirstAgeEdge * std::pow(kAgeRatio, b - 1);
    return e;
  }();
  return edges[std::clamp(bin, 0, kAgeBins - 1)];
}

int64_t LearnedTtlMicros(const CachePolicy& p, const CategoryLearning& l) {
  if (l.ttl_us <= 0 || p.target_false_hit_rate <= 0) return 0;
  int64_t ttl = std::max(l.ttl_us, static_cast<int64_t>(TtlFloorSeconds(p) * 1e6));
  if (p.ttl_seconds > 0) ttl = std::min(ttl, p.ttl_seconds * int64_t{1000000});
  return ttl;
}

void LearnFromReport(const CachePolicy& p, bool wrong, float similarity, double hit_rate,
                     CategoryLearning* l, double age_seconds) {
  ++l->reports;
  const double weight = 1.0 / static_cast<double>(std::min(l->reports, kAverageOver));
  l->wrong_share += weight * ((wrong ? 1.0 : 0.0) - l->wrong_share);
  l->rate = l->wrong_share * std::clamp(hit_rate, 0.0, 1.0);  // per lookup
  const double delta = p.target_false_hit_rate;
  if (delta <= 0) {
    l->offset = 0;
    l->ttl_us = 0;
    return;
  }
  constexpr double kKeep = 1.0 - 1.0 / kEvidenceWindow;
  l->reported = l->reported * kKeep + 1;
  for (double& w : l->wrong_at) w *= kKeep;
  for (double& s : l->stale_at) s *= kKeep;
  if (wrong && similarity >= 1.0f && !std::isnan(age_seconds)) {
    l->stale_at[AgeBinOf(age_seconds)] += 1;
  } else if (wrong && !std::isnan(similarity)) {
    l->wrong_at[BinOf(similarity)] += 1;
  }
  // The offset under the TTL served now, then the TTL under the new threshold.
  const int64_t learned = LearnedTtlMicros(p, *l);
  const double ttl_s = static_cast<double>(learned != 0 ? learned : p.ttl_seconds * 1000000) / 1e6;
  const double stale = StaleBelow(*l)[AgeBinsBelow(ttl_s)];
  l->offset = std::clamp(ChooseOffset(p, hit_rate, *l, stale), 0.0,
                         std::max(0.0, p.max_threshold - p.threshold));
  l->ttl_us = ChooseTtl(p, hit_rate, *l, p.threshold + l->offset);
}

double BandShare(const CachePolicy& p, const CategoryLearning& l, uint64_t lookups) {
  const double delta = p.target_false_hit_rate;
  if (delta <= 0) return 1;
  if (l.reports < kMinReportsToLoosen) return 0;
  const double budget = delta + kOverloadAllowance - l.rate;
  if (budget <= 0) return 0;
  const double extra =
      lookups == 0 ? 0 : static_cast<double>(l.band_wrong) / static_cast<double>(lookups);
  if (extra <= 0) return 1;
  return std::clamp(budget / extra, 0.0, 1.0);
}

double TtlBandShare(const CachePolicy& p, const CategoryLearning& l, uint64_t lookups) {
  return l.answer_changes > 0 ? 0.0 : BandShare(p, l, lookups);
}

bool InsideBand(const CachePolicy& p, double category_offset, float wrong_floor, float similarity) {
  return similarity >= EntryThreshold(p, 1.0, category_offset, wrong_floor, 1.0) &&
         similarity < EntryThreshold(p, 0.0, category_offset, wrong_floor, 1.0);
}

float EntryThreshold(const CachePolicy& p, double load, double category_offset, float wrong_floor,
                     double band_share) {
  const double base = ThresholdUnderLoad(p, load, band_share);
  const double t = std::clamp(base + category_offset, p.min_threshold, p.max_threshold);
  float out = static_cast<float>(t);
  if (wrong_floor >= out) {
    out = std::nextafter(wrong_floor, std::numeric_limits<float>::infinity());
  }
  return out;
}

}  // namespace shoal::cache

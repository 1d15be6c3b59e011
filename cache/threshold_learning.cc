#include "cache/threshold_learning.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cache/cache_policy.h"

namespace shoal::cache {
namespace {

constexpr uint64_t kAverageOver = 50;
constexpr uint64_t kMinReportsToLoosen = 20;
constexpr double kRaiseStep = 0.01;
constexpr double kLowerStep = 0.005;

}  // namespace

void LearnFromReport(const CachePolicy& p, bool wrong, double hit_rate, CategoryLearning* l) {
  ++l->reports;
  const double weight = 1.0 / static_cast<double>(std::min(l->reports, kAverageOver));
  l->wrong_share += weight * ((wrong ? 1.0 : 0.0) - l->wrong_share);
  const double rate = l->wrong_share * std::clamp(hit_rate, 0.0, 1.0);  // per lookup
  l->rate = rate;
  const double delta = p.target_false_hit_rate;
  const double max_offset = std::max(0.0, p.max_threshold - p.threshold);
  if (delta <= 0) {
    l->offset = 0;
  } else if (rate > delta) {
    l->offset = std::min(l->offset + kRaiseStep, max_offset);
  } else if (rate < delta / 2 && l->reports >= kMinReportsToLoosen) {
    l->offset = std::max(l->offset - kLowerStep, 0.0);
  }
  l->offset = std::clamp(l->offset, 0.0, max_offset);
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

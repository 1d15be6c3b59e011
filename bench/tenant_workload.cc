#include "bench/tenant_workload.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace shoal::bench {
namespace {

// Tenant sizes, largest first: c / r^s clamped to [min, max], c set so they sum to sharing * n.
std::vector<size_t> ZipfSizes(size_t n, const TenantWorkloadOptions& o, size_t max_size) {
  double sum = 0;
  for (size_t r = 1; r <= o.tenants; ++r) sum += std::pow(static_cast<double>(r), -o.zipf_s);
  const double c = o.sharing * static_cast<double>(n) / sum;
  std::vector<size_t> sizes(o.tenants);
  for (size_t r = 1; r <= o.tenants; ++r) {
    const double s = std::round(c * std::pow(static_cast<double>(r), -o.zipf_s));
    sizes[r - 1] = std::clamp(static_cast<size_t>(s), o.min_size, max_size);
  }
  return sizes;
}

// `want` distinct rows: drawn from `pool` first (home classes), the rest from [0, n).
std::vector<uint32_t> DrawMembers(size_t want_home, size_t want, const std::vector<uint32_t>& pool,
                                  size_t n, std::mt19937_64& rng) {
  absl::flat_hash_set<uint32_t> chosen;
  if (want_home >= pool.size()) {
    chosen.insert(pool.begin(), pool.end());
  } else {
    std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
    while (chosen.size() < want_home) chosen.insert(pool[pick(rng)]);
  }
  std::uniform_int_distribution<uint32_t> any(0, static_cast<uint32_t>(n - 1));
  while (chosen.size() < want) chosen.insert(any(rng));
  std::vector<uint32_t> rows(chosen.begin(), chosen.end());
  std::sort(rows.begin(), rows.end());
  return rows;
}

}  // namespace

bool TenantWorkload::Sees(uint32_t tenant, int64_t row) const {
  if (row < 0 || tenant >= members.size()) return false;
  const auto& m = members[tenant];
  return std::binary_search(m.begin(), m.end(), static_cast<uint32_t>(row));
}

size_t TenantWorkload::Memberships() const {
  size_t total = 0;
  for (const auto& m : members) total += m.size();
  return total;
}

double TenantWorkload::MeanSharing() const {
  absl::flat_hash_set<uint32_t> held;
  for (const auto& m : members) held.insert(m.begin(), m.end());
  return held.empty() ? 0 : static_cast<double>(Memberships()) / static_cast<double>(held.size());
}

absl::StatusOr<TenantWorkload> MakeTenantWorkload(std::span<const int32_t> labels, int classes,
                                                  std::span<const int32_t> query_labels,
                                                  const TenantWorkloadOptions& o) {
  if (o.tenants == 0) return absl::InvalidArgumentError("tenants: must be at least 1");
  if (o.queries == 0 || query_labels.empty()) {
    return absl::InvalidArgumentError("queries: must be at least 1");
  }
  if (classes < 1) return absl::InvalidArgumentError("classes: must be at least 1");
  const size_t n = labels.size();
  if (o.min_size == 0 || o.min_size > n) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_size: ", o.min_size, " not in [1, ", n, "]"));
  }
  std::vector<std::vector<uint32_t>> by_class(classes);
  for (size_t i = 0; i < n; ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      return absl::InvalidArgumentError(
          absl::StrCat("labels[", i, "]: ", labels[i], " not in [0, ", classes, ")"));
    }
    by_class[labels[i]].push_back(static_cast<uint32_t>(i));
  }
  for (size_t i = 0; i < query_labels.size(); ++i) {
    if (query_labels[i] < 0 || query_labels[i] >= classes) {
      return absl::InvalidArgumentError(
          absl::StrCat("query_labels[", i, "]: ", query_labels[i], " not in [0, ", classes, ")"));
    }
  }
  const size_t max_size = std::max(o.min_size, o.max_size != 0 ? std::min(o.max_size, n) : n / 8);
  const std::vector<size_t> sizes = ZipfSizes(n, o, max_size);
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int32_t> any_class(0, classes - 1);
  TenantWorkload w;
  w.large_threshold = o.large_threshold;
  w.members.resize(o.tenants);
  w.home.resize(o.tenants);
  // Tenants by home class, large and small apart (the queries pick from them).
  std::vector<std::vector<uint32_t>> large_of(classes), small_of(classes);
  for (size_t t = 0; t < o.tenants; ++t) {
    std::vector<int32_t>& home = w.home[t];
    home.push_back(any_class(rng));
    if (classes > 1 && (rng() & 1)) {
      int32_t second;
      do second = any_class(rng);
      while (second == home[0]);
      home.push_back(second);
    }
    std::vector<uint32_t> pool;
    for (int32_t c : home) pool.insert(pool.end(), by_class[c].begin(), by_class[c].end());
    const size_t want_home = static_cast<size_t>(std::round(o.home_fraction * sizes[t]));
    w.members[t] = DrawMembers(want_home, sizes[t], pool, n, rng);
    for (int32_t c : home) {
      (w.IsLarge(static_cast<uint32_t>(t)) ? large_of : small_of)[c].push_back(
          static_cast<uint32_t>(t));
    }
  }
  // Query i asks about test row i mod rows, for a tenant whose home holds its class: even i a
  // large tenant, odd i a small one (whichever exists).
  for (size_t i = 0; i < o.queries; ++i) {
    const uint32_t row = static_cast<uint32_t>(i % query_labels.size());
    const int32_t c = query_labels[row];
    const auto& first = (i % 2 == 0) ? large_of[c] : small_of[c];
    const auto& candidates = first.empty() ? ((i % 2 == 0) ? small_of[c] : large_of[c]) : first;
    if (candidates.empty()) continue;  // no tenant has this class at home
    std::uniform_int_distribution<size_t> pick(0, candidates.size() - 1);
    w.queries.push_back({candidates[pick(rng)], row});
  }
  if (w.queries.empty()) return absl::InvalidArgumentError("queries: no tenant holds their class");
  return w;
}

std::vector<int32_t> NearestSeedClasses(const Matrix& base, const Matrix& rows, int classes,
                                        uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, base.rows - 1);
  std::vector<size_t> seeds(classes);
  for (size_t& s : seeds) s = pick(rng);
  std::vector<int32_t> out(rows.rows);
  for (size_t i = 0; i < rows.rows; ++i) {
    double best = std::numeric_limits<double>::max();
    for (int c = 0; c < classes; ++c) {
      double d = 0;
      for (size_t j = 0; j < base.cols; ++j) {
        const double x = rows.Row(i)[j] - base.Row(seeds[c])[j];
        d += x * x;
      }
      if (d < best) best = d, out[i] = c;
    }
  }
  return out;
}

Neighbors ExactTenantSearch(const Matrix& base, const Matrix& queries, const TenantWorkload& w,
                            Metric metric, size_t k) {
  Neighbors out(w.queries.size(), k);
  std::vector<std::pair<double, uint32_t>> scored;
  for (size_t i = 0; i < w.queries.size(); ++i) {
    const auto& [tenant, row] = w.queries[i];
    scored.clear();
    for (uint32_t id : w.members[tenant]) {
      scored.emplace_back(TrueDistance(queries.Row(row), base.Row(id), base.cols, metric), id);
    }
    const size_t keep = std::min(k, scored.size());
    std::partial_sort(scored.begin(), scored.begin() + keep, scored.end());
    for (size_t j = 0; j < keep; ++j) {
      out.Ids(i)[j] = scored[j].second;
      out.Distances(i)[j] = static_cast<float>(scored[j].first);
    }
  }
  return out;
}

TenantScore ScoreTenantAnswers(const Matrix& base, const Matrix& queries, const TenantWorkload& w,
                               const Neighbors& truth, const Neighbors& found, Metric metric) {
  TenantScore s;
  double sum_small = 0, sum_large = 0;
  const size_t k = truth.k;
  for (size_t i = 0; i < w.queries.size() && i < found.nq; ++i) {
    const auto& [tenant, row] = w.queries[i];
    const size_t want = std::min(k, w.members[tenant].size());
    const double kth = want > 0 ? truth.distances[i * k + want - 1] : 0;
    absl::flat_hash_set<int64_t> hits;
    for (size_t j = 0; j < std::min(k, found.k); ++j) {
      const int64_t id = found.ids[i * found.k + j];
      if (id < 0) continue;
      if (!w.Sees(tenant, id)) {
        ++s.violations;
        continue;
      }
      const double d = TrueDistance(queries.Row(row), base.Row(id), base.cols, metric);
      if (d <= kth + 1e-3) hits.insert(id);
    }
    const double r = want == 0 ? 1.0 : std::min(1.0, static_cast<double>(hits.size()) / want);
    s.by_query.push_back(r);
    (w.IsLarge(tenant) ? sum_large : sum_small) += r;
    ++(w.IsLarge(tenant) ? s.large_queries : s.small_queries);
  }
  s.recall_small = s.small_queries ? sum_small / s.small_queries : 0;
  s.recall_large = s.large_queries ? sum_large / s.large_queries : 0;
  const size_t all = s.small_queries + s.large_queries;
  s.recall = all ? (sum_small + sum_large) / all : 0;
  return s;
}

}  // namespace shoal::bench

#include "index/spann/spann_calibration.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>

#include "absl/container/flat_hash_set.h"
#include "base/run_on_threads.h"
#include "base/status_macros.h"
#include "index/topk.h"

namespace shoal::index {
namespace {

constexpr size_t kK = 10;                 // recall@10, what the table is for
constexpr size_t kQueryBlock = 16;        // queries scored per pass over the rows
constexpr float kStopRecall = 0.999f;     // the ladder ends once reached
constexpr uint32_t kLadderMax = 1 << 12;  // and never scans more postings than this
// Standard errors of the sample mean taken off each row's recall (see the header).
constexpr double kMarginStandardErrors = 1.0;
// A pruned ladder also ends once its recall did not rise over this many rungs: its later rows
// scan more postings for the same recall, and no target takes them.
constexpr size_t kFlatRungs = 4;

// max_postings values tried: every value up to 16, then steps of about 1/16.
std::vector<uint32_t> Ladder(uint32_t num_postings) {
  std::vector<uint32_t> out;
  const uint32_t end = std::min(std::max(num_postings, 1u), kLadderMax);
  for (uint32_t m = 1; m <= end; m += std::max(1u, m / 16)) out.push_back(m);
  if (out.back() != end) out.push_back(end);
  return out;
}

// Seeded distinct rows of [0, n).
std::vector<size_t> SampleRows(size_t n, size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  absl::flat_hash_set<size_t> seen;
  std::vector<size_t> rows;
  while (rows.size() < count) {
    const size_t r = rng() % n;
    if (seen.insert(r).second) rows.push_back(r);
  }
  return rows;
}

// Per query: the 10th smallest distance to any other vector, from the backend's top kK + 1
// (one of them may be the query's own row) over blocks of backend_block_rows indexed rows (the
// kernel packs its centroids: a block bounds that copy), each recomputed with Distance() so that
// it is the value a search reports. False when the backend failed.
bool TrueKthByBackend(const CalibrationInput& in, const std::vector<size_t>& rows,
                      const std::vector<float>& queries, std::vector<float>* kth) {
  const size_t q = rows.size(), n = in.ids.size();
  const size_t block = std::max<size_t>(kK + 1, in.backend_block_rows);
  std::vector<TopK<uint64_t>> top(q, TopK<uint64_t>(kK));
  std::vector<uint32_t> labels;
  std::vector<float> distances;
  for (size_t b = 0; b < n; b += block) {
    const size_t rows_here = std::min(block, n - b), m = std::min(kK + 1, rows_here);
    labels.resize(q * m);
    distances.resize(q * m);
    if (!in.backend
             ->AssignTopM(queries.data(), q, in.vectors + b * in.dim, rows_here, in.dim, m, nullptr,
                          labels.data(), distances.data())
             .ok()) {
      return false;
    }
    for (size_t i = 0; i < q; ++i) {
      for (size_t j = 0; j < m; ++j) {
        const size_t row = b + labels[i * m + j];
        if (row == rows[i]) continue;
        top[i].Push(
            Distance(in.metric, queries.data() + i * in.dim, in.vectors + row * in.dim, in.dim),
            row);
      }
    }
  }
  kth->resize(q);
  for (size_t i = 0; i < q; ++i) (*kth)[i] = top[i].Threshold();
  return true;
}

// Per query: the 10th smallest distance to any other vector (brute force).
std::vector<float> TrueKth(const CalibrationInput& in, const std::vector<size_t>& rows,
                           const std::vector<float>& queries) {
  std::vector<float> kth;
  if (in.backend != nullptr && (in.metric == Metric::kL2 || in.unit_norm) &&
      TrueKthByBackend(in, rows, queries, &kth)) {
    return kth;
  }
  const size_t n = in.ids.size(), q = rows.size();
  kth.assign(q, 0);
  std::atomic<size_t> next_block{0};
  auto work = [&] {
    for (size_t b; (b = next_block.fetch_add(kQueryBlock)) < q;) {
      const size_t e = std::min(q, b + kQueryBlock);
      std::vector<TopK<uint64_t>> top(e - b, TopK<uint64_t>(kK));
      for (size_t j = 0; j < n; ++j) {
        const float* x = in.vectors + j * in.dim;
        for (size_t i = b; i < e; ++i) {
          if (j == rows[i]) continue;
          top[i - b].Push(Distance(in.metric, in.vectors + rows[i] * in.dim, x, in.dim), j);
        }
      }
      for (size_t i = b; i < e; ++i) kth[i] = top[i - b].Threshold();
    }
  };
  base::RunOnThreads(in.threads, [&](size_t) { work(); });
  return kth;
}

}  // namespace

RecallEstimate EstimateRecall(std::span<const double> per_query) {
  RecallEstimate r;
  const size_t n = per_query.size();
  if (n == 0) return r;
  for (double v : per_query) r.mean += v;
  r.mean /= static_cast<double>(n);
  if (n < 2) return r;
  double ss = 0;
  for (double v : per_query) ss += (v - r.mean) * (v - r.mean);
  r.se = std::sqrt(ss / static_cast<double>(n - 1) / static_cast<double>(n));
  return r;
}

namespace {

// The sampled rows and their vectors (queries).
struct Sample {
  std::vector<size_t> rows;
  std::vector<float> queries;
};

Sample SampleQueries(const CalibrationInput& in, size_t count) {
  Sample s;
  s.rows = SampleRows(in.ids.size(), std::min<size_t>(count, in.ids.size() - 1), in.seed);
  s.queries.reserve(s.rows.size() * in.dim);
  for (size_t r : s.rows) {
    s.queries.insert(s.queries.end(), in.vectors + r * in.dim, in.vectors + (r + 1) * in.dim);
  }
  return s;
}

// Query i's true neighbours among `found` (its own vector left out, the first kK others
// counted): a hit is within the 10th true distance (+ 1e-4 relative, so ties do not count as
// misses) + hit_epsilon.
size_t Hits(const CalibrationInput& in, const Sample& s, const std::vector<float>& kth, size_t i,
            std::span<const Neighbor> found) {
  const float limit = kth[i] + 1e-4f * std::abs(kth[i]) + 1e-6f + in.hit_epsilon;
  size_t taken = 0, hits = 0;
  for (const Neighbor& nb : found) {
    if (nb.id == in.ids[s.rows[i]] || taken == kK) continue;
    ++taken;
    if (nb.distance <= limit) ++hits;
  }
  return hits;
}

// The sample's queries with a finite true 10th distance (else fewer than 10 pass: not asked).
std::vector<size_t> Asked(const std::vector<float>& kth) {
  std::vector<size_t> asked;
  for (size_t i = 0; i < kth.size(); ++i) {
    if (std::isfinite(kth[i])) asked.push_back(i);
  }
  return asked;
}

// The ladder of max_postings for the sample's queries, each query's answer restricted to the ids
// `filter` passes (null: all) and scored against its true 10th distance `kth`.
// A query that found all its 10 keeps them at every larger max_postings (a search scans the
// nearest postings, so more of them only adds candidates): it is not searched again, and the
// rungs near the top, where most queries are done, cost only the few that are not.
absl::StatusOr<std::vector<CalibrationPoint>> RunLadder(const CalibrationInput& in, const Sample& s,
                                                        const std::vector<float>& kth,
                                                        const IdFilter* filter) {
  const std::vector<size_t> asked = Asked(kth);  // `active` and per_query index this
  if (asked.empty()) return std::vector<CalibrationPoint>();
  std::vector<double> per_query(asked.size(), 0.0);
  std::vector<size_t> active(asked.size());
  for (size_t a = 0; a < asked.size(); ++a) active[a] = a;
  std::vector<float> batch;
  std::vector<CalibrationPoint> table;
  for (uint32_t m : Ladder(in.num_postings)) {
    batch.clear();
    for (size_t a : active) {
      const size_t i = asked[a];
      batch.insert(batch.end(), s.queries.begin() + i * in.dim,
                   s.queries.begin() + (i + 1) * in.dim);
    }
    SearchParameters p;
    p.k = kK + 1;  // room for the query's own vector
    p.threads = std::max(1u, in.threads);
    p.max_postings = m;
    p.filter = filter;
    SHOAL_ASSIGN_OR_RETURN(auto found, in.index->Search(batch.data(), active.size(), p));
    size_t still = 0;
    for (size_t j = 0; j < active.size(); ++j) {
      const size_t i = asked[active[j]];
      const size_t hits = Hits(in, s, kth, i, found[j]);
      per_query[active[j]] = static_cast<double>(hits) / kK;
      if (hits < kK) active[still++] = active[j];
    }
    active.resize(still);
    const RecallEstimate r = EstimateRecall(per_query);
    table.push_back({m, static_cast<float>(std::max(0.0, r.mean - kMarginStandardErrors * r.se))});
    if (r.mean >= kStopRecall || active.empty()) break;
  }
  return table;
}

// The ladder with query-aware pruning at `ratio`, each query searched on its own (its postings
// scanned are its own SearchStats). Once pruning stops a query short of max_postings, it scans
// and finds the same at every larger one; a query that found its 10 keeps them, and one search
// deep enough to be stopped tells the postings it will scan: either way it is not searched
// again, its postings at each rung min(max_postings, where it stops). The ladder ends at
// kStopRecall, once every query is so settled, or once its recall stayed flat over kFlatRungs.
absl::StatusOr<std::vector<PrunedPoint>> RunPrunedLadder(const CalibrationInput& in,
                                                         const Sample& s,
                                                         const std::vector<float>& kth,
                                                         float ratio) {
  const std::vector<size_t> asked = Asked(kth);
  std::vector<PrunedPoint> table;
  if (asked.empty()) return table;
  std::vector<double> recall(asked.size(), 0.0);
  std::vector<uint32_t> scanned(asked.size(), 0), stop(asked.size(), 0);  // stop 0: not known
  std::vector<size_t> active(asked.size());
  for (size_t a = 0; a < asked.size(); ++a) active[a] = a;
  std::vector<absl::Status> status(std::max(1u, in.threads));
  const std::vector<uint32_t> ladder = Ladder(in.num_postings);
  // Query i searched at max_postings m: its hits, and the postings it scanned in *postings.
  auto search = [&](size_t i, uint32_t m, uint32_t* postings) -> absl::StatusOr<size_t> {
    SearchStats stats;
    SearchParameters p;
    p.k = kK + 1;  // room for the query's own vector
    p.max_postings = m;
    p.pruning_ratio = ratio;
    p.stats = &stats;
    SHOAL_ASSIGN_OR_RETURN(auto found, in.index->Search(s.queries.data() + i * in.dim, 1, p));
    *postings = static_cast<uint32_t>(stats.postings_read);
    return Hits(in, s, kth, i, found[0]);
  };
  for (uint32_t m : ladder) {
    std::atomic<size_t> next{0};
    const uint32_t deep = std::min(ladder.back(), 8 * m);  // where a query that found its 10 stops
    base::RunOnThreads(status.size(), [&](size_t t) {
      for (size_t j; status[t].ok() && (j = next.fetch_add(1)) < active.size();) {
        const size_t a = active[j], i = asked[a];
        absl::StatusOr<size_t> hits = search(i, m, &scanned[a]);
        uint32_t deep_scanned = 0;
        if (hits.ok()) recall[a] = static_cast<double>(*hits) / kK;
        if (hits.ok() && scanned[a] < m) {
          stop[a] = scanned[a];
        } else if (hits.ok() && *hits == kK && deep > m) {
          const absl::StatusOr<size_t> again = search(i, deep, &deep_scanned);
          if (!again.ok()) hits = again.status();
          if (again.ok() && deep_scanned < deep) stop[a] = deep_scanned;
        }
        if (!hits.ok()) status[t] = hits.status();
      }
    });
    for (const absl::Status& st : status) SHOAL_RETURN_IF_ERROR(st);
    std::erase_if(active, [&](size_t a) { return stop[a] != 0; });
    const RecallEstimate r = EstimateRecall(recall);
    double postings = 0;
    for (size_t a = 0; a < asked.size(); ++a) {
      postings += stop[a] != 0 ? std::min(m, stop[a]) : scanned[a];
    }
    table.push_back({m, static_cast<float>(std::max(0.0, r.mean - kMarginStandardErrors * r.se)),
                     static_cast<float>(postings / static_cast<double>(asked.size()))});
    const bool flat = table.size() > kFlatRungs &&
                      table.back().recall <= table[table.size() - 1 - kFlatRungs].recall;
    if (r.mean >= kStopRecall || active.empty() || flat) break;
  }
  return table;
}

// Is `id` among a random `density` of the ids? Nested: a smaller density's ids are among a
// larger one's.
double HashUnit(uint64_t id) {
  uint64_t z = id + 0x9e3779b97f4a7c15ull;  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

class DensityFilter final : public IdFilter {
 public:
  explicit DensityFilter(double density) : density_(density) {}
  bool Allows(uint64_t id) const override { return HashUnit(id) < density_; }

 private:
  double density_;
};

// Per query and density: the 10th smallest distance to any other vector the density's filter
// passes (infinity when fewer than 10 pass), one scan of every vector for all densities.
std::vector<std::vector<float>> RestrictedKth(const CalibrationInput& in, const Sample& s,
                                              std::span<const float> densities) {
  const size_t n = in.ids.size(), q = s.rows.size(), levels = densities.size();
  std::vector<double> unit(n);
  for (size_t j = 0; j < n; ++j) unit[j] = HashUnit(in.ids[j]);
  std::vector<std::vector<float>> kth(levels, std::vector<float>(q, 0));
  std::atomic<size_t> next_block{0};
  auto work = [&] {
    for (size_t b; (b = next_block.fetch_add(kQueryBlock)) < q;) {
      const size_t e = std::min(q, b + kQueryBlock);
      std::vector<TopK<uint64_t>> top((e - b) * levels, TopK<uint64_t>(kK));
      std::vector<size_t> pushed((e - b) * levels, 0);
      for (size_t j = 0; j < n; ++j) {
        if (unit[j] >= densities[0]) continue;  // densities descend
        const float* x = in.vectors + j * in.dim;
        for (size_t i = b; i < e; ++i) {
          if (j == s.rows[i]) continue;
          const float d = Distance(in.metric, s.queries.data() + i * in.dim, x, in.dim);
          for (size_t l = 0; l < levels && unit[j] < densities[l]; ++l) {
            top[(i - b) * levels + l].Push(d, j);
            ++pushed[(i - b) * levels + l];
          }
        }
      }
      for (size_t i = b; i < e; ++i) {
        for (size_t l = 0; l < levels; ++l) {
          const size_t at = (i - b) * levels + l;
          kth[l][i] = pushed[at] >= kK ? top[at].Threshold() : INFINITY;
        }
      }
    }
  };
  base::RunOnThreads(in.threads, [&](size_t) { work(); });
  return kth;
}

}  // namespace

absl::StatusOr<std::vector<CalibrationPoint>> CalibrateSpann(
    const CalibrationInput& in, std::span<const float> pruning_ratios,
    std::vector<PrunedCalibration>* pruned) {
  const size_t n = in.ids.size();
  if (pruned != nullptr) pruned->clear();
  if (in.index == nullptr || in.queries == 0 || n < kK + 2) return std::vector<CalibrationPoint>();
  const Sample s = SampleQueries(in, in.queries);
  const std::vector<float> kth = TrueKth(in, s.rows, s.queries);
  SHOAL_ASSIGN_OR_RETURN(std::vector<CalibrationPoint> table, RunLadder(in, s, kth, nullptr));
  for (float ratio : pruning_ratios) {
    if (pruned == nullptr) break;
    SHOAL_ASSIGN_OR_RETURN(std::vector<PrunedPoint> rows, RunPrunedLadder(in, s, kth, ratio));
    if (!rows.empty()) pruned->push_back({ratio, std::move(rows)});
  }
  return table;
}

absl::StatusOr<std::vector<DensityCalibration>> CalibrateRestricted(
    const CalibrationInput& in, std::span<const float> densities, uint32_t queries) {
  const size_t n = in.ids.size();
  std::vector<DensityCalibration> out;
  std::vector<float> kept;  // densities leaving kMinRestrictedIds ids to search among
  for (float d : densities) {
    if (d > 0 && d < 1 && d * static_cast<double>(n) >= kMinRestrictedIds) kept.push_back(d);
  }
  if (in.index == nullptr || queries == 0 || kept.empty()) return out;
  std::sort(kept.begin(), kept.end(), std::greater<>());
  const Sample s = SampleQueries(in, queries);
  const std::vector<std::vector<float>> kth = RestrictedKth(in, s, kept);
  for (size_t l = 0; l < kept.size(); ++l) {
    const DensityFilter filter(kept[l]);
    SHOAL_ASSIGN_OR_RETURN(std::vector<CalibrationPoint> table, RunLadder(in, s, kth[l], &filter));
    if (!table.empty()) out.push_back({kept[l], std::move(table)});
  }
  return out;
}

PruningChoice ChoosePruning(std::span<const PrunedCalibration> pruned, float target,
                            uint32_t unpruned) {
  PruningChoice best{unpruned, 0, static_cast<float>(unpruned)};
  for (const PrunedCalibration& c : pruned) {
    for (const PrunedPoint& p : c.table) {
      if (p.recall < target) continue;
      if (p.postings < best.postings) best = {p.max_postings, c.ratio, p.postings};
      break;  // a larger max_postings scans no fewer
    }
  }
  return best;
}

uint32_t MaxPostingsForRecall(std::span<const CalibrationPoint> table, float target) {
  if (table.empty()) return 0;
  const CalibrationPoint* best = &table[0];
  for (const CalibrationPoint& p : table) {
    if (p.recall >= target) return p.max_postings;
    if (p.recall > best->recall) best = &p;
  }
  return best->max_postings;
}

double PostingsForRecall(std::span<const CalibrationPoint> table, float target) {
  for (size_t i = 0; i < table.size(); ++i) {
    if (table[i].recall < target) continue;
    if (i == 0) return table[0].max_postings;
    const CalibrationPoint& below = table[i - 1];
    const double t = (target - below.recall) / (table[i].recall - below.recall);
    return below.max_postings + t * (table[i].max_postings - below.max_postings);
  }
  return MaxPostingsForRecall(table, target);
}

}  // namespace shoal::index

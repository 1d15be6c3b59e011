// SpannIndex's query path above the posting scan: the batch driver, the navigator's choice of
// postings (with a PostingScope) and the VectorIndex methods (see spann_index.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/drop_repeats.h"
#include "base/status_macros.h"
#include "index/distance/distance.h"
#include "index/postings/posting_navigator.h"
#include "index/spann/candidate_intervals.h"
#include "index/spann/spann_calibration.h"
#include "index/spann/spann_index.h"

namespace shoal::index {
namespace {

// Every live posting of `leaves` (tree leaves) with its float centroid's distance to q, as
// RankKeys.
void ScoreLeavesPostings(const PostingDirectory& dir, const float* q,
                         std::span<const uint32_t> leaves, std::vector<uint64_t>* out) {
  thread_local std::vector<uint32_t> postings;
  thread_local std::vector<const float*> rows;
  thread_local std::vector<float> dist;
  postings.clear();
  for (uint32_t leaf : leaves) {
    if (!dir.reshaped) {
      if (leaf < dir.size()) postings.push_back(leaf);  // posting p is tree leaf p
      continue;
    }
    for (uint32_t p : (*dir.by_leaf)[leaf]) {
      if (dir.live[p]) postings.push_back(p);
    }
  }
  // One call for all of them: the kernel shares the query's loads between rows.
  rows.resize(postings.size());
  dist.resize(postings.size());
  for (size_t i = 0; i < postings.size(); ++i) rows[i] = dir.centroid(postings[i]);
  L2SqrRows(q, rows.data(), rows.size(), dist.data(), dir.dim);
  out->resize(postings.size());
  for (size_t i = 0; i < postings.size(); ++i) (*out)[i] = RankKey(dist[i], postings[i]);
}

// Puts the `want` nearest of `pool` (RankKeys) first, ascending, and copies them to `out`;
// `ranked`: how many are already in place (from an earlier call with a smaller `want`).
void TakeNearest(std::vector<uint64_t>* pool, size_t want, size_t* ranked,
                 std::vector<std::pair<float, uint32_t>>* out) {
  want = std::min(want, pool->size());
  if (want > *ranked) {
    // A few of a few hundred: by vector minima where the CPU has AVX-512, else a heap (most of
    // a scope's postings are dropped on one comparison; nth_element's partitions mispredict on
    // every other one: ~1 us more on 240 postings).
    SmallestFirst(pool->data() + *ranked, pool->size() - *ranked, want - *ranked);
    *ranked = want;
  }
  out->resize(want);
  for (size_t i = 0; i < want; ++i) (*out)[i] = FromRankKey((*pool)[i]);
}

// The postings to scan for one query, nearest first: the m nearest (`scope` null: of all). A
// scope prunes the tree's descent (AllowsNode) and rejects postings (AllowsPosting); when fewer
// than m pass, the navigator asks for 4x as many until m pass or every posting was offered. A
// weighted scope (a tenant: PostingScope::weighted) takes the nearest allowed postings until their
// leaves hold `budget` of its vectors at the density they hold them at (each leaf counted once,
// whatever postings split from it; `per_leaf` vectors a leaf), at most kMaxWidening x m; short of
// it, the next descent asks for as many postings as the density met so far says it takes; the
// first descent asks for what the scope's mean density says (PostingScope::Extent).
// A scope that lists its leaves (PostingScope::Leaves) has its own postings scored flat, once,
// instead of descending: always with the flat navigator (`flat`), and with `by_cost` when scoring
// them costs no more than the descent for the first request (DescentCost::ScopeFlatIsCheaper).
void NearestAllowed(const CentroidTree& tree, const PostingDirectory& dir, const float* q, size_t m,
                    size_t beam, bool flat, const DescentCost* by_cost, const PostingScope* scope,
                    const ScopeBudget& budget, double per_leaf,
                    std::vector<std::pair<float, uint32_t>>* nearest) {
  if (scope == nullptr) {
    NearestPostings(tree, dir, q, m, beam, flat, nearest, CentroidScoring::kHalf);
    return;
  }
  const bool weighted = scope->weighted() && !budget.empty();
  const size_t most = weighted ? m * PostingScope::kMaxWidening : m;
  thread_local std::vector<uint32_t> counted;  // leaves whose weight is counted
  // The scope's mean density sizes the first descent: a descent's cost grows with what it is
  // asked for, but a second one repeats the first (profiled: large tenants' navigation ~1/3 of
  // their query, much of it descending again).
  size_t first = m;
  if (const auto [vectors, leaves] = scope->Extent(); weighted && vectors > 0 && leaves > 0) {
    const double want = budget.At(vectors / (leaves * per_leaf)) * leaves / vectors;
    first = std::clamp(static_cast<size_t>(std::ceil(want)), m, most);
  }
  const std::span<const uint32_t> own = scope->Leaves();
  // Postings per leaf: one until postings split or merge.
  const double per_leaf_postings =
      tree.num_leaves() > 0 ? static_cast<double>(dir.size()) / tree.num_leaves() : 1.0;
  const double own_postings = static_cast<double>(own.size()) * per_leaf_postings;
  const bool scan =
      !own.empty() && (flat || (by_cost != nullptr &&
                                by_cost->ScopeFlatIsCheaper(own_postings, dir.dim, first, beam)));
  thread_local std::vector<uint64_t> pool;  // the scope's postings, scanned (RankKeys)
  size_t ranked = 0;
  if (scan) ScoreLeavesPostings(dir, q, own, &pool);
  for (size_t want = first;;) {
    if (scan) {
      TakeNearest(&pool, want, &ranked, nearest);  // all the scope's own: nothing to reject
    } else {
      NearestPostings(tree, dir, q, want, beam, flat, nearest, CentroidScoring::kHalf, scope);
    }
    const size_t offered = nearest->size();
    if (!scan) {
      std::erase_if(*nearest, [&](const std::pair<float, uint32_t>& e) {
        return !scope->AllowsPosting(e.second, dir.origin[e.second]);
      });
    }
    size_t next = want * 4;
    if (weighted) {
      size_t covered = 0, i = 0;
      double needed = 0;
      counted.clear();
      for (; i < std::min(nearest->size(), most); ++i) {
        const uint32_t leaf = dir.origin[(*nearest)[i].second];
        if (dir.reshaped && std::find(counted.begin(), counted.end(), leaf) != counted.end()) {
          continue;
        }
        counted.push_back(leaf);
        covered += scope->LeafWeight(leaf);
        needed = budget.At(covered / (counted.size() * per_leaf));
        if (covered >= needed) break;
      }
      if (covered >= needed && i < nearest->size()) {
        nearest->resize(i + 1);
        break;
      }
      if (covered > 0)
        next = std::max(want * 2, static_cast<size_t>(i * needed * 5 / (covered * 4)) + 1);
      next = std::min(next, most);
      if (want >= most) break;
    } else if (nearest->size() >= m) {
      break;
    }
    if (offered < want || want >= dir.size()) break;
    want = next;
  }
  if (nearest->size() > most) nearest->resize(most);
}

// The rerank's reads of uncached vectors: the first round asks for what the top k still lacks
// plus kFirstRoundMargin, each next round for twice as many, and round kMaxReadRounds reads all
// that can still enter (how the sizes were chosen: docs/PERFORMANCE.md, the SSD regime, and
// "Shoal against SPTAG at 10M": a wider first round saves a read trip for most queries).
constexpr size_t kFirstRoundMargin = 12, kRoundGrowth = 2, kMaxReadRounds = 4;

}  // namespace

absl::StatusOr<std::vector<std::vector<Neighbor>>> SpannIndex::Search(
    const float* queries, size_t n, const SearchParameters& params) const {
  SpannKnobs knobs;
  knobs.max_postings = params.max_postings;
  knobs.target_recall = params.target_recall;
  knobs.pruning_ratio = params.pruning_ratio;
  knobs.scope = params.scope;
  return SearchWithKnobs(queries, n, params.k, knobs, params.threads, params.skip, params.filter,
                         params.stats, params.visited_leaves);
}

absl::Status SpannIndex::Add(std::span<const uint64_t> /*ids*/, const float* /*vectors*/,
                             std::span<const uint32_t> /*leaves*/) {
  return absl::FailedPreconditionError(
      "a SpannIndex changes only through its SpannUpdater (index/spann/spann_updater.h)");
}

absl::Status SpannIndex::Remove(std::span<const uint64_t> /*ids*/) {
  return absl::FailedPreconditionError(
      "a SpannIndex changes only through its SpannUpdater (index/spann/spann_updater.h)");
}

uint32_t SpannIndex::ResolveMaxPostings(const SpannKnobs& knobs) const {
  if (knobs.max_postings != 0) return knobs.max_postings;
  const float target = TargetRecall(knobs);
  const uint32_t calibrated = target > 0 ? MaxPostingsForRecall(manifest_.calibration, target) : 0;
  return calibrated != 0 ? calibrated : manifest_.options.max_postings;
}

void SpannIndex::ResolvePruning(const SpannKnobs& knobs, bool filtered,
                                SpannKnobs* resolved) const {
  // Only a target-recall search of every vector that asked for no pruning of its own: the pruned
  // calibration measured that (a scope's or a filter's search meets fewer of each posting).
  if (knobs.max_postings != 0 || knobs.pruning_ratio >= 0 || knobs.scope != nullptr || filtered ||
      manifest_.options.pruning_ratio != 0 || manifest_.pruned.empty()) {
    return;
  }
  const float target = TargetRecall(knobs);
  if (target <= 0 || manifest_.calibration.empty()) return;
  const PruningChoice c = ChoosePruning(manifest_.pruned, target, resolved->max_postings);
  resolved->max_postings = c.max_postings;
  resolved->pruning_ratio = c.ratio;
}

double ScopeBudget::At(double density) const {
  if (n_ == 0) return 0;
  if (density >= levels_[0].first) return levels_[0].second;
  for (size_t l = 0; l + 1 < n_; ++l) {
    const auto [hi, at_hi] = levels_[l];
    const auto [lo, at_lo] = levels_[l + 1];
    if (density < lo) continue;
    const double t = std::log(hi / density) / std::log(hi / lo);
    return std::exp((1 - t) * std::log(at_hi) + t * std::log(at_lo));
  }
  return levels_[n_ - 1].second;
}

ScopeBudget SpannIndex::WeightedScopeBudget(const SpannKnobs& knobs) const {
  ScopeBudget b;
  if (manifest_.restricted.empty()) {
    b.Add(1, static_cast<double>(CandidateBudget(knobs) / kWeightedBudgetDivisor));
    return b;
  }
  // A fixed scan depth reads the levels at the recall it reached unrestricted.
  float target = TargetRecall(knobs);
  if (knobs.max_postings != 0) {
    target = 0;
    for (const CalibrationPoint& p : manifest_.calibration) {
      if (p.max_postings <= knobs.max_postings) target = std::max(target, p.recall);
    }
  }
  if (target == 0 || manifest_.calibration.empty()) {
    b.Add(1, static_cast<double>(CandidateBudget(knobs)));
    return b;
  }
  b.Add(1, PostingsForRecall(manifest_.calibration, target) * VectorsPerLeaf());
  for (const DensityCalibration& d : manifest_.restricted) {
    b.Add(d.density, PostingsForRecall(d.table, target) * VectorsPerLeaf() * d.density);
  }
  return b;
}

void SpannIndex::Navigate(const PostingDirectory& dir, const float* q, const SpannKnobs& knobs,
                          std::vector<uint32_t>* postings) const {
  const size_t m = knobs.max_postings;  // resolved by SearchWithKnobs
  const float ratio =
      knobs.pruning_ratio >= 0 ? knobs.pruning_ratio : manifest_.options.pruning_ratio;
  thread_local std::vector<std::pair<float, uint32_t>> nearest;
  const size_t beam = manifest_.options.beam;
  const bool flat = flat_navigator_ || (navigator_by_cost_ && knobs.scope == nullptr &&
                                        descent_cost_.FlatIsCheaper(dir.size(), dir.dim, m, beam));
  NearestAllowed(tree_, dir, q, m, beam, flat, navigator_by_cost_ ? &descent_cost_ : nullptr,
                 knobs.scope, knobs.scope_budget, VectorsPerLeaf(), &nearest);
  if (ratio > 0) {  // prune on exact distances, not the half copy's
    for (auto& [dist, p] : nearest) {
      dist = L2Sqr(q, dir.centroid(p), dir.dim);
      if (std::isnan(dist)) dist = std::numeric_limits<float>::infinity();
    }
    std::sort(nearest.begin(), nearest.end());
  }
  postings->clear();
  const float limit = ratio > 0 && !nearest.empty() ? ratio * std::max(nearest[0].first, 1e-12f)
                                                    : std::numeric_limits<float>::infinity();
  for (const auto& [dist, p] : nearest) {
    if (dist > limit) break;
    postings->push_back(p);
  }
}

absl::StatusOr<std::vector<std::vector<Neighbor>>> SpannIndex::SearchWithKnobs(
    const float* queries, size_t n, size_t k, const SpannKnobs& knobs, size_t threads,
    const base::PagedIdSet* skip, const IdFilter* allow, SearchStats* stats,
    std::vector<std::vector<uint32_t>>* leaves) const {
  std::vector<std::vector<Neighbor>> out(n);
  if (leaves != nullptr) leaves->assign(n, {});
  SpannKnobs resolved = knobs;
  if (knobs.scope != nullptr && knobs.scope->weighted()) {
    resolved.scope_budget = WeightedScopeBudget(knobs);
  }
  resolved.max_postings = ResolveMaxPostings(knobs);
  ResolvePruning(knobs, allow != nullptr, &resolved);
  // An empty stale set excludes nothing: skip the per-entry hash probe.
  const Exclusion ex{skip != nullptr && skip->empty() ? nullptr : skip, allow};
  const std::shared_ptr<const PostingDirectory> dir = directory();
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, n);
  std::vector<SearchStats> per_thread(threads);
  std::vector<absl::Status> status(threads);
  auto work = [&](size_t t) {
    for (size_t i = t; i < n && status[t].ok(); i += threads) {
      status[t] = SearchOne(*dir, queries + i * manifest_.dimension, k, resolved, ex, &out[i],
                            &per_thread[t], leaves != nullptr ? &(*leaves)[i] : nullptr);
    }
  };
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t) workers.emplace_back(work, t);
  work(0);
  for (auto& w : workers) w.join();
  for (size_t t = 0; t < threads; ++t) {
    SHOAL_RETURN_IF_ERROR(status[t]);
    if (stats != nullptr) {
      stats->postings_read += per_thread[t].postings_read;
      stats->vectors_scored += per_thread[t].vectors_scored;
      stats->bytes_read += per_thread[t].bytes_read;
      stats->cache_hits += per_thread[t].cache_hits;
      stats->full_vectors_read += per_thread[t].full_vectors_read;
      stats->read_batches += per_thread[t].read_batches;
    }
  }
  return out;
}

absl::Status SpannIndex::RerankByLowerBound(const PostingDirectory& dir, const float* q, size_t k,
                                            std::span<const std::pair<float, uint64_t>> by_lower,
                                            std::span<const std::pair<float, uint64_t>> exact,
                                            std::vector<Neighbor>* out, SearchStats* stats) const {
  const size_t d = manifest_.dimension;
  // The first slice fills the top k; the later ones are small, since each may be the last.
  const size_t first_slice = 2 * k + 8, slice = k + 4;
  TopK<uint64_t> top(k);
  for (const auto& [distance, id] : exact) top.Push(distance, id);
  thread_local std::vector<uint64_t> ids;
  thread_local std::vector<size_t> missing;
  thread_local std::vector<std::pair<float, uint64_t>> uncached;
  uncached.clear();
  size_t i = 0;
  while (i < by_lower.size() && by_lower[i].first <= top.Threshold()) {
    // Ascending bounds: past one above the k-th kept distance, no survivor can enter.
    const size_t begin = i, end = std::min(by_lower.size(), i + (i == 0 ? first_slice : slice));
    ids.clear();
    for (; i < end; ++i) ids.push_back(by_lower[i].second);
    missing.clear();
    vector_cache_.LookupBatch(
        ids,
        [&](size_t j, const float* v) { top.Push(Distance(manifest_.metric, q, v, d), ids[j]); },
        &missing);
    stats->cache_hits += ids.size() - missing.size();
    for (size_t j : missing) uncached.push_back(by_lower[begin + j]);
  }
  // The uncached ones, read in rounds in the same order: each round's exact distances lower
  // the threshold, so a survivor kept only by a loose interval is not read at all.
  size_t next = 0,
         round_size = std::max(k - std::min(k, top.size()), size_t{1}) + kFirstRoundMargin;
  for (size_t round = 1; next < uncached.size(); ++round) {
    ids.clear();
    const bool last = round >= kMaxReadRounds;
    for (; next < uncached.size() && (last || ids.size() < round_size); ++next) {
      if (uncached[next].first > top.Threshold()) break;
      ids.push_back(uncached[next].second);
    }
    if (ids.empty()) break;
    SHOAL_RETURN_IF_ERROR(ReadAndScore(dir, q, ids, &top, stats));
    round_size *= kRoundGrowth;
  }
  out->clear();
  for (const auto& e : top.TakeSorted()) out->push_back({e.id, e.distance});
  return absl::OkStatus();
}

absl::Status SpannIndex::Rerank(const PostingDirectory& dir, const float* q, size_t k,
                                std::span<const uint64_t> ids, std::vector<Neighbor>* out,
                                SearchStats* stats) const {
  TopK<uint64_t> top(k);
  SHOAL_RETURN_IF_ERROR(ScoreExactly(dir, q, ids, &top, stats));
  out->clear();
  for (const auto& e : top.TakeSorted()) out->push_back({e.id, e.distance});
  return absl::OkStatus();
}

absl::Status SpannIndex::ScoreExactly(const PostingDirectory& dir, const float* q,
                                      std::span<const uint64_t> ids, TopK<uint64_t>* top,
                                      SearchStats* stats) const {
  const size_t d = manifest_.dimension;
  thread_local std::vector<size_t> missing_vectors;
  missing_vectors.clear();
  vector_cache_.LookupBatch(
      ids,
      [&](size_t i, const float* v) {
        // Most of a tenant's members or a selective filter's ids cannot enter the top k: each
        // stops once its partial distance shows it.
        top->Push(DistanceBounded(manifest_.metric, q, v, d, top->Threshold()), ids[i]);
      },
      &missing_vectors);
  stats->cache_hits += ids.size() - missing_vectors.size();
  std::vector<uint64_t> fetch;
  fetch.reserve(missing_vectors.size());
  for (size_t i : missing_vectors) fetch.push_back(ids[i]);
  return ReadAndScore(dir, q, fetch, top, stats);
}

absl::Status SpannIndex::ReadAndScore(const PostingDirectory& dir, const float* q,
                                      std::span<const uint64_t> fetch, TopK<uint64_t>* top,
                                      SearchStats* stats) const {
  if (fetch.empty()) return absl::OkStatus();
  const size_t d = manifest_.dimension;
  stats->full_vectors_read += fetch.size();
  ++stats->read_batches;
  stats->bytes_read += fetch.size() * storage::VectorFile::PagesPerVector(d) * storage::kPageSize;
  absl::Status read = dir.vectors->ReadBatch(fetch, [&](size_t i, const float* v) {
    top->Push(DistanceBounded(manifest_.metric, q, v, d, top->Threshold()), fetch[i]);
    vector_cache_.Insert(fetch[i], v);
    return absl::OkStatus();
  });
  // A posting lists the id, so its vector must be there: a hole (a zeroed page) is damage,
  // not an unknown key.
  if (absl::IsNotFound(read)) {
    return absl::DataLossError(absl::StrCat(read.message(),
                                            " but a posting lists it: the index is damaged "
                                            "(BuildIndex rebuilds it from the records)"));
  }
  return read;
}

absl::Status SpannIndex::SearchAmong(const float* q, size_t k, std::span<const uint64_t> ids,
                                     std::vector<Neighbor>* out, SearchStats* stats) const {
  const std::shared_ptr<const PostingDirectory> dir = directory();
  if (dir->vectors == nullptr) {
    return absl::FailedPreconditionError(
        "SearchAmong: this index keeps no vector file (quant=none): read the vectors elsewhere");
  }
  SearchStats local;
  SHOAL_RETURN_IF_ERROR(Rerank(*dir, q, k, ids, out, stats != nullptr ? stats : &local));
  if (stats != nullptr) stats->vectors_scored += ids.size();
  return absl::OkStatus();
}

}  // namespace shoal::index

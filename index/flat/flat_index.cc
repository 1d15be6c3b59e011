// FlatIndex: exact search. Two paths give the same answers:
//  - scan: the plain distance kernel against every row, then top-k (single queries, small
//    batches, CPUs without AVX-512);
//  - batched: a register-blocked AVX-512 kernel scores 8 queries x 48 rows at a time over base
//    tiles that stay in L2, ranking by ||x||^2 - 2<q,x> (L2) or -<q,x> (IP). That expansion
//    loses precision (values up to 255 give squared norms ~5e7), so it only nominates
//    candidates; the candidates are re-scored with the plain kernel. A rigorous error bound on
//    the expansion decides whether the candidate set provably contains the exact top-k; when it
//    cannot (rare), that query falls back to the scan. Rows and queries are visited
//    in norm order so that a whole (8-query block, 48-row panel) pair whose score lower bound
//    (triangle inequality) already exceeds every query's current threshold is skipped; skipped
//    rows are exactly rows the heap would have rejected, so the answer does not change.
// Fashion-MNIST (60k x 784, 10k queries, k=10, 2-core AVX-512 host): ~1.6x the QPS of FAISS
// 1.7.3 IndexFlatL2 (OpenBLAS GEMM) on 1 thread, ~2x on 2.
// Rows live in blocks (row_blocks.h): the scan walks them as contiguous runs; the batched path
// addresses rows by index anyway (norm order, gathered into tiles), so it spans all blocks at once.
#include "index/flat/flat_index.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <thread>

#include "base/run_on_threads.h"
#include "index/distance/distance_internal.h"
#include "index/topk.h"

namespace shoal::index {
namespace {

using internal::kPanelWidth;
using internal::kQueryBlock;

// Below this many queries (per thread) packing the base does not pay off.
constexpr size_t kMinBatchQueries = 16;
// Panels per base tile: 5 x 48 rows x 784 dims x 4 B = 750 KiB, well inside a 2 MiB L2.
constexpr size_t kTilePanels = 5;
constexpr size_t kTileRows = kTilePanels * kPanelWidth;
constexpr float kInf = std::numeric_limits<float>::infinity();

// The rows a search scores: the index's own, or a filtered copy. Row i is any of them by index
// (the batched path visits rows in norm order); scans walk the blocks as contiguous runs.
struct BaseView {
  const RowBlocks* rows;
  size_t n;
  size_t dim;
  Metric metric;
  const float* row(size_t i) const { return rows->row(i); }
  float norm(size_t i) const { return rows->norm(i); }
  uint64_t id(size_t i) const { return rows->id(i); }
};

std::vector<Neighbor> ToNeighbors(TopK<uint64_t>& top) {
  std::vector<Neighbor> out;
  out.reserve(top.size());
  for (const auto& e : top.TakeSorted()) out.push_back({e.id, e.distance});
  return out;
}

// Offers `count` contiguous rows to queries [q_begin, q_end) (everything by value, so the loop
// keeps it in registers).
void ScanRun(Metric metric, size_t dim, const float* vectors, const uint64_t* ids, size_t count,
             const IdFilter* allow, const float* queries, size_t q_begin, size_t q_end,
             TopK<uint64_t>* top) {
  for (size_t i = 0; i < count; ++i) {
    if (allow != nullptr && !allow->Allows(ids[i])) continue;
    const float* row = vectors + i * dim;
    for (size_t q = q_begin; q < q_end; ++q) {
      const float d = Distance(metric, queries + q * dim, row, dim);
      if (d <= top[q].Threshold()) top[q].Push(d, ids[i]);
    }
  }
}

// Plain-kernel scan of many queries. Each thread takes a slice of the rows and carries every
// query over it in chunks small enough to stay in L1/L2, so a row is read from memory once per
// chunk rather than once per query (the scan is memory-bound otherwise). The per-thread top-k
// are then merged; TopK is order-independent, so thread count and chunking never matter.
std::vector<std::vector<Neighbor>> SearchScan(const BaseView& base, const float* queries,
                                              size_t num_queries, size_t k, size_t threads,
                                              const IdFilter* allow = nullptr) {
  constexpr size_t kChunk = 16;
  threads = std::max<size_t>(1, std::min(threads, base.n / 1024));
  std::vector<std::vector<TopK<uint64_t>>> tops(threads);
  base::RunOnThreads(threads, [&](size_t t) {
    auto& top = tops[t];
    top.assign(num_queries, TopK<uint64_t>(k));
    const size_t begin = base.n * t / threads, end = base.n * (t + 1) / threads;
    for (size_t c = 0; c < num_queries; c += kChunk) {
      const size_t chunk_end = std::min(num_queries, c + kChunk);
      base.rows->ForEachRun(
          begin, end,
          [&](size_t, const float* vectors, const float*, const uint64_t* ids, size_t count) {
            ScanRun(base.metric, base.dim, vectors, ids, count, allow, queries, c, chunk_end,
                    top.data());
          });
    }
  });
  std::vector<std::vector<Neighbor>> out(num_queries);
  for (size_t q = 0; q < num_queries; ++q) {
    for (size_t t = 1; t < threads; ++t) {
      for (const auto& e : tops[t][q].TakeSorted()) tops[0][q].Push(e.distance, e.id);
    }
    out[q] = ToNeighbors(tops[0][q]);
  }
  return out;
}

// Upper bound on |approximate score - exact score| for one query, covering the float dot
// product and norms of the expansion (sequential accumulation, gamma_m = m*u with m = dim + 8)
// and the plain kernel's own rounding, with a factor 2 to spare: both sides are bounded by
// (|q| + |x|)^2 times gamma.
float ErrorBound(size_t dim, float query_norm, float max_norm) {
  const double u = 0x1p-24;
  const double r = static_cast<double>(query_norm) + max_norm;
  return static_cast<float>(4.0 * (static_cast<double>(dim) + 8) * u * r * r);
}

// Shared, read-only inputs of one batched Search: rows and queries ordered by norm, so that a
// panel of rows and a block of queries each span a narrow norm range and the triangle
// inequality can skip whole (block, panel) pairs.
struct BatchPlan {
  std::vector<uint32_t> row_order;    // rows sorted by norm
  std::vector<size_t> tile_order;     // tile starts (positions in row_order), in visiting order
  std::vector<uint32_t> query_order;  // queries sorted by norm; block b = entries [8b, 8b+8)
  size_t sample_tiles = 0;            // the first tile_order entries form the sample pass
  float max_norm = 0;
};

template <typename NormOf>
std::vector<uint32_t> SortedByNorm(size_t n, const NormOf& norm_of) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::vector<float> norms(n);
  for (size_t i = 0; i < n; ++i) {
    const float norm = norm_of(i);
    norms[i] = std::isnan(norm) ? kInf : norm;  // keeps the order strict-weak
  }
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return norms[a] < norms[b] || (norms[a] == norms[b] && a < b);
  });
  return order;
}

BatchPlan MakePlan(const BaseView& base, const float* queries, size_t num_queries) {
  BatchPlan plan;
  plan.row_order = SortedByNorm(base.n, [&](size_t i) { return base.norm(i); });
  plan.query_order = SortedByNorm(num_queries, [&](size_t i) {
    return InnerProduct(queries + i * base.dim, queries + i * base.dim, base.dim);
  });
  plan.max_norm = std::sqrt(base.norm(plan.row_order.back()));
  // Every 8th tile first: each query then holds decent candidates from its own norm range
  // early, and its threshold prunes most of the remaining tiles.
  const size_t tiles = (base.n + kTileRows - 1) / kTileRows;
  for (size_t t = 0; t < tiles; t += 8) plan.tile_order.push_back(t * kTileRows);
  plan.sample_tiles = plan.tile_order.size();
  for (size_t t = 0; t < tiles; ++t) {
    if (t % 8 != 0) plan.tile_order.push_back(t * kTileRows);
  }
  return plan;
}

// One thread's queries (whole blocks of the plan), packed dimension-major, zero-padded.
struct QueryBlocks {
  std::vector<uint32_t> index;  // query of each slot; slot = 8 * local block + lane
  std::vector<float> packed;
  std::vector<double> norm;  // |q| per slot
  std::vector<float> slack;  // per slot: bound on approximate-vs-exact score error, x2
};

// Fills packed, norm and slack from index (UINT32_MAX = padding slot).
void PackSlots(const float* queries, size_t dim, float max_norm, QueryBlocks& qb) {
  qb.packed.assign(qb.index.size() * dim, 0.0f);
  qb.norm.assign(qb.index.size(), 0.0);
  qb.slack.assign(qb.index.size(), 0.0f);
  for (size_t slot = 0; slot < qb.index.size(); ++slot) {
    if (qb.index[slot] == UINT32_MAX) continue;
    const float* src = queries + size_t{qb.index[slot]} * dim;
    float* dst = qb.packed.data() + (slot / kQueryBlock) * dim * kQueryBlock + slot % kQueryBlock;
    for (size_t d = 0; d < dim; ++d) dst[d * kQueryBlock] = src[d];
    const float norm = std::sqrt(InnerProduct(src, src, dim));
    qb.norm[slot] = norm;
    qb.slack[slot] = 2 * ErrorBound(dim, norm, max_norm);
  }
}

QueryBlocks PackQueries(const float* queries, const BaseView& base, const BatchPlan& plan,
                        size_t thread, size_t threads) {
  QueryBlocks qb;
  const size_t nq = plan.query_order.size();
  // Blocks go round-robin so every thread gets the same mix of norms (and of pruning).
  for (size_t b = thread; b * kQueryBlock < nq; b += threads) {
    for (size_t i = b * kQueryBlock; i < std::min(nq, (b + 1) * kQueryBlock); ++i) {
      qb.index.push_back(plan.query_order[i]);
    }
  }
  while (qb.index.size() % kQueryBlock != 0) qb.index.push_back(UINT32_MAX);  // padding
  PackSlots(queries, base.dim, plan.max_norm, qb);
  return qb;
}

// After the sample pass each query knows roughly how far it must still look: the rows it needs
// have norms within `radius` of its own. A block needs the union of its queries' ranges, so
// regroup: runs of 64 queries of similar norm, each run ordered by radius.
void Reblock(const float* queries, const BaseView& base, const BatchPlan& plan, QueryBlocks& qb,
             std::vector<TopK<uint32_t>>& approx) {
  std::vector<std::pair<double, size_t>> keyed;  // (radius, slot), slots in norm order
  for (size_t slot = 0; slot < qb.index.size(); ++slot) {
    if (qb.index[slot] == UINT32_MAX) continue;
    const double q = qb.norm[slot], t = approx[slot].Threshold();
    const double radius = base.metric == Metric::kL2 ? std::sqrt(std::max(0.0, t + q * q)) : t;
    keyed.emplace_back(std::isnan(radius) ? kInf : radius, slot);  // NaN would break the sort
  }
  constexpr size_t kRun = 64;
  for (size_t i = 0; i < keyed.size(); i += kRun) {
    std::sort(keyed.begin() + i, keyed.begin() + std::min(keyed.size(), i + kRun));
  }
  std::vector<uint32_t> index;
  std::vector<TopK<uint32_t>> heaps;
  heaps.reserve(qb.index.size());
  for (const auto& [radius, slot] : keyed) {
    index.push_back(qb.index[slot]);
    heaps.push_back(std::move(approx[slot]));
  }
  while (index.size() % kQueryBlock != 0) {
    index.push_back(UINT32_MAX);
    heaps.emplace_back(0);
  }
  qb.index = std::move(index);
  approx = std::move(heaps);
  PackSlots(queries, base.dim, plan.max_norm, qb);
}

// A tile of rows (positions [first, first + rows) of the plan's order), packed for the kernel.
struct Tile {
  std::vector<float> gathered;  // the rows, contiguous
  std::vector<float> packed;
  std::vector<float> bias;                // per-row score constant; +inf on padding lanes
  std::vector<float> min_norm, max_norm;  // |x| range per panel
  std::vector<uint32_t> row;              // row index of each lane
  size_t rows = 0;
};

void PackTile(const BaseView& base, const BatchPlan& plan, size_t first, Tile& tile) {
  const size_t dim = base.dim;
  tile.rows = std::min(kTileRows, base.n - first);
  tile.gathered.resize(kTileRows * dim);
  tile.packed.resize(kTileRows * dim);
  tile.bias.assign(kTileRows, kInf);
  tile.min_norm.assign(kTilePanels, kInf);
  tile.max_norm.assign(kTilePanels, 0.0f);
  tile.row.resize(kTileRows);
  for (size_t j = 0; j < tile.rows; ++j) {
    const uint32_t r = plan.row_order[first + j];
    tile.row[j] = r;
    std::memcpy(&tile.gathered[j * dim], base.row(r), dim * sizeof(float));
    const float row_norm = base.norm(r);
    tile.bias[j] = base.metric == Metric::kL2 ? row_norm : 0.0f;
    const float norm = std::sqrt(row_norm);
    tile.min_norm[j / kPanelWidth] = std::min(tile.min_norm[j / kPanelWidth], norm);
    tile.max_norm[j / kPanelWidth] = std::max(tile.max_norm[j / kPanelWidth], norm);
  }
  for (size_t start = 0; start < tile.rows; start += kPanelWidth) {
    internal::PackPanelAvx512(&tile.gathered[start * dim], std::min(kPanelWidth, tile.rows - start),
                              dim, &tile.packed[start * dim]);
  }
}

// Lower bound of any score of query `slot` against rows with norms in [lo, hi] (triangle
// inequality for L2, Cauchy-Schwarz for IP), minus the rounding slack, so that a threshold
// below it proves that every such row would be rejected anyway.
float ScoreLowerBound(const BaseView& base, const QueryBlocks& qb, size_t slot, double lo,
                      double hi) {
  // Norms carry relative rounding of about dim * 2^-24: widen the range by twice that.
  const double widen = 2.0 * (static_cast<double>(base.dim) + 8) * 0x1p-24;
  lo *= 1 - widen;
  hi *= 1 + widen;
  const double q = qb.norm[slot];
  double bound;
  if (base.metric == Metric::kL2) {
    const double gap = std::max({0.0, lo - q, q - hi});
    bound = gap * gap - q * q;
  } else {
    bound = -q * hi;
  }
  return static_cast<float>(bound - qb.slack[slot] - 1e-6 * std::abs(bound));
}

// Turns one query's approximate candidates into its exact top-k.
std::vector<Neighbor> Rerank(const BaseView& base, const float* query, size_t k, float max_norm,
                             TopK<uint32_t>& approx) {
  const size_t capacity = approx.k();
  const auto candidates = approx.TakeSorted();
  if (candidates.size() == capacity && capacity < base.n) {
    // Every exact top-k row scores at most kth + 2E; if the heap's worst is not beyond that,
    // a dropped row may have belonged.
    const float kth = candidates[std::min(k, candidates.size()) - 1].distance;
    const float query_norm = std::sqrt(InnerProduct(query, query, base.dim));
    const float slack = 2 * ErrorBound(base.dim, query_norm, max_norm);
    if (!(candidates.back().distance > kth + slack)) return SearchScan(base, query, 1, k, 1)[0];
  }
  TopK<uint64_t> top(k);
  for (const auto& c : candidates) {
    top.Push(Distance(base.metric, query, base.row(c.id), base.dim), base.id(c.id));
  }
  return ToNeighbors(top);
}

// Scores one block against one panel and offers the hits to the block's heaps.
void ScorePanel(const QueryBlocks& qb, size_t block, const Tile& tile, size_t panel, size_t dim,
                float scale, float* thresholds, TopK<uint32_t>* heaps) {
  float scores[kQueryBlock * kPanelWidth];
  uint64_t masks[kQueryBlock];
  internal::ScoreBlockAvx512(&qb.packed[block * dim * kQueryBlock],
                             &tile.packed[panel * dim * kPanelWidth], dim,
                             &tile.bias[panel * kPanelWidth], scale, thresholds, scores, masks);
  const size_t valid = std::min(kPanelWidth, tile.rows - panel * kPanelWidth);
  const uint64_t valid_mask = (uint64_t{1} << valid) - 1;
  for (size_t q = 0; q < kQueryBlock; ++q) {
    for (uint64_t m = masks[q] & valid_mask; m != 0; m &= m - 1) {
      const size_t j = panel * kPanelWidth + __builtin_ctzll(m);
      heaps[q].Push(scores[q * kPanelWidth + (j % kPanelWidth)], tile.row[j]);
    }
    thresholds[q] = heaps[q].Threshold();
  }
}

// Batched search (AVX-512 only) of this thread's share of the plan's query blocks.
void SearchBatch(const BaseView& base, const float* queries, const BatchPlan& plan, size_t k,
                 size_t thread, size_t threads, std::vector<std::vector<Neighbor>>& out) {
  const size_t dim = base.dim;
  QueryBlocks qb = PackQueries(queries, base, plan, thread, threads);
  const size_t blocks = qb.index.size() / kQueryBlock;
  // Extra candidates give the error bound room; see Rerank. Padding slots keep nothing.
  const size_t capacity = std::min(base.n, k + std::max<size_t>(k, 32));
  std::vector<TopK<uint32_t>> approx;
  approx.reserve(qb.index.size());
  for (uint32_t q : qb.index) approx.emplace_back(q == UINT32_MAX ? 0 : capacity);
  const float scale = base.metric == Metric::kL2 ? -2.0f : -1.0f;
  Tile tile;
  for (size_t i = 0; i < plan.tile_order.size(); ++i) {
    if (i == plan.sample_tiles) Reblock(queries, base, plan, qb, approx);
    PackTile(base, plan, plan.tile_order[i], tile);
    for (size_t b = 0; b < blocks; ++b) {
      TopK<uint32_t>* heaps = &approx[b * kQueryBlock];
      float thresholds[kQueryBlock];
      for (size_t q = 0; q < kQueryBlock; ++q) {
        thresholds[q] = heaps[q].k() == 0 ? -kInf : heaps[q].Threshold();
      }
      for (size_t p = 0; p * kPanelWidth < tile.rows; ++p) {
        bool needed = false;
        for (size_t q = 0; q < kQueryBlock && !needed; ++q) {
          needed =
              heaps[q].k() != 0 && ScoreLowerBound(base, qb, b * kQueryBlock + q, tile.min_norm[p],
                                                   tile.max_norm[p]) <= thresholds[q];
        }
        if (needed) ScorePanel(qb, b, tile, p, dim, scale, thresholds, heaps);
      }
    }
  }
  for (size_t slot = 0; slot < qb.index.size(); ++slot) {
    if (qb.index[slot] == UINT32_MAX) continue;
    const size_t q = qb.index[slot];
    out[q] = Rerank(base, queries + q * dim, k, plan.max_norm, approx[slot]);
  }
}

}  // namespace

FlatIndex::FlatIndex(size_t dimension, Metric metric)
    : dimension_(dimension), metric_(metric), rows_(dimension) {}

size_t FlatIndex::MemoryBytes() const { return rows_.MemoryBytes() + slot_of_.MemoryBytes(); }

void FlatIndex::Add(uint64_t id, const float* vector) {
  const float norm = InnerProduct(vector, vector, dimension_);
  if (slot_of_.Insert(id, rows_.size())) {
    rows_.Append(id, vector, norm);
  } else {
    rows_.Overwrite(*slot_of_.Find(id), vector, norm);
  }
}

bool FlatIndex::Remove(uint64_t id) {
  const size_t* found = slot_of_.Find(id);
  if (found == nullptr) return false;
  const size_t slot = *found;
  slot_of_.Erase(id);
  const size_t last = rows_.size() - 1;
  if (slot != last) slot_of_.Set(rows_.id(last), slot);  // the last row moves into the hole
  rows_.RemoveByMovingLast(slot);
  return true;
}

std::vector<std::vector<Neighbor>> FlatIndex::Search(const float* queries, size_t num_queries,
                                                     size_t k, size_t threads) const {
  return Search(queries, num_queries, k, threads, nullptr);
}

std::vector<std::vector<Neighbor>> FlatIndex::Search(const float* queries, size_t num_queries,
                                                     size_t k, size_t threads,
                                                     const IdFilter* allow) const {
  std::vector<std::vector<Neighbor>> out(num_queries);
  if (k == 0 || rows_.size() == 0 || num_queries == 0) return out;
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  BaseView base{&rows_, rows_.size(), dimension_, metric_};
  const bool batched = internal::ActiveKernels().level == internal::KernelLevelId::kAvx512 &&
                       num_queries >= kMinBatchQueries && rows_.size() <= UINT32_MAX &&
                       dimension_ * kPanelWidth < (size_t{1} << 31);
  if (!batched) return SearchScan(base, queries, num_queries, k, threads, allow);
  // The batched kernel scores whole panels, so it gets a base of the allowed rows only: one copy
  // per request, amortised over at least kMinBatchQueries queries.
  RowBlocks allowed(dimension_);
  if (allow != nullptr) {
    rows_.ForEachRun(
        0, rows_.size(),
        [&](size_t, const float* vectors, const float* norms, const uint64_t* ids, size_t count) {
          for (size_t i = 0; i < count; ++i) {
            if (allow->Allows(ids[i])) allowed.Append(ids[i], vectors + i * dimension_, norms[i]);
          }
        });
    if (allowed.size() == 0) return out;
    base = BaseView{&allowed, allowed.size(), dimension_, metric_};
  }
  const BatchPlan plan = MakePlan(base, queries, num_queries);
  const size_t blocks = (num_queries + kQueryBlock - 1) / kQueryBlock;
  // Each thread packs the whole base, which pays off from ~64 queries per thread.
  threads = std::min({threads, blocks, std::max<size_t>(1, num_queries / 64)});
  shoal::base::RunOnThreads(
      threads, [&](size_t t) { SearchBatch(base, queries, plan, k, t, threads, out); });
  return out;
}

absl::Status FlatIndex::Add(std::span<const uint64_t> ids, const float* vectors,
                            std::span<const uint32_t> /*leaves*/) {
  for (size_t i = 0; i < ids.size(); ++i) Add(ids[i], vectors + i * dimension_);
  return absl::OkStatus();
}

absl::Status FlatIndex::Remove(std::span<const uint64_t> ids) {
  for (uint64_t id : ids) Remove(id);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<Neighbor>>> FlatIndex::Search(
    const float* queries, size_t n, const SearchParameters& params) const {
  const ExcludingFilter excluding(params.filter, params.skip);
  return Search(queries, n, params.k, params.threads, excluding.Effective());
}

}  // namespace shoal::index

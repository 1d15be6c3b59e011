// FlatIndex: exact search. Two paths give the same answers:
//  - per query: the plain distance kernel against every row, then top-k (single queries, small
//    batches, CPUs without AVX-512);
//  - batched: a register-blocked AVX-512 kernel scores 8 queries x 48 rows at a time over base
//    tiles that stay in L2, ranking by ||x||^2 - 2<q,x> (L2) or -<q,x> (IP). That expansion
//    loses precision (values up to 255 give squared norms ~5e7), so it only nominates
//    candidates; the candidates are re-scored with the plain kernel. A rigorous error bound on
//    the expansion decides whether the candidate set provably contains the exact top-k; when it
//    cannot (rare), that query falls back to the per-query path.
#include "index/flat_index.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "index/distance_internal.h"
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

struct BaseView {
  const float* vectors;
  const float* norms;
  const uint64_t* ids;
  size_t n;
  size_t dim;
  Metric metric;
  const float* row(size_t i) const { return vectors + i * dim; }
};

std::vector<Neighbor> ToNeighbors(TopK<uint64_t>& top) {
  std::vector<Neighbor> out;
  out.reserve(top.size());
  for (const auto& e : top.TakeSorted()) out.push_back({e.id, e.distance});
  return out;
}

std::vector<Neighbor> SearchOneExact(const BaseView& base, const float* query, size_t k) {
  TopK<uint64_t> top(k);
  for (size_t i = 0; i < base.n; ++i) {
    const float d = Distance(base.metric, query, base.row(i), base.dim);
    if (d <= top.Threshold()) top.Push(d, base.ids[i]);
  }
  return ToNeighbors(top);
}

// Runs fn(begin, end) over [0, n) split into `threads` contiguous chunks, multiples of `grain`.
template <typename Fn>
void ParallelFor(size_t n, size_t threads, size_t grain, const Fn& fn) {
  const size_t units = (n + grain - 1) / grain;
  threads = std::max<size_t>(1, std::min(threads, units));
  if (threads == 1) {
    fn(size_t{0}, n);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(threads - 1);
  size_t begin = 0;
  for (size_t t = 0; t < threads; ++t) {
    const size_t end = std::min(n, (units * (t + 1) / threads) * grain);
    if (t + 1 == threads) {
      fn(begin, end);
    } else {
      workers.emplace_back([&fn, begin, end] { fn(begin, end); });
    }
    begin = end;
  }
  for (auto& w : workers) w.join();
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

// Packs queries [first, first + count) into blocks of kQueryBlock, dimension-major, zero-padded.
std::vector<float> PackQueries(const float* queries, size_t dim, size_t first, size_t count) {
  const size_t blocks = (count + kQueryBlock - 1) / kQueryBlock;
  std::vector<float> packed(blocks * dim * kQueryBlock, 0.0f);
  for (size_t i = 0; i < count; ++i) {
    float* dst = packed.data() + (i / kQueryBlock) * dim * kQueryBlock + i % kQueryBlock;
    const float* src = queries + (first + i) * dim;
    for (size_t d = 0; d < dim; ++d) dst[d * kQueryBlock] = src[d];
  }
  return packed;
}

// Packs rows [first, first + rows) into panels of kPanelWidth, dimension-major, zero-padded;
// bias is the per-row constant of the score (+inf on padding lanes).
void PackTile(const BaseView& base, size_t first, size_t rows, float* packed, float* bias) {
  const size_t panels = (rows + kPanelWidth - 1) / kPanelWidth;
  for (size_t j = 0; j < panels * kPanelWidth; ++j) {
    float* dst = packed + (j / kPanelWidth) * base.dim * kPanelWidth + j % kPanelWidth;
    if (j < rows) {
      const float* src = base.row(first + j);
      for (size_t d = 0; d < base.dim; ++d) dst[d * kPanelWidth] = src[d];
      bias[j] = base.metric == Metric::kL2 ? base.norms[first + j] : 0.0f;
    } else {
      for (size_t d = 0; d < base.dim; ++d) dst[d * kPanelWidth] = 0.0f;
      bias[j] = kInf;
    }
  }
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
    if (!(candidates.back().distance > kth + slack)) return SearchOneExact(base, query, k);
  }
  TopK<uint64_t> top(k);
  for (const auto& c : candidates) {
    top.Push(Distance(base.metric, query, base.row(c.id), base.dim), base.ids[c.id]);
  }
  return ToNeighbors(top);
}

// Pushes one query's scores of a tile into its candidate heap.
void Collect(const float* scores, size_t rows, uint32_t first_row, TopK<uint32_t>& approx) {
  float threshold = approx.Threshold();
  for (size_t j = 0; j < rows; ++j) {
    if (scores[j] <= threshold && approx.Push(scores[j], first_row + j)) {
      threshold = approx.Threshold();
    }
  }
}

// Batched search of queries [first, first + count) (AVX-512 only).
void SearchBatch(const BaseView& base, const float* queries, size_t first, size_t count, size_t k,
                 float max_norm, std::vector<std::vector<Neighbor>>& out) {
  const size_t dim = base.dim;
  const std::vector<float> qpack = PackQueries(queries, dim, first, count);
  const size_t blocks = (count + kQueryBlock - 1) / kQueryBlock;
  // Extra candidates give the error bound room; see Rerank.
  const size_t capacity = std::min(base.n, k + std::max<size_t>(k, 32));
  std::vector<TopK<uint32_t>> approx(count, TopK<uint32_t>(capacity));
  std::vector<float> packed(kTilePanels * kPanelWidth * dim);
  std::vector<float> bias(kTileRows);
  std::vector<float> scores(kQueryBlock * kTileRows);
  const float scale = base.metric == Metric::kL2 ? -2.0f : -1.0f;

  for (size_t tile = 0; tile < base.n; tile += kTileRows) {
    const size_t rows = std::min(kTileRows, base.n - tile);
    const size_t panels = (rows + kPanelWidth - 1) / kPanelWidth;
    PackTile(base, tile, rows, packed.data(), bias.data());
    for (size_t b = 0; b < blocks; ++b) {
      for (size_t p = 0; p < panels; ++p) {
        internal::ScoreBlockAvx512(
            qpack.data() + b * dim * kQueryBlock, packed.data() + p * dim * kPanelWidth, dim,
            bias.data() + p * kPanelWidth, scale, scores.data() + p * kPanelWidth, kTileRows);
      }
      const size_t in_block = std::min(kQueryBlock, count - b * kQueryBlock);
      for (size_t q = 0; q < in_block; ++q) {
        Collect(scores.data() + q * kTileRows, rows, static_cast<uint32_t>(tile),
                approx[b * kQueryBlock + q]);
      }
    }
  }
  for (size_t i = 0; i < count; ++i) {
    out[first + i] = Rerank(base, queries + (first + i) * dim, k, max_norm, approx[i]);
  }
}

}  // namespace

FlatIndex::FlatIndex(size_t dimension, Metric metric) : dimension_(dimension), metric_(metric) {}

size_t FlatIndex::MemoryBytes() const {
  return vectors_.capacity() * sizeof(float) + norms_.capacity() * sizeof(float) +
         ids_.capacity() * sizeof(uint64_t) +
         slot_of_.capacity() * (sizeof(std::pair<uint64_t, size_t>) + 1);
}

void FlatIndex::Add(uint64_t id, const float* vector) {
  const auto [it, inserted] = slot_of_.try_emplace(id, ids_.size());
  const float norm = InnerProduct(vector, vector, dimension_);
  if (inserted) {
    ids_.push_back(id);
    vectors_.insert(vectors_.end(), vector, vector + dimension_);
    norms_.push_back(norm);
  } else {
    std::memmove(vectors_.data() + it->second * dimension_, vector, dimension_ * sizeof(float));
    norms_[it->second] = norm;
  }
}

bool FlatIndex::Remove(uint64_t id) {
  const auto it = slot_of_.find(id);
  if (it == slot_of_.end()) return false;
  const size_t slot = it->second;
  const size_t last = ids_.size() - 1;
  slot_of_.erase(it);
  if (slot != last) {  // swap-with-last keeps rows dense
    std::memcpy(vectors_.data() + slot * dimension_, vectors_.data() + last * dimension_,
                dimension_ * sizeof(float));
    norms_[slot] = norms_[last];
    ids_[slot] = ids_[last];
    slot_of_[ids_[slot]] = slot;
  }
  vectors_.resize(last * dimension_);
  norms_.pop_back();
  ids_.pop_back();
  return true;
}

std::vector<std::vector<Neighbor>> FlatIndex::Search(const float* queries, size_t num_queries,
                                                     size_t k, size_t threads) const {
  std::vector<std::vector<Neighbor>> out(num_queries);
  if (k == 0 || ids_.empty() || num_queries == 0) return out;
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const BaseView base{vectors_.data(), norms_.data(), ids_.data(),
                      ids_.size(),     dimension_,    metric_};
  const bool batched = internal::ActiveKernels().level == internal::KernelLevelId::kAvx512 &&
                       num_queries >= kMinBatchQueries && ids_.size() <= UINT32_MAX;
  if (!batched) {
    ParallelFor(num_queries, threads, 1, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i)
        out[i] = SearchOneExact(base, queries + i * dimension_, k);
    });
    return out;
  }
  const float max_norm = std::sqrt(*std::max_element(norms_.begin(), norms_.end()));
  threads = std::min(threads, std::max<size_t>(1, num_queries / kMinBatchQueries));
  ParallelFor(num_queries, threads, kQueryBlock, [&](size_t begin, size_t end) {
    SearchBatch(base, queries, begin, end - begin, k, max_norm, out);
  });
  return out;
}

}  // namespace shoal::index

#include "index/spann/posting_size.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <utility>

#include "absl/status/status.h"
#include "base/status_macros.h"
#include "index/flat/flat_index.h"
#include "index/quantization/quantizer.h"

namespace shoal::index {
namespace {

constexpr uint32_t kQueries = 400;
constexpr uint32_t kNeighbours = 10;
constexpr uint32_t kSmallestSize = 32, kLargestSize = 512;
constexpr size_t kFewestPostings = 8;  // in a region, for a size to be tried
// k-means rounds per cut: the cuts are compared with each other, not kept, and most of what
// more rounds change is the same for every size.
constexpr uint32_t kIterations = 3;
// The cost model, in nanoseconds of the machine it was measured on (only the ratios matter).
constexpr double kPostingNs = 1300, kPostingNsPerDim = 2.8;
constexpr double kEntryNsPerBit = 0.0125;

// Bits per dimension of an entry as the search scans it: its code (factors included), or the
// full float vector without a quantizer.
absl::StatusOr<double> EntryBitsPerDim(const SpannOptions& o, size_t dim) {
  if (o.quant == "none") return 32.0;
  SHOAL_ASSIGN_OR_RETURN(auto quantizer, MakeQuantizer(o.quant, dim, o.seed));
  return 8.0 * quantizer->code_bytes() / dim;
}

// Rows of the data a size is measured on, at the data's own density, and the rows among them
// that ask: their true neighbours (within the region) are the recall's reference.
struct Region {
  std::vector<float> rows;        // size() x dim
  std::vector<uint32_t> queries;  // indexes into rows
  std::vector<float> asked;       // those rows, queries.size() x dim
  size_t size(size_t dim) const { return rows.size() / dim; }
  void CopyQueries(size_t dim) {
    asked.resize(queries.size() * dim);
    for (size_t qi = 0; qi < queries.size(); ++qi) {
      std::copy_n(rows.data() + size_t{queries[qi]} * dim, dim, asked.data() + qi * dim);
    }
  }
};

// All the data when it is no larger than one sample (queries: seeded random rows); else
// kPostingSizeRegions regions, each the kPostingSizeRegionRows rows nearest a seeded random row,
// with queries drawn from the quarter of it nearest that row, so that their neighbours lie
// inside it.
std::vector<Region> MakeRegions(const float* vectors, size_t n, size_t dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Region> regions;
  if (n <= kPostingSizeSample) {
    Region& r = regions.emplace_back();
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    for (size_t i = 0; i < n; ++i) std::swap(order[i], order[i + rng() % (n - i)]);
    r.rows.resize(n * dim);
    for (size_t i = 0; i < n; ++i) {
      std::copy_n(vectors + size_t{order[i]} * dim, dim, r.rows.data() + i * dim);
    }
    r.queries.resize(std::min<size_t>(kQueries, n - 1));
    std::iota(r.queries.begin(), r.queries.end(), 0u);
    r.CopyQueries(dim);
    return regions;
  }
  const size_t rows = kPostingSizeRegionRows;
  std::vector<std::pair<float, uint32_t>> nearest;  // max-heap of the `rows` nearest so far
  for (size_t g = 0; g < kPostingSizeRegions; ++g) {
    const float* centre = vectors + (rng() % n) * dim;
    nearest.clear();
    for (size_t i = 0; i < n; ++i) {
      const float d = L2Sqr(centre, vectors + i * dim, dim);
      if (nearest.size() == rows) {
        if (!(d < nearest.front().first)) continue;
        std::pop_heap(nearest.begin(), nearest.end());
        nearest.pop_back();
      }
      nearest.emplace_back(d, static_cast<uint32_t>(i));
      std::push_heap(nearest.begin(), nearest.end());
    }
    std::sort_heap(nearest.begin(), nearest.end());  // nearest the centre first
    Region& r = regions.emplace_back();
    r.rows.resize(rows * dim);
    for (size_t i = 0; i < rows; ++i) {
      std::copy_n(vectors + size_t{nearest[i].second} * dim, dim, r.rows.data() + i * dim);
    }
    std::vector<uint32_t> inner(rows / 4);
    std::iota(inner.begin(), inner.end(), 0u);
    const size_t count = std::min(kQueries / kPostingSizeRegions, inner.size());
    for (size_t i = 0; i < count; ++i) std::swap(inner[i], inner[i + rng() % (inner.size() - i)]);
    r.queries.assign(inner.begin(), inner.begin() + count);
    r.CopyQueries(dim);
  }
  return regions;
}

// The region's true 10 nearest neighbours of each of its queries, the query itself excluded
// (exact search, in the metric).
std::vector<uint32_t> RegionNeighbours(const Region& r, size_t dim, Metric metric) {
  const size_t s = r.size(dim);
  FlatIndex flat(dim, metric);
  for (size_t j = 0; j < s; ++j) flat.Add(j, r.rows.data() + j * dim);
  const auto found = flat.Search(r.asked.data(), r.queries.size(), kNeighbours + 1, /*threads=*/0);
  std::vector<uint32_t> out(r.queries.size() * kNeighbours);
  for (size_t qi = 0; qi < r.queries.size(); ++qi) {
    size_t i = 0;
    for (const Neighbor& nb : found[qi]) {
      if (nb.id != r.queries[qi] && i < kNeighbours) out[qi * kNeighbours + i++] = nb.id;
    }
  }
  return out;
}

// Cuts every region into postings of `size` vectors and scores the cut against the
// regions' true neighbours (see posting_size.h).
absl::StatusOr<PostingSizeCandidate> Measure(ClusteringBackend& backend,
                                             const std::vector<Region>& regions,
                                             const std::vector<std::vector<uint32_t>>& truth,
                                             uint32_t size, size_t dim, double entry_bits,
                                             const SpannOptions& o) {
  const size_t s = regions[0].size(dim);  // every region has as many rows
  size_t queries = 0;
  for (const Region& r : regions) queries += r.queries.size();
  KMeansOptions ko;
  ko.k = static_cast<uint32_t>(s / size);
  ko.iterations = std::min<uint32_t>(o.iterations, kIterations);
  ko.seed = o.seed;
  // hits[r] = true neighbours found at rank r; entries[q][r] = entries of query q's r-th
  // posting (by centroid distance), over every region's queries.
  std::vector<uint64_t> hits(ko.k, 0);
  std::vector<uint32_t> rank(ko.k), order;
  std::vector<float> dist;
  std::vector<std::vector<uint32_t>> entries;
  for (size_t g = 0; g < regions.size(); ++g) {
    const Region& region = regions[g];
    SHOAL_ASSIGN_OR_RETURN(KMeansResult km, KMeans(backend, region.rows.data(), s, dim, ko));
    // Every query's postings by centroid distance, nearest first.
    order.resize(region.queries.size() * ko.k);
    dist.resize(order.size());
    SHOAL_RETURN_IF_ERROR(backend.AssignTopM(region.asked.data(), region.queries.size(),
                                             km.centroids.data(), ko.k, dim, ko.k, nullptr,
                                             order.data(), dist.data()));
    for (size_t qi = 0; qi < region.queries.size(); ++qi) {
      const uint32_t* ranked = &order[qi * ko.k];
      for (uint32_t r = 0; r < ko.k; ++r) rank[ranked[r]] = r;
      for (uint32_t i = 0; i < kNeighbours; ++i) {
        ++hits[rank[km.labels[truth[g][qi * kNeighbours + i]]]];
      }
      std::vector<uint32_t>& e = entries.emplace_back(ko.k);
      for (uint32_t r = 0; r < ko.k; ++r) e[r] = km.sizes[ranked[r]];
    }
  }
  // The first rank r whose postings reach the target; the r-th posting counted in the
  // proportion of its hits that the target still needed, so that P and C do not jump by
  // whole postings between sizes.
  PostingSizeCandidate c;
  c.vectors_per_posting = size;
  const double wanted = double{o.target_recall} * kNeighbours * queries;
  uint64_t found = 0;
  uint32_t r = 0;
  while (r < ko.k && found + hits[r] < wanted) found += hits[r++];
  const double part = r == 0 ? 1.0  // a query scans at least one posting
                      : r < ko.k && hits[r] > 0
                          ? std::clamp((wanted - found) / double(hits[r]), 0.0, 1.0)
                          : 0.0;
  c.postings = r + part;
  c.recall = double(found + (r < ko.k ? hits[r] : 0)) / (kNeighbours * queries);
  for (const std::vector<uint32_t>& e : entries) {
    c.entries += std::accumulate(e.begin(), e.begin() + r, 0.0) + (r < ko.k ? part * e[r] : 0);
  }
  c.entries /= queries;
  c.cost = c.postings * (kPostingNs + kPostingNsPerDim * dim) +
           c.entries * kEntryNsPerBit * dim * entry_bits;
  return c;
}

}  // namespace

absl::StatusOr<PostingSizeChoice> ChoosePostingSize(ClusteringBackend& backend,
                                                    const float* vectors, size_t n, size_t dim,
                                                    Metric metric, const SpannOptions& o) {
  if (n == 0 || dim == 0) return absl::InvalidArgumentError("ChoosePostingSize: no vectors");
  SHOAL_ASSIGN_OR_RETURN(const double entry_bits, EntryBitsPerDim(o, dim));
  const std::vector<Region> regions = MakeRegions(vectors, n, dim, o.seed);
  std::vector<std::vector<uint32_t>> truth;
  size_t queries = 0;
  for (const Region& r : regions) {
    truth.push_back(RegionNeighbours(r, dim, metric));
    queries += r.queries.size();
  }
  const size_t s = regions[0].size(dim);  // every region has as many rows

  PostingSizeChoice choice;
  for (uint32_t size = kSmallestSize;
       size <= kLargestSize && s / size >= kFewestPostings && queries > 0; size *= 2) {
    SHOAL_ASSIGN_OR_RETURN(PostingSizeCandidate c,
                           Measure(backend, regions, truth, size, dim, entry_bits, o));
    choice.candidates.push_back(c);
  }
  if (choice.candidates.empty()) {  // too few vectors to compare sizes: the ratio as given
    choice.centroid_ratio = o.centroid_ratio;
    return choice;
  }
  // From the largest down: a smaller size is taken only when it costs kPostingSizeSmallerGain
  // less than the best larger one (see posting_size.h).
  const PostingSizeCandidate* best = nullptr;
  for (auto c = choice.candidates.rbegin(); c != choice.candidates.rend(); ++c) {
    if (best == nullptr || c->cost < best->cost * (1 - kPostingSizeSmallerGain)) best = &*c;
  }
  choice.centroid_ratio = 1.0 / best->vectors_per_posting;
  return choice;
}

}  // namespace shoal::index

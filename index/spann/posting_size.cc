#include "index/spann/posting_size.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <utility>

#include "absl/status/status.h"
#include "base/status_macros.h"
#include "index/quantization/quantizer.h"

namespace shoal::index {
namespace {

constexpr uint32_t kQueries = 200;
constexpr uint32_t kNeighbours = 10;
constexpr uint32_t kSmallestSize = 32, kLargestSize = 512;
constexpr size_t kFewestPostings = 16;  // in the sample, for a size to be tried
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

// The sample's true 10 nearest neighbours of each of its first `queries` rows, itself excluded.
std::vector<uint32_t> SampleNeighbours(const float* sample, size_t s, size_t dim, Metric metric,
                                       size_t queries) {
  std::vector<uint32_t> out(queries * kNeighbours);
  std::vector<std::pair<float, uint32_t>> d(s);
  for (size_t q = 0; q < queries; ++q) {
    for (size_t j = 0; j < s; ++j) {
      d[j] = {j == q ? std::numeric_limits<float>::infinity()
                     : Distance(metric, sample + q * dim, sample + j * dim, dim),
              static_cast<uint32_t>(j)};
    }
    std::partial_sort(d.begin(), d.begin() + kNeighbours, d.end());
    for (uint32_t i = 0; i < kNeighbours; ++i) out[q * kNeighbours + i] = d[i].second;
  }
  return out;
}

}  // namespace

absl::StatusOr<PostingSizeChoice> ChoosePostingSize(ClusteringBackend& backend,
                                                    const float* vectors, size_t n, size_t dim,
                                                    Metric metric, const SpannOptions& o) {
  if (n == 0 || dim == 0) return absl::InvalidArgumentError("ChoosePostingSize: no vectors");
  SHOAL_ASSIGN_OR_RETURN(const double entry_bits, EntryBitsPerDim(o, dim));
  // A seeded sample in random order: its first rows are the queries.
  const size_t s = std::min(n, kPostingSizeSample);
  std::vector<uint32_t> rows(n);
  std::iota(rows.begin(), rows.end(), 0u);
  std::mt19937_64 rng(o.seed);
  for (size_t i = 0; i < s; ++i) std::swap(rows[i], rows[i + rng() % (n - i)]);
  std::vector<float> sample(s * dim);
  for (size_t i = 0; i < s; ++i) {
    std::copy_n(vectors + size_t{rows[i]} * dim, dim, sample.data() + i * dim);
  }
  const size_t queries = std::min<size_t>(kQueries, s - 1);
  const std::vector<uint32_t> truth = SampleNeighbours(sample.data(), s, dim, metric, queries);

  PostingSizeChoice choice;
  for (uint32_t size = kSmallestSize; size <= kLargestSize && s / size >= kFewestPostings;
       size *= 2) {
    KMeansOptions ko;
    ko.k = static_cast<uint32_t>(s / size);
    ko.iterations = o.iterations;
    ko.seed = o.seed;
    SHOAL_ASSIGN_OR_RETURN(KMeansResult km, KMeans(backend, sample.data(), s, dim, ko));
    // For each query, every posting's rank by centroid distance; hits[r] = true neighbours
    // found at rank r; entries[q][r] = entries of query q's r-th posting.
    std::vector<uint64_t> hits(ko.k, 0);
    std::vector<uint32_t> rank(ko.k), order(ko.k);
    std::vector<float> dist(ko.k);
    std::vector<std::vector<uint32_t>> entries(queries);
    for (size_t q = 0; q < queries; ++q) {
      for (uint32_t c = 0; c < ko.k; ++c) {
        dist[c] = L2Sqr(sample.data() + q * dim, km.centroids.data() + size_t{c} * dim, dim);
      }
      std::iota(order.begin(), order.end(), 0u);
      std::stable_sort(order.begin(), order.end(),
                       [&](uint32_t a, uint32_t b) { return dist[a] < dist[b]; });
      for (uint32_t r = 0; r < ko.k; ++r) rank[order[r]] = r;
      for (uint32_t i = 0; i < kNeighbours; ++i)
        ++hits[rank[km.labels[truth[q * kNeighbours + i]]]];
      entries[q].resize(ko.k);
      for (uint32_t r = 0; r < ko.k; ++r) entries[q][r] = km.sizes[order[r]];
    }
    PostingSizeCandidate c;
    c.vectors_per_posting = size;
    uint64_t found = 0;
    const double wanted = double{o.target_recall} * kNeighbours * queries;
    while (c.postings < ko.k && found < wanted) found += hits[c.postings++];
    c.recall = double(found) / (kNeighbours * queries);
    for (size_t q = 0; q < queries; ++q) {
      c.entries += std::accumulate(entries[q].begin(), entries[q].begin() + c.postings, 0.0);
    }
    c.entries /= queries;
    c.cost = c.postings * (kPostingNs + kPostingNsPerDim * dim) +
             c.entries * kEntryNsPerBit * dim * entry_bits;
    choice.candidates.push_back(c);
  }
  if (choice.candidates.empty()) {  // too few vectors to compare sizes: the ratio as given
    choice.centroid_ratio = o.centroid_ratio;
    return choice;
  }
  const PostingSizeCandidate* best = nullptr;
  for (const PostingSizeCandidate& c : choice.candidates) {
    if (best == nullptr || c.cost <= best->cost) best = &c;
  }
  choice.centroid_ratio = 1.0 / best->vectors_per_posting;
  return choice;
}

}  // namespace shoal::index

#include "cache/shard_index.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "index/distance/distance.h"
#include "index/topk.h"

namespace shoal::cache {
namespace {

constexpr size_t kMaxLists = 8192;
constexpr size_t kSamplePerList = 16;  // k-means trains on at most 16 vectors per list
constexpr uint32_t kIterations = 8;
constexpr size_t kAssignChunk = 1024;  // vectors assigned per AssignTopM call

// About 4 sqrt(n) lists: a search then ranks ~4 sqrt(n) centroids and scans ~probes sqrt(n) / 4
// codes, the least total work for the default 16 probes (k = sqrt(probes n)).
size_t ListsFor(size_t n) {
  const auto k = static_cast<size_t>(4 * std::sqrt(static_cast<double>(n)));
  return std::clamp<size_t>(k, 1, std::min(n, kMaxLists));
}

}  // namespace

ShardIndex::ShardIndex(size_t dimension, index::Metric metric, const Options& options)
    : dimension_(dimension), metric_(metric), options_(options), vectors_(dimension, metric) {}

size_t ShardIndex::MemoryBytes() const {
  size_t bytes =
      vectors_.MemoryBytes() + centroids_.capacity() * sizeof(float) +
      slot_.capacity() * (sizeof(std::pair<uint64_t, std::pair<uint32_t, uint32_t>>) + 1);
  for (const index::QuantizedPosting& list : lists_) bytes += list.MemoryBytes();
  return bytes;
}

void ShardIndex::Unclustered() {
  centroids_.clear();
  quantizer_.reset();
  lists_.clear();
  slot_.clear();
  built_size_ = 0;
}

void ShardIndex::Add(uint64_t id, const float* vector) {
  if (clustered() && vectors_.Contains(id)) Remove(id);
  vectors_.Add(id, vector);
  if (clustered()) Encode(id, vectors_.Vector(id), NearestList(vector));
  if (auto_cluster_) RebuildIfDue();
}

bool ShardIndex::Remove(uint64_t id) {
  if (!vectors_.Remove(id)) return false;
  if (auto it = slot_.find(id); it != slot_.end()) {
    const auto [list, at] = it->second;
    slot_.erase(it);
    index::QuantizedPosting& p = lists_[list];
    const size_t last = p.ids.size() - 1;
    const size_t bytes = p.code_bytes;
    if (at != last) {
      p.ids[at] = p.ids[last];
      p.sq_norms[at] = p.sq_norms[last];
      std::memcpy(p.codes.data() + at * bytes, p.codes.data() + last * bytes, bytes);
      slot_[p.ids[at]] = {list, at};
    }
    p.ids.pop_back();
    p.sq_norms.pop_back();
    p.codes.resize(last * bytes);
  }
  if (auto_cluster_ && clustered() && size() < options_.cluster_at / 2) Unclustered();
  return true;
}

void ShardIndex::SetAutoCluster(bool on) {
  auto_cluster_ = on;
  if (on) RebuildIfDue();
}

void ShardIndex::RebuildIfDue() {
  if (clustered() ? size() < options_.cluster_at / 2 : size() < options_.cluster_at) {
    if (clustered()) Unclustered();
    return;
  }
  if (!clustered() ||
      static_cast<double>(size()) >= options_.regrow * static_cast<double>(built_size_)) {
    Rebuild();
  }
}

void ShardIndex::Rebuild() {
  Unclustered();
  const size_t n = size();
  if (n < options_.cluster_at || n < 2) return;
  const size_t d = dimension_;
  const size_t k = ListsFor(n);
  // A deterministic, evenly spread sample of the rows.
  const size_t sample = std::min(n, kSamplePerList * k);
  std::vector<float> x(sample * d);
  for (size_t i = 0; i < sample; ++i) {
    std::memcpy(x.data() + i * d, vectors_.RowAt(i * n / sample), d * sizeof(float));
  }
  std::unique_ptr<index::ClusteringBackend> backend = index::MakeCpuClusteringBackend(1);
  index::KMeansOptions o{.k = static_cast<uint32_t>(k),
                         .iterations = kIterations,
                         .seed = options_.seed,
                         .lambda = 0,
                         .threads = 1,
                         .max_sample = sample};
  absl::StatusOr<index::KMeansResult> r = index::KMeans(*backend, x.data(), sample, d, o);
  // k-means only fails on input this class never holds (NaN, k > n); stay exact if it does.
  if (!r.ok()) return;
  // SQ8 ranges from the sample's residuals to their centroids.
  for (size_t i = 0; i < sample; ++i) {
    const float* c = r->centroids.data() + size_t{r->labels[i]} * d;
    for (size_t j = 0; j < d; ++j) x[i * d + j] -= c[j];
  }
  auto quantizer = std::make_unique<index::Sq8Quantizer>(d);
  quantizer->Train(x.data(), sample);
  std::vector<float> chunk(kAssignChunk * d);
  std::vector<uint32_t> labels(kAssignChunk);
  std::vector<float> distances(kAssignChunk);
  std::vector<uint32_t> list_of(n);
  for (size_t begin = 0; begin < n; begin += kAssignChunk) {
    const size_t m = std::min(kAssignChunk, n - begin);
    for (size_t j = 0; j < m; ++j) {
      std::memcpy(chunk.data() + j * d, vectors_.RowAt(begin + j), d * sizeof(float));
    }
    if (!backend
             ->AssignTopM(chunk.data(), m, r->centroids.data(), k, d, 1, nullptr, labels.data(),
                          distances.data())
             .ok()) {
      return;  // as above: stay exact
    }
    std::copy(labels.begin(), labels.begin() + m, list_of.begin() + begin);
  }
  centroids_ = std::move(r->centroids);
  quantizer_ = std::move(quantizer);
  lists_.assign(k, index::QuantizedPosting{.code_bytes = quantizer_->code_bytes()});
  slot_.reserve(n);
  for (size_t row = 0; row < n; ++row) {
    Encode(vectors_.IdAt(row), vectors_.RowAt(row), list_of[row]);
  }
  built_size_ = n;
}

void ShardIndex::Encode(uint64_t id, const float* vector, uint32_t list) {
  index::QuantizedPosting& p = lists_[list];
  const size_t at = p.ids.size();
  p.ids.push_back(id);
  p.sq_norms.push_back(index::InnerProduct(vector, vector, dimension_));
  p.codes.resize((at + 1) * p.code_bytes);
  quantizer_->Encode(vector, centroids_.data() + size_t{list} * dimension_,
                     p.codes.data() + at * p.code_bytes);
  slot_[id] = {list, static_cast<uint32_t>(at)};
}

uint32_t ShardIndex::NearestList(const float* vector) const {
  uint32_t best = 0;
  float best_distance = INFINITY;
  for (size_t c = 0; c < lists_.size(); ++c) {
    const float dist = index::L2Sqr(vector, centroids_.data() + c * dimension_, dimension_);
    if (dist < best_distance) best_distance = dist, best = static_cast<uint32_t>(c);
  }
  return best;
}

std::vector<std::pair<float, uint64_t>> ShardIndex::Candidates(const float* query,
                                                               size_t want) const {
  const size_t k = lists_.size();
  thread_local std::vector<std::pair<float, uint32_t>> order;
  order.resize(k);
  for (size_t c = 0; c < k; ++c) {
    order[c] = {index::L2Sqr(query, centroids_.data() + c * dimension_, dimension_),
                static_cast<uint32_t>(c)};
  }
  const size_t probes = std::min(std::max<size_t>(options_.probes, 1), k);
  std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(probes), order.end());
  index::TopK<uint64_t> top(want);
  thread_local std::vector<float> estimate, error;
  for (size_t p = 0; p < probes; ++p) {
    const index::QuantizedPosting& list = lists_[order[p].second];
    if (list.size() == 0) continue;
    estimate.resize(list.size());
    error.resize(list.size());
    quantizer_->Estimate(query, centroids_.data() + size_t{order[p].second} * dimension_, list,
                         estimate.data(), error.data());
    for (size_t i = 0; i < list.size(); ++i) {
      // Squared L2 ranks as is; -<q, x> = (|q - x|^2 - |q|^2 - |x|^2) / 2 ranks as est - |x|^2.
      const float score =
          metric_ == index::Metric::kL2 ? estimate[i] : estimate[i] - list.sq_norms[i];
      top.Push(score, list.ids[i]);
    }
  }
  std::vector<std::pair<float, uint64_t>> out;
  for (const auto& e : top.TakeSorted()) out.emplace_back(e.distance, e.id);
  return out;
}

std::vector<index::Neighbor> ShardIndex::Search(const float* query, size_t k) const {
  if (!clustered()) return SearchExact(query, k);
  index::TopK<uint64_t> top(k);
  for (const auto& [score, id] : Candidates(query, std::max(k, options_.rerank))) {
    top.Push(index::Distance(metric_, query, vectors_.Vector(id), dimension_), id);
  }
  std::vector<index::Neighbor> out;
  for (const auto& e : top.TakeSorted()) out.push_back({.id = e.id, .distance = e.distance});
  return out;
}

std::vector<index::Neighbor> ShardIndex::SearchExact(const float* query, size_t k) const {
  if (size() == 0 || k == 0) return {};
  return vectors_.Search(query, 1, k, /*threads=*/1)[0];
}

}  // namespace shoal::cache

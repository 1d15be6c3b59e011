#include "cache/shard_index.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "absl/synchronization/notification.h"
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

struct ShardIndex::Build {
  static constexpr uint32_t kUnknown = ~uint32_t{0};
  // The snapshot (the thread frees it once encoded).
  std::vector<uint64_t> ids;
  std::vector<float> rows;
  size_t snapshot = 0;  // vectors in it
  // The thread's. The owner reads next.centroids once `trained`, everything once `finished`.
  Clustering next;
  bool ok = false;
  std::atomic<bool> trained{false};
  std::atomic<bool> cancel{false};
  absl::Notification finished;
  // The owner's delta log: ids changed since the snapshot -> their list in `next` (kUnknown:
  // not known yet, or removed).
  absl::flat_hash_map<uint64_t, uint32_t> touched;
  std::unique_ptr<Hint> hint;  // ImportModel's, instead of training
  std::thread thread;
};

ShardIndex::ShardIndex(size_t dimension, index::Metric metric, const Options& options)
    : dimension_(dimension), metric_(metric), options_(options), vectors_(dimension, metric) {}

ShardIndex::~ShardIndex() {
  if (build_ == nullptr) return;
  build_->cancel.store(true, std::memory_order_relaxed);
  build_->thread.join();
}

size_t ShardIndex::MemoryBytes() const {
  size_t bytes =
      vectors_.MemoryBytes() + live_.centroids.capacity() * sizeof(float) +
      live_.slot.capacity() * (sizeof(std::pair<uint64_t, std::pair<uint32_t, uint32_t>>) + 1);
  for (const index::QuantizedPosting& list : live_.lists) bytes += list.MemoryBytes();
  return bytes;
}

bool ShardIndex::rebuild_ready() const {
  return build_ != nullptr && build_->finished.HasBeenNotified();
}

void ShardIndex::Add(uint64_t id, const float* vector) {
  AdoptRebuild();
  if (clustered()) Drop(&live_, id);
  vectors_.Add(id, vector);
  const float* stored = vectors_.Vector(id);
  if (clustered()) Encode(&live_, id, stored, NearestList(live_, stored));
  Touch(id, stored);
  if (auto_cluster_) RebuildIfDue();
}

bool ShardIndex::Remove(uint64_t id) {
  AdoptRebuild();
  if (!vectors_.Remove(id)) return false;
  Drop(&live_, id);
  Touch(id, nullptr);
  if (auto_cluster_ && clustered() && size() < options_.cluster_at / 2) {
    live_ = Clustering{};
    ++generation_;
  }
  return true;
}

void ShardIndex::Touch(uint64_t id, const float* vector) {
  if (build_ == nullptr) return;
  const bool trained = vector != nullptr && build_->trained.load(std::memory_order_acquire);
  build_->touched[id] = trained ? NearestList(build_->next, vector) : Build::kUnknown;
}

bool ShardIndex::Drop(Clustering* c, uint64_t id) {
  auto it = c->slot.find(id);
  if (it == c->slot.end()) return false;
  const auto [list, at] = it->second;
  c->slot.erase(it);
  index::QuantizedPosting& p = c->lists[list];
  const size_t last = p.ids.size() - 1;
  const size_t bytes = p.code_bytes;
  if (at != last) {
    p.ids[at] = p.ids[last];
    p.sq_norms[at] = p.sq_norms[last];
    std::memcpy(p.codes.data() + at * bytes, p.codes.data() + last * bytes, bytes);
    c->slot[p.ids[at]] = {list, at};
  }
  p.ids.pop_back();
  p.sq_norms.pop_back();
  p.codes.resize(last * bytes);
  return true;
}

void ShardIndex::SetAutoCluster(bool on) {
  auto_cluster_ = on;
  if (on) RebuildIfDue();
}

void ShardIndex::RebuildIfDue() {
  if (clustered() ? size() < options_.cluster_at / 2 : size() < options_.cluster_at) {
    if (clustered()) live_ = Clustering{}, ++generation_;
    return;
  }
  // Due once grown regrow x since the last build, or since a failed one (not retried sooner).
  const auto grown = [&](size_t since) {
    return static_cast<double>(size()) >= options_.regrow * static_cast<double>(since);
  };
  if ((!clustered() || grown(live_.built_size)) && grown(failed_size_)) Rebuild();
}

void ShardIndex::Rebuild() {
  if (build_ != nullptr) return;
  const size_t n = size();
  if (n < options_.cluster_at || n < 2) {
    if (clustered()) live_ = Clustering{}, ++generation_;
    return;
  }
  auto b = std::make_unique<Build>();
  b->snapshot = n;
  b->ids.resize(n);
  b->rows.resize(n * dimension_);
  for (size_t row = 0; row < n; ++row) {
    b->ids[row] = vectors_.IdAt(row);
    std::memcpy(b->rows.data() + row * dimension_, vectors_.RowAt(row), dimension_ * sizeof(float));
  }
  b->hint = std::move(hint_);
  Build* raw = b.get();
  build_ = std::move(b);
  build_->thread = std::thread([this, raw] { RunBuild(raw); });
}

bool ShardIndex::AdoptRebuild() {
  if (!rebuild_ready()) return false;
  build_->thread.join();
  std::unique_ptr<Build> b = std::move(build_);
  failed_size_ = b->ok ? 0 : b->snapshot;
  if (b->ok && size() >= options_.cluster_at / 2) {
    Clustering& next = b->next;
    for (const auto& [id, list] : b->touched) {
      Drop(&next, id);
      if (!vectors_.Contains(id)) continue;
      const float* v = vectors_.Vector(id);
      Encode(&next, id, v, list != Build::kUnknown ? list : NearestList(next, v));
    }
    live_ = std::move(next);
    ++generation_;
  }
  if (auto_cluster_) RebuildIfDue();
  return true;
}

void ShardIndex::WaitForRebuild() {
  while (build_ != nullptr) {
    build_->finished.WaitForNotification();
    AdoptRebuild();
  }
}

void ShardIndex::RunBuild(Build* b) const {
  if (options_.build_hook) options_.build_hook("start");
  b->ok = Train(b);
  if (b->ok) {
    b->ids = {};  // the snapshot is no longer needed
    b->rows = {};
  }
  b->finished.Notify();
}

bool ShardIndex::TrainCentroids(Build* b, index::ClusteringBackend& backend) const {
  const size_t n = b->ids.size();
  const size_t d = dimension_;
  const size_t k = ListsFor(n);
  // A deterministic, evenly spread sample of the snapshot.
  const size_t sample = std::min(n, kSamplePerList * k);
  std::vector<float> x(sample * d);
  for (size_t i = 0; i < sample; ++i) {
    std::memcpy(x.data() + i * d, b->rows.data() + (i * n / sample) * d, d * sizeof(float));
  }
  index::KMeansOptions o{.k = static_cast<uint32_t>(k),
                         .iterations = kIterations,
                         .seed = options_.seed,
                         .lambda = 0,
                         .threads = 1,
                         .max_sample = sample};
  absl::StatusOr<index::KMeansResult> r = index::KMeans(backend, x.data(), sample, d, o);
  // k-means only fails on input this class never holds (NaN, k > n); stay as is if it does.
  if (!r.ok()) return false;
  // SQ8 ranges from the sample's residuals to their centroids.
  for (size_t i = 0; i < sample; ++i) {
    const float* c = r->centroids.data() + size_t{r->labels[i]} * d;
    for (size_t j = 0; j < d; ++j) x[i * d + j] -= c[j];
  }
  b->next.quantizer = std::make_unique<index::Sq8Quantizer>(d);
  b->next.quantizer->Train(x.data(), sample);
  b->next.centroids = std::move(r->centroids);
  b->next.built_size = n;
  return true;
}

bool ShardIndex::Train(Build* b) const {
  const size_t n = b->ids.size();
  const size_t d = dimension_;
  std::unique_ptr<index::ClusteringBackend> backend = index::MakeCpuClusteringBackend(1);
  Clustering& next = b->next;
  if (b->hint != nullptr) {  // a persisted model: no training, known ids keep their lists
    next.centroids = std::move(b->hint->centroids);
    next.quantizer = std::move(b->hint->quantizer);
    next.built_size = b->hint->built_size;
  } else if (!TrainCentroids(b, *backend)) {
    return false;
  }
  const size_t k = next.centroids.size() / d;
  b->trained.store(true, std::memory_order_release);  // centroids final from here
  if (options_.build_hook) options_.build_hook("trained");
  std::vector<uint32_t> list_of(n);
  std::vector<size_t> todo;  // rows whose list is unknown
  for (size_t row = 0; row < n; ++row) {
    if (b->hint != nullptr) {
      auto it = b->hint->list_of.find(b->ids[row]);
      if (it != b->hint->list_of.end()) {
        list_of[row] = it->second;
        continue;
      }
    }
    todo.push_back(row);
  }
  std::vector<float> chunk(kAssignChunk * d), distances(kAssignChunk);
  std::vector<uint32_t> labels(kAssignChunk);
  for (size_t begin = 0; begin < todo.size(); begin += kAssignChunk) {
    if (b->cancel.load(std::memory_order_relaxed)) return false;
    const size_t m = std::min(kAssignChunk, todo.size() - begin);
    for (size_t j = 0; j < m; ++j) {
      std::memcpy(chunk.data() + j * d, b->rows.data() + todo[begin + j] * d, d * sizeof(float));
    }
    if (!backend
             ->AssignTopM(chunk.data(), m, next.centroids.data(), k, d, 1, nullptr, labels.data(),
                          distances.data())
             .ok()) {
      return false;  // as above
    }
    for (size_t j = 0; j < m; ++j) list_of[todo[begin + j]] = labels[j];
  }
  next.lists.assign(k, index::QuantizedPosting{.code_bytes = next.quantizer->code_bytes()});
  next.slot.reserve(n);
  for (size_t row = 0; row < n; ++row) {
    Encode(&next, b->ids[row], b->rows.data() + row * d, list_of[row]);
  }
  return true;
}

void ShardIndex::Encode(Clustering* c, uint64_t id, const float* vector, uint32_t list) const {
  index::QuantizedPosting& p = c->lists[list];
  const size_t at = p.ids.size();
  p.ids.push_back(id);
  p.sq_norms.push_back(index::InnerProduct(vector, vector, dimension_));
  p.codes.resize((at + 1) * p.code_bytes);
  c->quantizer->Encode(vector, c->centroids.data() + size_t{list} * dimension_,
                       p.codes.data() + at * p.code_bytes);
  c->slot[id] = {list, static_cast<uint32_t>(at)};
}

uint32_t ShardIndex::NearestList(const Clustering& clustering, const float* vector) const {
  uint32_t best = 0;
  float best_distance = INFINITY;
  const size_t k = clustering.centroids.size() / dimension_;
  for (size_t c = 0; c < k; ++c) {
    const float dist =
        index::L2Sqr(vector, clustering.centroids.data() + c * dimension_, dimension_);
    if (dist < best_distance) best_distance = dist, best = static_cast<uint32_t>(c);
  }
  return best;
}

std::vector<std::pair<float, uint64_t>> ShardIndex::Candidates(const float* query,
                                                               size_t want) const {
  const size_t k = live_.lists.size();
  thread_local std::vector<std::pair<float, uint32_t>> order;
  order.resize(k);
  for (size_t c = 0; c < k; ++c) {
    order[c] = {index::L2Sqr(query, live_.centroids.data() + c * dimension_, dimension_),
                static_cast<uint32_t>(c)};
  }
  const size_t probes = std::min(std::max<size_t>(options_.probes, 1), k);
  std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(probes), order.end());
  index::TopK<uint64_t> top(want);
  thread_local std::vector<float> estimate, error;
  for (size_t p = 0; p < probes; ++p) {
    const index::QuantizedPosting& list = live_.lists[order[p].second];
    if (list.size() == 0) continue;
    estimate.resize(list.size());
    error.resize(list.size());
    live_.quantizer->Estimate(query, live_.centroids.data() + size_t{order[p].second} * dimension_,
                              list, estimate.data(), error.data());
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

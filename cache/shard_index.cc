// ShardIndex (shard_index.h): adds, removals, the codes of the lists and searches. The
// background builds are in shard_index_build.cc, the saved model in shard_index_model.cc.
#include "cache/shard_index.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/synchronization/mutex.h"
#include "base/prefetch.h"
#include "index/distance/distance.h"
#include "index/topk.h"

namespace shoal::cache {

size_t ShardIndex::MemoryBytes() const {
  size_t bytes = vectors_.MemoryBytes() + live_.centroids.capacity() * sizeof(float) +
                 live_.rotated.capacity() * sizeof(float) + live_.slot.MemoryBytes();
  for (const List& list : live_.lists) bytes += list.MemoryBytes();
  return bytes;
}

void ShardIndex::Add(uint64_t id, const float* vector) {
  AdoptRebuild();
  if (clustered()) Drop(&live_, id);
  {
    absl::MutexLock lock(&rows_mu_);  // a build thread may be reading rows
    vectors_.Add(id, vector);
  }
  const float* stored = vectors_.Vector(id);
  if (clustered()) Encode(&live_, id, stored, NearestList(live_, stored));
  Touch(id, stored);
  if (auto_cluster_) RebuildIfDue();
}

bool ShardIndex::Remove(uint64_t id) {
  AdoptRebuild();
  const float* at = vectors_.Vector(id);
  if (at == nullptr) return false;
  // The last row moves into the hole: a build walking the rows may have passed the hole
  // already, so the moved id goes to the delta log too.
  const uint64_t moved = vectors_.IdAt(size() - 1);
  {
    absl::MutexLock lock(&rows_mu_);
    vectors_.Remove(id);
  }
  Drop(&live_, id);
  Touch(id, nullptr);
  if (moved != id) Touch(moved, vectors_.Vector(moved));
  if (auto_cluster_ && clustered() && size() < options_.cluster_at / 2) {
    live_ = Clustering{};
    ++generation_;
  }
  return true;
}

bool ShardIndex::Drop(Clustering* c, uint64_t id) {
  const std::pair<uint32_t, uint32_t>* found = c->slot.Find(id);
  if (found == nullptr) return false;
  const auto [list, at] = *found;
  c->slot.Erase(id);
  List& l = c->lists[list];
  const size_t last = l.ids.size() - 1;
  thread_local std::vector<uint8_t> code;
  code.resize(c->codec->code_bytes());
  if (at != last) {  // the last entry moves into the hole
    l.ids[at] = l.ids[last];
    l.sq_norms[at] = l.sq_norms[last];
    c->codec->UnpackAt(l.codes.data(), last, code.data());
    c->codec->PackAt(code.data(), at, l.codes.data());
    c->slot.Set(l.ids[at], {list, at});
  }
  std::fill(code.begin(), code.end(), uint8_t{0});
  c->codec->PackAt(code.data(), last, l.codes.data());  // slots past the end stay zero
  l.ids.pop_back();
  l.sq_norms.pop_back();
  l.codes.resize(c->codec->PackedBytes(last));
  return true;
}

void ShardIndex::SetAutoCluster(bool on) {
  auto_cluster_ = on;
  if (on) RebuildIfDue();
}

void ShardIndex::RebuildIfDue() {
  if (clustered() ? size() < options_.cluster_at / 2 : size() < options_.cluster_at) {
    Unclustered();
    return;
  }
  // Due once grown regrow x since the last build; after a failed build, once grown by an eighth
  // since it (a k-means failure depends on the data, so the same vectors would fail again).
  const bool grown = !clustered() || static_cast<double>(size()) >=
                                         options_.regrow * static_cast<double>(live_.built_size);
  if (grown && size() >= failed_size_ + failed_size_ / 8) Rebuild();
}

void ShardIndex::Encode(Clustering* c, uint64_t id, const float* vector, uint32_t list) const {
  List& l = c->lists[list];
  const size_t at = l.ids.size();
  thread_local std::vector<uint8_t> code;
  code.resize(c->codec->code_bytes());
  c->codec->Encode(vector, c->centroids.data() + size_t{list} * dimension_, code.data());
  l.ids.push_back(id);
  l.sq_norms.push_back(index::InnerProduct(vector, vector, dimension_));
  const size_t need = c->codec->PackedBytes(at + 1);
  if (l.codes.size() < need) l.codes.resize(need);  // zeroed: slots past the end stay zero
  c->codec->PackAt(code.data(), at, l.codes.data());
  c->slot.Set(id, {list, static_cast<uint32_t>(at)});
}

uint32_t ShardIndex::NearestList(const Clustering& clustering, const float* vector) const {
  uint32_t best = 0;
  float best_distance = INFINITY;
  const size_t k = clustering.centroids.size() / dimension_;
  for (size_t c = 0; c < k; ++c) {
    const float dist =
        index::L2Sqr(vector, clustering.centroids.data() + c * dimension_, dimension_);
    if (dist < best_distance) {
      best_distance = dist;
      best = static_cast<uint32_t>(c);
    }
  }
  return best;
}

const std::vector<index::TopK<uint64_t>::Entry>& ShardIndex::Candidates(const float* query,
                                                                        size_t want) const {
  const Clustering& c = live_;
  const size_t k = c.lists.size();
  // Every centroid in one batched call (the query's loads shared between rows), the nearest
  // `probes` of them by RankKey (ties: the lower list first, as the pairs ordered).
  thread_local std::vector<const float*> rows;
  thread_local std::vector<float> dist;
  thread_local std::vector<uint64_t> order;
  rows.resize(k);
  dist.resize(k);
  order.resize(k);
  for (size_t i = 0; i < k; ++i) rows[i] = c.centroids.data() + i * dimension_;
  index::L2SqrRows(query, rows.data(), k, dist.data(), dimension_);
  for (size_t i = 0; i < k; ++i) order[i] = index::RankKey(dist[i], static_cast<uint32_t>(i));
  const size_t probes = std::min(std::max<size_t>(options_.probes, 1), k);
  index::SmallestFirst(order.data(), k, probes);
  // The query rotated once; each probed list prepares it against its rotated centroid.
  const size_t padded = c.codec->padded_dim();
  thread_local std::vector<float> rotated;
  thread_local index::RaBitQ::Query prepared;
  thread_local std::vector<index::RaBitQ::Estimate> estimates;
  thread_local std::vector<float> keys;
  thread_local std::vector<uint32_t> within;
  thread_local index::TopK<uint64_t> top(0);
  rotated.resize(padded);
  c.codec->rotation().Apply(query, rotated.data());
  top.Reset(want);
  const bool l2 = metric_ == index::Metric::kL2;
  for (size_t p = 0; p < probes; ++p) {
    const uint32_t l = index::FromRankKey(order[p]).second;
    const List& list = c.lists[l];
    const size_t n = list.ids.size();
    if (n == 0) continue;
    // The list's |x|^2 and ids are read after its codes are scanned: asked for now, they
    // arrive while the scan runs (they were the listing's stalls).
    base::PrefetchLines(list.sq_norms.data(), n * sizeof(float));
    base::PrefetchLines(list.ids.data(), n * sizeof(uint64_t));
    c.codec->PrepareRotated(rotated.data(), c.rotated.data() + size_t{l} * padded, &prepared);
    estimates.resize(n);
    keys.resize(n);
    within.resize(n);
    c.codec->EstimatePacked(prepared, list.codes.data(), n, estimates.data());
    // Squared L2 ranks as is; -<q, x> = (|q - x|^2 - |q|^2 - |x|^2) / 2 ranks as est - |x|^2.
    // Once the top is full most entries cannot enter: they are listed without a branch each
    // against the bound at the list's start (the bound only falls: each is checked again).
    const index::RaBitQ::Estimate* est = estimates.data();
    const float* sq = list.sq_norms.data();
    float* key = keys.data();
    for (size_t i = 0; i < n; ++i) key[i] = l2 ? est[i].distance : est[i].distance - sq[i];
    const size_t listed = index::SelectNotAbove(key, n, top.Threshold(), within.data());
    for (size_t j = 0; j < listed; ++j) top.Push(key[within[j]], list.ids[within[j]]);
  }
  return top.SortInPlace();
}

std::vector<index::Neighbor> ShardIndex::Search(const float* query, size_t k) const {
  std::vector<index::Neighbor> out;
  Search(query, k, &out);
  return out;
}

void ShardIndex::Search(const float* query, size_t k, std::vector<index::Neighbor>* out) const {
  out->clear();
  if (!clustered()) {
    SearchExact(query, k, out);
    return;
  }
  thread_local index::TopK<uint64_t> top(0);
  top.Reset(k);
  // The candidates' vectors lie anywhere in the shard's rows: ~32 KiB of them are asked for
  // ahead of the one scored (as VectorCache::LookupBatch does).
  const auto& candidates = Candidates(query, std::max(k, options_.rerank));
  thread_local std::vector<const float*> vectors;
  vectors.resize(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) vectors[i] = vectors_.Vector(candidates[i].id);
  const size_t bytes = dimension_ * sizeof(float);
  const size_t ahead = base::RowsAhead(bytes);
  for (size_t i = 0; i < std::min(ahead, vectors.size()); ++i) {
    base::PrefetchLines(vectors[i], bytes);
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (i + ahead < vectors.size()) base::PrefetchLines(vectors[i + ahead], bytes);
    top.Push(index::Distance(metric_, query, vectors[i], dimension_), candidates[i].id);
  }
  for (const auto& e : top.SortInPlace()) out->push_back({.id = e.id, .distance = e.distance});
}

std::vector<index::Neighbor> ShardIndex::SearchExact(const float* query, size_t k) const {
  std::vector<index::Neighbor> out;
  SearchExact(query, k, &out);
  return out;
}

void ShardIndex::SearchExact(const float* query, size_t k,
                             std::vector<index::Neighbor>* out) const {
  out->clear();
  if (size() == 0 || k == 0) return;
  *out = std::move(vectors_.Search(query, 1, k, /*threads=*/1)[0]);
}

}  // namespace shoal::cache

#include "index/leaf_buckets.h"

#include <algorithm>

#include "index/topk.h"

namespace shoal::index {

LeafBuckets::LeafBuckets(size_t dimension, Metric metric, size_t num_leaves)
    : dimension_(dimension), metric_(metric), buckets_(num_leaves) {}

size_t LeafBuckets::MemoryBytes() const {
  size_t bytes = sizeof(*this) + buckets_.capacity() * sizeof(Bucket) +
                 where_.capacity() * (sizeof(uint64_t) + sizeof(Where) + 1);
  for (const Bucket& b : buckets_) {
    bytes += b.ids.capacity() * sizeof(uint64_t) + b.vectors.capacity() * sizeof(float);
  }
  return bytes;
}

void LeafBuckets::Add(uint64_t id, const float* vector, uint32_t leaf) {
  Remove(id);
  Bucket& b = buckets_[leaf];
  where_[id] = {leaf, static_cast<uint32_t>(b.ids.size())};
  b.ids.push_back(id);
  b.vectors.insert(b.vectors.end(), vector, vector + dimension_);
}

bool LeafBuckets::Remove(uint64_t id) {
  auto it = where_.find(id);
  if (it == where_.end()) return false;
  const Where w = it->second;
  where_.erase(it);
  Bucket& b = buckets_[w.leaf];
  const size_t last = b.ids.size() - 1;
  if (w.row != last) {
    b.ids[w.row] = b.ids[last];
    std::copy_n(b.vectors.begin() + last * dimension_, dimension_,
                b.vectors.begin() + size_t{w.row} * dimension_);
    where_[b.ids[w.row]].row = w.row;
  }
  b.ids.pop_back();
  b.vectors.resize(last * dimension_);
  return true;
}

void LeafBuckets::Clear() {
  for (Bucket& b : buckets_) b = Bucket{};
  where_.clear();
}

std::vector<Neighbor> LeafBuckets::Search(const float* query, size_t k,
                                          std::span<const uint32_t> leaves,
                                          const IdFilter* allow) const {
  TopK<uint64_t> top(k);
  std::vector<uint32_t> seen;
  for (uint32_t leaf : leaves) {
    if (leaf >= buckets_.size() || std::find(seen.begin(), seen.end(), leaf) != seen.end()) {
      continue;
    }
    seen.push_back(leaf);
    const Bucket& b = buckets_[leaf];
    for (size_t i = 0; i < b.ids.size(); ++i) {
      const float dist = Distance(metric_, query, b.vectors.data() + i * dimension_, dimension_);
      if (dist > top.Threshold()) continue;
      if (allow != nullptr && !allow->Allows(b.ids[i])) continue;
      top.Push(dist, b.ids[i]);
    }
  }
  std::vector<Neighbor> out;
  for (const auto& e : top.TakeSorted()) out.push_back({e.id, e.distance});
  return out;
}

}  // namespace shoal::index

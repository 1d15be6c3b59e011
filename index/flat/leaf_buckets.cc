#include "index/flat/leaf_buckets.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace shoal::index {

LeafBuckets::LeafBuckets(size_t dimension, Metric metric, size_t num_leaves)
    : dimension_(dimension), metric_(metric), buckets_(num_leaves), nonempty_(num_leaves) {}

size_t LeafBuckets::MemoryBytes() const {
  size_t bytes = sizeof(*this) + buckets_.capacity() * sizeof(Bucket) + where_.MemoryBytes() +
                 (nonempty_.bound() / 8);
  for (const Bucket& b : buckets_) {
    bytes += b.ids.capacity() * sizeof(uint64_t) + b.vectors.capacity() * sizeof(float);
  }
  return bytes;
}

void LeafBuckets::Add(uint64_t id, const float* vector, uint32_t leaf) {
  Bucket& b = buckets_[leaf];
  // One lookup for a new id (a write's, nearly always): a present one is moved.
  if (!where_.Insert(id, {leaf, static_cast<uint32_t>(b.ids.size())})) {
    Remove(id);
    where_.Insert(id, {leaf, static_cast<uint32_t>(b.ids.size())});
  }
  b.ids.push_back(id);
  b.vectors.insert(b.vectors.end(), vector, vector + dimension_);
  nonempty_.Set(leaf);
}

bool LeafBuckets::Remove(uint64_t id) {
  const Where* found = where_.Find(id);
  if (found == nullptr) return false;
  const Where w = *found;
  where_.Erase(id);
  Bucket& b = buckets_[w.leaf];
  const size_t last = b.ids.size() - 1;
  if (w.row != last) {
    b.ids[w.row] = b.ids[last];
    std::copy_n(b.vectors.begin() + last * dimension_, dimension_,
                b.vectors.begin() + size_t{w.row} * dimension_);
    where_.Find(b.ids[w.row])->row = w.row;
  }
  b.ids.pop_back();
  b.vectors.resize(last * dimension_);
  if (last == 0) nonempty_.Reset(w.leaf);
  return true;
}

void LeafBuckets::Clear() {
  for (Bucket& b : buckets_) b = Bucket{};
  nonempty_ = IdBitmap(buckets_.size());
  where_.Clear();
}

const float* LeafBuckets::Vector(uint64_t id) const {
  const Where* w = where_.Find(id);
  if (w == nullptr) return nullptr;
  return buckets_[w->leaf].vectors.data() + size_t{w->row} * dimension_;
}

void LeafBuckets::Scan(const Bucket& b, const float* query, const IdFilter* allow,
                       TopK<uint64_t>* top) const {
  for (size_t i = 0; i < b.ids.size(); ++i) {
    const float dist = Distance(metric_, query, b.vectors.data() + i * dimension_, dimension_);
    if (dist > top->Threshold()) continue;
    if (allow != nullptr && !allow->Allows(b.ids[i])) continue;
    top->Push(dist, b.ids[i]);
  }
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
    Scan(buckets_[leaf], query, allow, &top);
  }
  std::vector<Neighbor> out;
  for (const auto& e : top.TakeSorted()) out.push_back({e.id, e.distance});
  return out;
}

std::vector<Neighbor> LeafBuckets::SearchAll(const float* query, size_t k,
                                             const IdFilter* allow) const {
  TopK<uint64_t> top(k);
  nonempty_.ForEach([&](uint64_t leaf) { Scan(buckets_[leaf], query, allow, &top); });
  std::vector<Neighbor> out;
  for (const auto& e : top.TakeSorted()) out.push_back({e.id, e.distance});
  return out;
}

absl::Status LeafBuckets::Add(std::span<const uint64_t> ids, const float* vectors,
                              std::span<const uint32_t> leaves) {
  if (leaves.size() != ids.size()) {
    return absl::InvalidArgumentError(absl::StrCat("leaves: ", leaves.size(), " for ", ids.size(),
                                                   " vectors (leaf buckets need each one's)"));
  }
  for (uint32_t leaf : leaves) {
    if (leaf >= buckets_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("leaves: leaf ", leaf, " out of range (", buckets_.size(), " leaves)"));
    }
  }
  for (size_t i = 0; i < ids.size(); ++i) Add(ids[i], vectors + i * dimension_, leaves[i]);
  return absl::OkStatus();
}

absl::Status LeafBuckets::Remove(std::span<const uint64_t> ids) {
  for (uint64_t id : ids) Remove(id);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<Neighbor>>> LeafBuckets::Search(
    const float* queries, size_t n, const SearchParameters& params) const {
  const ExcludingFilter excluding(params.filter, params.skip);
  const IdFilter* allow = excluding.Effective();
  std::vector<std::vector<Neighbor>> out(n);
  for (size_t i = 0; i < n; ++i) {
    const float* q = queries + i * dimension_;
    out[i] = params.leaves != nullptr ? Search(q, params.k, (*params.leaves)[i], allow)
                                      : SearchAll(q, params.k, allow);
  }
  return out;
}

}  // namespace shoal::index

// Collection: the in-RAM buffer of vectors the SSD index does not hold yet: the FlatIndex flat_
// without an SSD index, else leaf buckets (buckets_), so that a large buffer is searched through
// each query's nearest tree leaves instead of whole (see collection.h).
#include <algorithm>

#include "db/collection.h"

namespace shoal::db {
namespace {

// A buffer over this many floats is searched through its leaf buckets. Its exact scan (64 KiB)
// adds a tenth or less to a quantized SPANN query (~40 us on Fashion-MNIST): a search just
// after a write still finds that write exactly, and a growing buffer costs little before the
// buckets take over.
constexpr size_t kExactBufferFloats = size_t{1} << 14;
// Tree nodes kept per level when a write picks its bucket: on the write path, so a narrow descent
// (a vector lands in a leaf near its nearest, which the query's wider descent still reaches).
constexpr size_t kBucketBeam = 2;

}  // namespace

uint32_t Collection::BufferLeaf(const index::SpannIndex& spann, const float* v) {
  std::vector<std::pair<float, uint32_t>> nearest;
  spann.tree().NearestLeaves(v, 1, kBucketBeam, &nearest);
  return nearest.empty() ? 0 : nearest[0].second;
}

void Collection::MarkStale(uint64_t iid) {
  stale_.Insert(iid);
  absl::MutexLock lock(&stale_log_mu_);
  stale_log_.push_back(iid);
}

void Collection::ClearStale() {
  stale_.Clear();
  dead_.clear();
  absl::MutexLock lock(&stale_log_mu_);
  stale_log_.clear();
}

void Collection::BufferAdd(uint64_t iid, const float* v, uint32_t leaf) {
  if (buckets_ != nullptr) {
    buckets_->Add(iid, v, leaf);
  } else {
    flat_.Add(iid, v);
  }
}

void Collection::BufferRemove(uint64_t iid) {
  if (buckets_ != nullptr) {
    buckets_->Remove(iid);
  } else {
    flat_.Remove(iid);
  }
}

void Collection::ResetBuffer() {
  flat_ = index::FlatIndex(spec_.dimension, flat_.metric());
  buckets_.reset();
  if (spann_ != nullptr) {
    buckets_ = std::make_unique<index::LeafBuckets>(spec_.dimension, flat_.metric(),
                                                    spann_->tree().num_leaves());
    // The empty buckets count as fixed index RAM beside the SpannIndex's own.
    spann_->SetCacheBudget(CacheBudget(spann_->FixedMemoryBytes() + buckets_->MemoryBytes()));
  }
}

bool Collection::BufferBucketed() const {
  return buckets_ != nullptr && BufferSize() * spec_.dimension > kExactBufferFloats;
}

std::vector<std::vector<index::Neighbor>> Collection::SearchBuckets(
    const float* q, size_t n, size_t k, const std::vector<std::vector<uint32_t>>& leaves,
    const index::IdFilter* allow) const {
  std::vector<std::vector<index::Neighbor>> out(n);
  for (size_t i = 0; i < n; ++i) {
    out[i] = buckets_->Search(q + i * spec_.dimension, k, leaves[i], allow);
  }
  return out;
}

std::vector<std::vector<index::Neighbor>> Collection::SearchBufferExactly(
    const float* q, size_t n, size_t k, size_t threads, const index::IdFilter* allow) const {
  if (buckets_ == nullptr) return flat_.Search(q, n, k, threads, allow);
  std::vector<std::vector<index::Neighbor>> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = buckets_->SearchAll(q + i * spec_.dimension, k, allow);
  return out;
}

}  // namespace shoal::db

// Collection: the exact in-RAM buffer of vectors the SSD index does not hold yet (flat_), and with
// an SSD index the same vectors in leaf buckets (buckets_), so that a large buffer is searched
// through each query's nearest tree leaves instead of whole (see collection.h).
#include <algorithm>

#include "db/collection.h"

namespace shoal::db {
namespace {

// A buffer over this many floats is searched through its leaf buckets (the exact scan of 1 MiB
// of vectors costs about what a SPANN query does).
constexpr size_t kExactBufferFloats = size_t{1} << 18;
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
  stale_.insert(iid);
  absl::MutexLock lock(&stale_log_mu_);
  stale_log_.push_back(iid);
}

void Collection::ClearStale() {
  stale_.clear();
  dead_.clear();
  absl::MutexLock lock(&stale_log_mu_);
  stale_log_.clear();
}

void Collection::BufferAdd(uint64_t iid, const float* v, uint32_t leaf) {
  flat_.Add(iid, v);
  if (buckets_ != nullptr) buckets_->Add(iid, v, leaf);
}

void Collection::BufferRemove(uint64_t iid) {
  flat_.Remove(iid);
  if (buckets_ != nullptr) buckets_->Remove(iid);
}

void Collection::ResetBuffer() {
  flat_ = index::FlatIndex(spec_.dimension, flat_.metric());
  buckets_.reset();
  if (spann_ != nullptr) {
    buckets_ = std::make_unique<index::LeafBuckets>(spec_.dimension, flat_.metric(),
                                                    spann_->tree().num_leaves());
  }
}

std::vector<std::vector<index::Neighbor>> Collection::SearchBuffer(
    const float* q, size_t n, const SearchParams& params, size_t threads,
    const index::IdFilter* allow) const {
  if (buckets_ == nullptr || flat_.size() * spec_.dimension <= kExactBufferFloats) {
    return flat_.Search(q, n, params.k, threads, allow);
  }
  // As many leaves as the SpannIndex scans postings: the buffer is searched as if its vectors
  // were already in their nearest postings.
  const auto& o = spann_->manifest().options;
  const size_t m = params.max_postings != 0 ? params.max_postings : o.max_postings;
  std::vector<std::vector<index::Neighbor>> out(n);
  std::vector<std::pair<float, uint32_t>> nearest;
  std::vector<uint32_t> leaves;
  for (size_t i = 0; i < n; ++i) {
    const float* qi = q + i * spec_.dimension;
    spann_->tree().NearestLeaves(qi, m, o.beam, &nearest);
    leaves.clear();
    for (const auto& [dist, leaf] : nearest) leaves.push_back(leaf);
    out[i] = buckets_->Search(qi, params.k, leaves, allow);
  }
  return out;
}

}  // namespace shoal::db

#include "db/write_buffer.h"

#include <utility>

namespace shoal::db {
namespace {

// Tree nodes kept per level when a write picks its bucket: on the write path, so a narrow
// descent (a vector lands in a leaf near its nearest, which the query's wider descent still
// reaches).
constexpr size_t kBucketBeam = 2;

}  // namespace

WriteBuffer::WriteBuffer(size_t dimension, index::Metric metric)
    : dimension_(dimension), metric_(metric), flat_(dimension, metric) {}

uint32_t WriteBuffer::LeafOf(const index::SpannIndex& spann, const float* v) {
  thread_local std::vector<std::pair<float, uint32_t>> nearest;  // no allocation per write
  spann.tree().NearestLeaves(v, 1, kBucketBeam, &nearest);
  return nearest.empty() ? 0 : nearest[0].second;
}

void WriteBuffer::Reset(const index::SpannIndex* spann) {
  flat_ = index::FlatIndex(dimension_, metric_);
  buckets_.reset();
  if (spann != nullptr) {
    buckets_ =
        std::make_unique<index::LeafBuckets>(dimension_, metric_, spann->tree().num_leaves());
  }
}

void WriteBuffer::Replace(index::FlatIndex all) {
  buckets_.reset();
  flat_ = std::move(all);
}

void WriteBuffer::Add(uint64_t id, const float* v, uint32_t leaf) {
  if (buckets_ != nullptr) {
    buckets_->Add(id, v, leaf);
  } else {
    flat_.Add(id, v);
  }
}

void WriteBuffer::Remove(uint64_t id) {
  if (buckets_ != nullptr) {
    buckets_->Remove(id);
  } else {
    flat_.Remove(id);
  }
}

bool WriteBuffer::Contains(uint64_t id) const {
  return buckets_ != nullptr ? buckets_->Contains(id) : flat_.Contains(id);
}

size_t WriteBuffer::size() const { return buckets_ != nullptr ? buckets_->size() : flat_.size(); }

bool WriteBuffer::bucketed() const {
  return buckets_ != nullptr && size() * dimension_ > kExactBufferFloats;
}

size_t WriteBuffer::MemoryBytes() const { return active().MemoryBytes(); }

const index::VectorIndex& WriteBuffer::active() const {
  if (buckets_ != nullptr) return *buckets_;
  return flat_;
}

absl::Status WriteBuffer::Add(std::span<const uint64_t> ids, const float* vectors,
                              std::span<const uint32_t> leaves) {
  if (buckets_ != nullptr) return buckets_->Add(ids, vectors, leaves);
  return flat_.Add(ids, vectors, leaves);
}

absl::Status WriteBuffer::Remove(std::span<const uint64_t> ids) {
  for (uint64_t id : ids) Remove(id);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<index::Neighbor>>> WriteBuffer::Search(
    const float* queries, size_t n, const index::SearchParameters& params) const {
  if (bucketed() && params.leaves != nullptr) return buckets_->Search(queries, n, params);
  // Exact: the whole buffer.
  index::SearchParameters whole = params;
  whole.leaves = nullptr;
  return active().Search(queries, n, whole);
}

}  // namespace shoal::db

// WriteBuffer: the vectors a collection's SSD index (SpannIndex) does not hold yet — every vector
// when there is no SSD index, in an exact FlatIndex; with one, the writes since its build that the
// maintenance thread has not yet moved into the postings, grouped by their nearest centroid-tree
// leaf (LeafBuckets). A small buffer is scanned whole; a larger one only through the buckets of
// the tree leaves a query's postings descend from, so a backlog of index work does not make every
// search scan the whole buffer.
//
//   WriteBuffer buffer(dim, index::Metric::kL2);
//   buffer.Reset(spann.get());                        // leaf buckets over spann's tree
//   buffer.Add(id, v, WriteBuffer::LeafOf(*spann, v)); // leaf chosen before taking the lock
//   index::SearchParameters p;  p.k = 10;  p.leaves = &leaves_the_spann_search_visited;
//   SHOAL_ASSIGN_OR_RETURN(auto hits, buffer.Search(q, n, p));
//
// Thread safety: none of its own. Const methods may run concurrently with each other; the rest
// need exclusive access (the collection's reader/writer lock).
#ifndef SHOAL_DB_WRITE_BUFFER_H_
#define SHOAL_DB_WRITE_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "index/flat/flat_index.h"
#include "index/flat/leaf_buckets.h"
#include "index/spann/spann_index.h"
#include "index/vector_index.h"

namespace shoal::db {

class WriteBuffer final : public index::VectorIndex {
 public:
  // A buffer over this many floats is searched through its leaf buckets. Its exact scan (64 KiB)
  // adds a tenth or less to a quantized SPANN query (~40 us on Fashion-MNIST): a search just
  // after a write still finds that write exactly, and a growing buffer costs little before the
  // buckets take over.
  static constexpr size_t kExactBufferFloats = size_t{1} << 14;

  WriteBuffer(size_t dimension, index::Metric metric);

  // The tree leaf nearest to `v` (index form): its bucket. A narrow descent — this is on the
  // write path, and a vector landing in a leaf near its nearest is still reached by the query's
  // wider descent.
  static uint32_t LeafOf(const index::SpannIndex& spann, const float* v);

  // Empties the buffer, shaped for `spann` (not owned; null: an exact FlatIndex).
  void Reset(const index::SpannIndex* spann);
  // Without an SSD index: the buffer becomes `all`.
  void Replace(index::FlatIndex all);

  // `leaf`: LeafOf's answer (ignored without leaf buckets).
  void Add(uint64_t id, const float* v, uint32_t leaf);
  void Remove(uint64_t id);
  bool Contains(uint64_t id) const;
  size_t size() const;
  // Searched through its buckets (an SSD index exists and the buffer is over
  // kExactBufferFloats), not whole? Then Search wants SearchParameters::leaves.
  bool bucketed() const;
  bool has_buckets() const { return buckets_ != nullptr; }

  // ---- index::VectorIndex ----
  size_t dimension() const override { return dimension_; }
  size_t MemoryBytes() const override;
  absl::Status Add(std::span<const uint64_t> ids, const float* vectors,
                   std::span<const uint32_t> leaves) override;
  absl::Status Remove(std::span<const uint64_t> ids) override;
  // Through the buckets of params.leaves when bucketed() and they are given, else exact.
  absl::StatusOr<std::vector<std::vector<index::Neighbor>>> Search(
      const float* queries, size_t n, const index::SearchParameters& params) const override;

 private:
  // What answers: the buckets with an SSD index, else the FlatIndex.
  const index::VectorIndex& active() const;

  size_t dimension_;
  index::Metric metric_;
  index::FlatIndex flat_;                        // without an SSD index (else empty)
  std::unique_ptr<index::LeafBuckets> buckets_;  // with one
};

}  // namespace shoal::db

#endif  // SHOAL_DB_WRITE_BUFFER_H_

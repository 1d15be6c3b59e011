// LeafBuckets: vectors grouped by the centroid-tree leaf nearest to each, so that a query scans
// only the groups of the leaves nearest to it. The collection keeps its exact in-RAM buffer (the
// vectors written since the SSD index last took them in, index/flat/flat_index.h) here as well:
// while that buffer is large, a search scans the buckets of the query's nearest leaves instead of
// the whole buffer — SPANN's own trade, made for vectors not yet in the postings — so its cost
// stays bounded however far the index work falls behind the writers.
//
//   LeafBuckets buckets(/*dim=*/64, Metric::kL2, tree.num_leaves());
//   tree.NearestLeaves(v, 1, beam, &nearest);
//   buckets.Add(id, v, nearest[0].second);
//   auto hits = buckets.Search(q, /*k=*/10, query_leaves, /*allow=*/nullptr);
//
// Each vector lives in one bucket (its nearest leaf, chosen by the caller), copied; buckets are
// contiguous rows, so a scan reads them sequentially. Remove moves a bucket's last row into the
// hole. Results: distances "smaller is closer" (as FlatIndex), ties to the smaller id.
// Nothing here grows in one large step while the caller holds its writer lock: a bucket is a
// small part of the whole, and the id map is sharded (base/sharded_hash.h).
//
// Thread safety: const methods may run concurrently with each other; Add/Remove/Clear need
// exclusive access (the caller's reader/writer lock).
#ifndef SHOAL_INDEX_FLAT_LEAF_BUCKETS_H_
#define SHOAL_INDEX_FLAT_LEAF_BUCKETS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/sharded_hash.h"
#include "index/distance/distance.h"
#include "index/flat/flat_index.h"
#include "index/id_filter.h"
#include "index/topk.h"
#include "index/vector_index.h"

namespace shoal::index {

class LeafBuckets final : public VectorIndex {
 public:
  LeafBuckets(size_t dimension, Metric metric, size_t num_leaves);

  size_t dimension() const override { return dimension_; }
  size_t size() const { return where_.size(); }
  size_t num_leaves() const { return buckets_.size(); }
  size_t MemoryBytes() const override;

  // Adds (or moves) `id` with its vector (dimension() floats, copied) into the bucket of `leaf`
  // (< num_leaves()).
  void Add(uint64_t id, const float* vector, uint32_t leaf);
  // Removes `id`; false if it was absent.
  bool Remove(uint64_t id);
  void Clear();
  bool Contains(uint64_t id) const { return where_.Contains(id); }
  // The stored vector of `id` (dimension() floats, valid until the next Add/Remove), or null.
  const float* Vector(uint64_t id) const;

  // The min(k, rows) nearest rows among the buckets of `leaves` (duplicates and leaves out of
  // range ignored), closest first; ids `allow` rejects (nullable) are skipped.
  std::vector<Neighbor> Search(const float* query, size_t k, std::span<const uint32_t> leaves,
                               const IdFilter* allow) const;
  // Exact: the min(k, rows) nearest of all rows that `allow` (nullable) allows.
  std::vector<Neighbor> SearchAll(const float* query, size_t k, const IdFilter* allow) const;

  // ---- VectorIndex. Add needs each vector's leaf (InvalidArgument without, or for a leaf out of
  // range). Search scans, per query, the buckets of (*params.leaves)[i] when given, else all;
  // filter and skip honoured, the SPANN knobs ignored; one thread.
  absl::Status Add(std::span<const uint64_t> ids, const float* vectors,
                   std::span<const uint32_t> leaves) override;
  absl::Status Remove(std::span<const uint64_t> ids) override;
  absl::StatusOr<std::vector<std::vector<Neighbor>>> Search(
      const float* queries, size_t n, const SearchParameters& params) const override;

 private:
  struct Bucket {
    std::vector<uint64_t> ids;
    std::vector<float> vectors;  // ids.size() rows of dimension_ floats
  };
  struct Where {
    uint32_t leaf;
    uint32_t row;
  };

  void Scan(const Bucket& b, const float* query, const IdFilter* allow, TopK<uint64_t>* top) const;

  size_t dimension_;
  Metric metric_;
  std::vector<Bucket> buckets_;
  IdBitmap nonempty_;  // leaves whose bucket holds rows (SearchAll visits only those)
  base::ShardedHashMap<uint64_t, Where> where_;
};

}  // namespace shoal::index

#endif  // SHOAL_INDEX_FLAT_LEAF_BUCKETS_H_

// FlatIndex: exact (brute-force) nearest-neighbour search over vectors held in RAM, the first
// index of Shoal and the recall oracle for every approximate one.
//
//   shoal::index::FlatIndex flat(/*dimension=*/784, shoal::index::Metric::kL2);
//   flat.Add(/*id=*/7, vec);                       // ids are the DB's internal ids
//   auto results = flat.Search(queries, /*num_queries=*/100, /*k=*/10, /*threads=*/2);
//
// Distances are "smaller is closer": squared L2, or the negative inner product.
// Ties are broken by the smaller id, so results are deterministic.
//
// Performance: batches of >= 16 queries on AVX-512 CPUs use a register-blocked kernel (compute
// bound, ~GEMM speed); smaller batches and other CPUs scan with the plain distance kernel.
// Results are the same either way (exact up to float rounding of the plain kernel).
//
// Storage: rows sit in fixed blocks (row_blocks.h) and ids in a 256-way sharded map
// (base/sharded_hash.h), so an Add never copies the stored rows or rehashes the whole map: the
// caller's writer lock is held for one row's copy plus, at most, one new block or one shard's
// rehash. Rows never move on Add; Remove moves the last row into the removed row's place.
//
// Thread safety: Search is const and may run concurrently with other Searches; Add/Remove need
// exclusive access (the caller holds a reader/writer lock).
#ifndef SHOAL_INDEX_FLAT_FLAT_INDEX_H_
#define SHOAL_INDEX_FLAT_FLAT_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/sharded_hash.h"
#include "index/distance/distance.h"
#include "index/flat/row_blocks.h"
#include "index/id_filter.h"
#include "index/vector_index.h"

namespace shoal::index {

class FlatIndex final : public VectorIndex {
 public:
  FlatIndex(size_t dimension, Metric metric);

  size_t dimension() const override { return dimension_; }
  Metric metric() const { return metric_; }
  size_t size() const { return rows_.size(); }
  // Bytes of RAM held (row blocks + id map).
  size_t MemoryBytes() const override;

  // Adds or replaces the vector of `id` (dimension() floats, copied).
  void Add(uint64_t id, const float* vector);
  // Removes `id`; returns false if it was absent.
  bool Remove(uint64_t id);
  bool Contains(uint64_t id) const { return slot_of_.Contains(id); }
  // The stored vector of `id` (dimension() floats), or null. The pointer stays valid, at the
  // same address, through any number of Adds (an Add of the same id overwrites it in place);
  // it is invalidated by the next Remove, which may move the last row into the hole.
  const float* Vector(uint64_t id) const {
    const size_t* slot = slot_of_.Find(id);
    return slot == nullptr ? nullptr : rows_.row(*slot);
  }

  // Row `row` < size() (rows are numbered 0..size()-1 in no particular order; a Remove may
  // renumber the last row): its id and its dimension() floats. For walking every vector.
  uint64_t IdAt(size_t row) const { return rows_.id(row); }
  const float* RowAt(size_t row) const { return rows_.row(row); }

  // For each of `num_queries` queries (row-major, dimension() floats each) the min(k, size())
  // nearest stored vectors, closest first. `threads` = 0 uses hardware concurrency.
  std::vector<std::vector<Neighbor>> Search(const float* queries, size_t num_queries, size_t k,
                                            size_t threads) const;
  // Filtered: only stored ids that `allow` allows are scored (nullptr = all), so each query gets
  // min(k, allowed stored vectors) hits. Single queries and small batches check `allow` row by
  // row during the scan; batches that take the AVX-512 path gather the allowed rows first.
  std::vector<std::vector<Neighbor>> Search(const float* queries, size_t num_queries, size_t k,
                                            size_t threads, const IdFilter* allow) const;

  // ---- VectorIndex (batches; `leaves` ignored; SearchParameters' filter and skip honoured, the
  // SPANN knobs ignored). Never fails.
  absl::Status Add(std::span<const uint64_t> ids, const float* vectors,
                   std::span<const uint32_t> leaves) override;
  absl::Status Remove(std::span<const uint64_t> ids) override;
  absl::StatusOr<std::vector<std::vector<Neighbor>>> Search(
      const float* queries, size_t n, const SearchParameters& params) const override;

 private:
  size_t dimension_;
  Metric metric_;
  RowBlocks rows_;  // size() rows with their squared L2 norms (for the L2 kernel) and ids
  base::ShardedHashMap<uint64_t, size_t> slot_of_;  // id -> row
};

}  // namespace shoal::index

#endif  // SHOAL_INDEX_FLAT_FLAT_INDEX_H_

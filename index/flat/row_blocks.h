// RowBlocks: the rows of a FlatIndex — `dim` floats each, with the row's squared L2 norm and its
// id — kept in separately allocated blocks, so that appending never moves a stored row.
//
//   shoal::index::RowBlocks rows(/*dim=*/128);
//   rows.Append(/*id=*/7, vec, /*norm=*/InnerProduct(vec, vec, 128));   // becomes row 0
//   const float* r = rows.row(0);                       // stays put through later Appends
//   rows.ForEachRun(0, rows.size(), [](size_t first, const float* vectors, const float* norms,
//                                      const uint64_t* ids, size_t count) { ... });
//
// Why blocks: one contiguous array grows by copying every row (and a FlatIndex grows under the
// collection's writer lock, which every search waits on: growing to 1M x 64 floats, the worst
// Add took 75-95 ms). Here growing allocates one block. Rows start 64-byte aligned. Block 0 holds
// 64 rows, blocks 1..6 double (64, 128, ..., 2048 rows), so a small index (a per-query FlatIndex of
// a few filtered ids) holds little; from row 4096 on every block holds kBlockRows rows. Scans walk
// the blocks as contiguous runs.
//
// Thread safety: none of its own; const methods may run concurrently.
#ifndef SHOAL_INDEX_FLAT_ROW_BLOCKS_H_
#define SHOAL_INDEX_FLAT_ROW_BLOCKS_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

namespace shoal::index {

class RowBlocks {
 public:
  static constexpr int kFirstBits = 6;   // block 0: 2^6 rows
  static constexpr int kBlockBits = 12;  // full blocks: 2^12 rows
  static constexpr size_t kBlockRows = size_t{1} << kBlockBits;

  explicit RowBlocks(size_t dim) : dim_(dim) {}

  size_t dim() const { return dim_; }
  size_t size() const { return size_; }
  // Row i < size(): dim() floats, its squared norm, its id.
  const float* row(size_t i) const {
    const Loc at = Locate(i);
    return blocks_[at.block].vectors.get() + at.offset * dim_;
  }
  float norm(size_t i) const {
    const Loc at = Locate(i);
    return blocks_[at.block].norms[at.offset];
  }
  uint64_t id(size_t i) const {
    const Loc at = Locate(i);
    return blocks_[at.block].ids[at.offset];
  }

  // Adds a row at index size(), allocating a block when the last one is full. `vector` may
  // point at a stored row.
  void Append(uint64_t id, const float* vector, float norm);
  // Overwrites the vector and norm of row i (`vector` may be that row itself).
  void Overwrite(size_t i, const float* vector, float norm);
  // Removes row i: the last row moves into its place (when i is not the last). Frees the last
  // block once it and the block before it are both empty (one spare block damps add/remove
  // churn at a boundary).
  void RemoveByMovingLast(size_t i);
  // Bytes held by the blocks and their table.
  size_t MemoryBytes() const;

  // Calls fn(first, vectors, norms, ids, count) for consecutive runs of rows covering
  // [begin, end) in order; a run's rows are contiguous: row first + j is vectors + j * dim().
  template <typename Fn>
  void ForEachRun(size_t begin, size_t end, const Fn& fn) const {
    while (begin < end) {
      const Loc at = Locate(begin);
      const size_t count = std::min(end - begin, BlockCapacity(at.block) - at.offset);
      const Block& b = blocks_[at.block];
      fn(begin, b.vectors.get() + at.offset * dim_, b.norms.get() + at.offset,
         b.ids.get() + at.offset, count);
      begin += count;
    }
  }

 private:
  struct FreeDeleter {
    void operator()(float* p) const { std::free(p); }
  };
  struct Block {
    std::unique_ptr<float[], FreeDeleter> vectors;  // BlockCapacity rows of dim_ floats
    std::unique_ptr<float[]> norms;
    std::unique_ptr<uint64_t[]> ids;
  };
  struct Loc {
    size_t block;
    size_t offset;
  };
  // Blocks 1..kGrowingBlocks double in size and together with block 0 cover [0, kBlockRows).
  static constexpr size_t kGrowingBlocks = kBlockBits - kFirstBits;

  static Loc Locate(size_t i) {
    if (i < (size_t{1} << kFirstBits)) return {0, i};
    if (i < kBlockRows) {
      const int width = std::bit_width(i);  // i in [2^(width-1), 2^width)
      return {static_cast<size_t>(width - kFirstBits), i - (size_t{1} << (width - 1))};
    }
    return {(i >> kBlockBits) + kGrowingBlocks, i & (kBlockRows - 1)};
  }
  static size_t BlockStart(size_t block) {
    if (block == 0) return 0;
    if (block <= kGrowingBlocks) return size_t{1} << (block + kFirstBits - 1);
    return (block - kGrowingBlocks) << kBlockBits;
  }
  static size_t BlockCapacity(size_t block) {
    return block == 0 ? size_t{1} << kFirstBits : BlockStart(block + 1) - BlockStart(block);
  }

  size_t dim_;
  size_t size_ = 0;
  std::vector<Block> blocks_;  // growing this moves only the handles, never the rows
};

}  // namespace shoal::index

#endif  // SHOAL_INDEX_FLAT_ROW_BLOCKS_H_

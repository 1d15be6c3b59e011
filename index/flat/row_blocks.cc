#include "index/flat/row_blocks.h"

#include <cstring>
#include <new>

namespace shoal::index {

constexpr size_t kAlign = 64;  // a cache line

void RowBlocks::Append(uint64_t id, const float* vector, float norm) {
  const Loc at = Locate(size_);
  if (at.block == blocks_.size()) {
    // Uninitialised: a large block's pages are first touched row by row as rows arrive, not
    // all at once here. Rows start 64-byte aligned: no AVX-512 load of a row whose size is a
    // multiple of 64 bytes splits a cache line (malloc's big chunks start 16 bytes into a
    // page). Measured on the single-query scan of 200k x 128: ~110 QPS aligned, ~93 not.
    const size_t rows = BlockCapacity(at.block);
    const size_t bytes = (rows * dim_ * sizeof(float) + kAlign - 1) / kAlign * kAlign;
    auto* vectors = static_cast<float*>(std::aligned_alloc(kAlign, bytes));
    if (vectors == nullptr) throw std::bad_alloc();  // as `new` would
    blocks_.push_back({std::unique_ptr<float[], FreeDeleter>(vectors),
                       std::make_unique_for_overwrite<float[]>(rows),
                       std::make_unique_for_overwrite<uint64_t[]>(rows)});
  }
  Block& b = blocks_[at.block];
  std::memcpy(b.vectors.get() + at.offset * dim_, vector, dim_ * sizeof(float));
  b.norms[at.offset] = norm;
  b.ids[at.offset] = id;
  ++size_;
}

void RowBlocks::Overwrite(size_t i, const float* vector, float norm) {
  const Loc at = Locate(i);
  Block& b = blocks_[at.block];
  std::memmove(b.vectors.get() + at.offset * dim_, vector, dim_ * sizeof(float));
  b.norms[at.offset] = norm;
}

void RowBlocks::RemoveByMovingLast(size_t i) {
  const size_t last = size_ - 1;
  if (i != last) {
    const Loc from = Locate(last), to = Locate(i);
    std::memcpy(blocks_[to.block].vectors.get() + to.offset * dim_,
                blocks_[from.block].vectors.get() + from.offset * dim_, dim_ * sizeof(float));
    blocks_[to.block].norms[to.offset] = blocks_[from.block].norms[from.offset];
    blocks_[to.block].ids[to.offset] = blocks_[from.block].ids[from.offset];
  }
  size_ = last;
  if (blocks_.size() >= 2 && size_ <= BlockStart(blocks_.size() - 2)) blocks_.pop_back();
}

size_t RowBlocks::MemoryBytes() const {
  size_t bytes = blocks_.capacity() * sizeof(Block);
  for (size_t b = 0; b < blocks_.size(); ++b) {
    bytes += BlockCapacity(b) * (dim_ * sizeof(float) + sizeof(float) + sizeof(uint64_t));
  }
  return bytes;
}

}  // namespace shoal::index

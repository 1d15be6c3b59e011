// WriteBatchPool: RocksDB write batches kept after use, cleared, for the next batch of the same
// store. A batch's buffer is as large as its rows (a cluster replica's apply group of 8,192
// records of 128 floats is ~4.5 MB); made afresh for every batch it is mapped and faulted in
// page by page each time, which costs more CPU than writing the rows into it. A kept batch's
// buffer is memory the process has touched already.
//
//   WriteBatchPool pool;
//   WriteBatchPool::Ptr batch = pool.Take(/*reserved_bytes=*/4 << 20);
//   batch->Put(...);  db->Write(options, batch.get());
//   batch.reset();  // cleared and kept (or freed when the pool is full)
//
// Take hands out the smallest kept batch whose buffer holds `reserved_bytes` (a new one when
// none does); a batch given back is cleared and kept when its buffer is at most kMaxKeptBytes
// and the pool holds fewer than kMaxKept (else the smallest kept one is freed to make room).
// So the pool keeps at most kMaxKept * kMaxKeptBytes idle.
//
// Thread safety: thread-safe. Batches must be given back (their Ptr reset or destroyed) before
// the pool is destroyed.
#ifndef SHOAL_STORAGE_RECORDS_WRITE_BATCH_POOL_H_
#define SHOAL_STORAGE_RECORDS_WRITE_BATCH_POOL_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace rocksdb {
class WriteBatch;
}  // namespace rocksdb

namespace shoal::storage {

class WriteBatchPool {
 public:
  static constexpr size_t kMaxKept = 4;
  static constexpr size_t kMaxKeptBytes = size_t{16} << 20;

  // Deleting a batch through a Ptr gives it back to its pool.
  struct GiveBack {
    WriteBatchPool* pool = nullptr;
    void operator()(rocksdb::WriteBatch* batch) const;
  };
  using Ptr = std::unique_ptr<rocksdb::WriteBatch, GiveBack>;

  WriteBatchPool() = default;
  ~WriteBatchPool();
  WriteBatchPool(const WriteBatchPool&) = delete;
  WriteBatchPool& operator=(const WriteBatchPool&) = delete;

  // An empty batch; a kept one when one's buffer holds `reserved_bytes`.
  Ptr Take(size_t reserved_bytes);
  // Batches kept now (tests).
  size_t kept() const;

 private:
  void Give(rocksdb::WriteBatch* batch);

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<rocksdb::WriteBatch>> kept_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_RECORDS_WRITE_BATCH_POOL_H_

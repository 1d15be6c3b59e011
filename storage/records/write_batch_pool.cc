#include "storage/records/write_batch_pool.h"

#include <algorithm>
#include <utility>

#include "rocksdb/write_batch.h"

namespace shoal::storage {
namespace {

size_t Capacity(const rocksdb::WriteBatch& batch) { return batch.Data().capacity(); }

}  // namespace

WriteBatchPool::~WriteBatchPool() = default;

void WriteBatchPool::GiveBack::operator()(rocksdb::WriteBatch* batch) const {
  if (pool != nullptr) {
    pool->Give(batch);
  } else {
    delete batch;
  }
}

WriteBatchPool::Ptr WriteBatchPool::Take(size_t reserved_bytes) {
  std::unique_ptr<rocksdb::WriteBatch> batch;
  {
    absl::MutexLock lock(&mu_);
    auto best = kept_.end();
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (Capacity(**it) >= reserved_bytes &&
          (best == kept_.end() || Capacity(**it) < Capacity(**best))) {
        best = it;
      }
    }
    if (best != kept_.end()) {
      batch = std::move(*best);
      kept_.erase(best);
    }
  }
  if (batch == nullptr) batch = std::make_unique<rocksdb::WriteBatch>(reserved_bytes);
  return Ptr(batch.release(), GiveBack{this});
}

void WriteBatchPool::Give(rocksdb::WriteBatch* given) {
  std::unique_ptr<rocksdb::WriteBatch> batch(given);
  if (Capacity(*batch) > kMaxKeptBytes) return;
  // Clear keeps the buffer (std::string::clear keeps its capacity).
  batch->Clear();
  absl::MutexLock lock(&mu_);
  if (kept_.size() == kMaxKept) {
    auto smallest = std::min_element(kept_.begin(), kept_.end(), [](const auto& a, const auto& b) {
      return Capacity(*a) < Capacity(*b);
    });
    if (Capacity(**smallest) >= Capacity(*batch)) return;
    *smallest = std::move(batch);
    return;
  }
  kept_.push_back(std::move(batch));
}

size_t WriteBatchPool::kept() const {
  absl::MutexLock lock(&mu_);
  return kept_.size();
}

}  // namespace shoal::storage

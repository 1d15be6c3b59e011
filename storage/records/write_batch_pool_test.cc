#include "storage/records/write_batch_pool.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rocksdb/write_batch.h"

namespace shoal::storage {
namespace {

std::string Bytes(size_t n) { return std::string(n, 'x'); }

TEST(WriteBatchPoolTest, TakeHandsBackAGivenBatchClearedWithItsBuffer) {
  WriteBatchPool pool;
  WriteBatchPool::Ptr first = pool.Take(1 << 20);
  ASSERT_TRUE(first->Put("key", Bytes(1 << 20)).ok());
  const rocksdb::WriteBatch* address = first.get();
  const size_t capacity = first->Data().capacity();
  first.reset();
  EXPECT_EQ(pool.kept(), 1u);

  WriteBatchPool::Ptr second = pool.Take(1 << 20);
  EXPECT_EQ(second.get(), address);
  EXPECT_EQ(second->Count(), 0u);  // nothing of the last batch's rows
  EXPECT_EQ(second->Data().capacity(), capacity);
  EXPECT_EQ(pool.kept(), 0u);
}

TEST(WriteBatchPoolTest, TakeMakesANewBatchWhenNoKeptBufferIsLargeEnough) {
  WriteBatchPool pool;
  WriteBatchPool::Ptr small = pool.Take(0);
  const rocksdb::WriteBatch* address = small.get();
  small.reset();
  WriteBatchPool::Ptr large = pool.Take(4 << 20);
  EXPECT_NE(large.get(), address);
  EXPECT_GE(large->Data().capacity(), size_t{4} << 20);
  EXPECT_EQ(pool.kept(), 1u);  // the small one stays for a small batch
}

TEST(WriteBatchPoolTest, KeepsAtMostMaxKeptBatchesAndNoneOverTheByteLimit) {
  WriteBatchPool pool;
  {
    std::vector<WriteBatchPool::Ptr> batches;
    for (size_t i = 0; i < WriteBatchPool::kMaxKept + 2; ++i) batches.push_back(pool.Take(1024));
  }
  EXPECT_EQ(pool.kept(), WriteBatchPool::kMaxKept);

  WriteBatchPool huge_pool;
  huge_pool.Take(WriteBatchPool::kMaxKeptBytes + 1).reset();
  EXPECT_EQ(huge_pool.kept(), 0u);
}

}  // namespace
}  // namespace shoal::storage

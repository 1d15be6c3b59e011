#include "base/aligned_vector.h"

#include <cstdint>
#include <utility>

#include "gtest/gtest.h"

namespace shoal::base {
namespace {

bool OnLine(const void* p) { return reinterpret_cast<uintptr_t>(p) % kCacheLineBytes == 0; }

TEST(AlignedVectorTest, BufferStartsOnACacheLineAfterEveryGrowth) {
  AlignedVector<uint8_t> bytes;
  for (size_t n = 1; n <= 5000; n = n * 3 + 1) {
    bytes.resize(n, 7);
    ASSERT_TRUE(OnLine(bytes.data())) << "size " << n;
    EXPECT_EQ(bytes[n - 1], 7);
  }
  // A small odd allocation in between must not shift the next buffer off a line.
  AlignedVector<float> floats(3);
  AlignedVector<uint16_t> shorts(17);
  EXPECT_TRUE(OnLine(floats.data()));
  EXPECT_TRUE(OnLine(shorts.data()));
}

TEST(AlignedVectorTest, CopiesAndMovesKeepContentsAndAlignment) {
  AlignedVector<float> a = {1.0f, 2.0f, 3.0f};
  AlignedVector<float> copy = a;
  EXPECT_TRUE(OnLine(copy.data()));
  EXPECT_EQ(copy, a);
  const float* buffer = a.data();
  AlignedVector<float> moved = std::move(a);
  EXPECT_EQ(moved.data(), buffer);  // a move takes the buffer: allocators compare equal
  EXPECT_EQ(moved, copy);
}

}  // namespace
}  // namespace shoal::base

#include "storage/pages/page_allocator.h"

#include <gtest/gtest.h>

namespace shoal::storage {
namespace {

TEST(PageAllocatorTest, FreePagesAreTheGapsBetweenUsedExtentsAndReusedFirstFit) {
  // Pages 0-1 and 5 used, 2-4 and 6-7 free in a file of 8 pages.
  PageAllocator a = PageAllocator::FromUsed(8, {{5, 1, 0}, {0, 2, 0}});
  EXPECT_EQ(a.free_pages(), 5u);
  EXPECT_EQ(a.Allocate(2), 2u);  // first fit: the run at 2
  EXPECT_EQ(a.Allocate(2), 6u);  // 4 is only one page long
  EXPECT_EQ(a.Allocate(1), 4u);
  EXPECT_EQ(a.Allocate(3), 8u);  // nothing free: extend the file
  EXPECT_EQ(a.file_pages(), 11u);
  EXPECT_EQ(a.free_pages(), 0u);
}

TEST(PageAllocatorTest, FreedNeighboursCoalesce) {
  PageAllocator a = PageAllocator::FromUsed(0, {});
  EXPECT_EQ(a.Allocate(2), 0u);
  EXPECT_EQ(a.Allocate(2), 2u);
  EXPECT_EQ(a.Allocate(2), 4u);
  a.Free(0, 2);
  a.Free(4, 2);
  a.Free(2, 2);  // joins both neighbours into one run of 6
  EXPECT_EQ(a.free_pages(), 6u);
  EXPECT_EQ(a.Allocate(6), 0u);
}

}  // namespace
}  // namespace shoal::storage

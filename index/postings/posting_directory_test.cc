#include "index/postings/posting_directory.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace shoal::index {
namespace {

// What SpannUpdater::Publish does when `next` replaces `cur`, retiring `extents`.
void Replace(PostingDirectory& cur, const PostingDirectory& next,
             std::vector<storage::Extent> extents, std::vector<uint64_t>* released) {
  cur.retire->newer = next.retire;
  cur.retire->extents = std::move(extents);
  cur.retire->on_release = [released](const std::vector<storage::Extent>& e) {
    for (const auto& x : e) released->push_back(x.first_page);
  };
}

TEST(RetiredExtentsTest, WaitForEveryOlderVersionNotJustTheirOwn) {
  std::vector<uint64_t> released;
  auto v1 = std::make_shared<PostingDirectory>();
  auto v2 = NextVersion(*v1);
  Replace(*v1, *v2, {{10, 1, 0}}, &released);  // page 10: read through v1 only
  auto v3 = NextVersion(*v2);
  Replace(*v2, *v3, {{20, 1, 0}}, &released);  // page 20: read through v1 and v2
  v2.reset();                                  // a reader still holds v1, which reads page 20 too
  EXPECT_TRUE(released.empty());
  v1.reset();
  EXPECT_EQ(released, (std::vector<uint64_t>{10, 20}));
  v3.reset();
  EXPECT_EQ(released.size(), 2u);
}

TEST(RetiredExtentsTest, NewerVersionsGoFirstThenReleaseWithTheOldest) {
  std::vector<uint64_t> released;
  auto v1 = std::make_shared<PostingDirectory>();
  auto v2 = NextVersion(*v1);
  Replace(*v1, *v2, {{10, 1, 0}}, &released);
  v1.reset();  // the oldest goes first: its own list is released at once
  EXPECT_EQ(released, (std::vector<uint64_t>{10}));
}

TEST(RetiredExtentsTest, ALongChainIsReleasedWithoutRecursion) {
  std::vector<uint64_t> released;
  auto oldest = std::make_shared<PostingDirectory>();
  std::shared_ptr<PostingDirectory> cur = oldest;
  for (uint64_t i = 0; i < 200000; ++i) {
    auto next = NextVersion(*cur);
    Replace(*cur, *next, {{i, 1, 0}}, &released);
    cur = next;  // every version but the oldest and the newest is dropped
  }
  EXPECT_TRUE(released.empty());
  oldest.reset();
  EXPECT_EQ(released.size(), 200000u);
}

}  // namespace
}  // namespace shoal::index

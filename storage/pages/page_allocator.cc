#include "storage/pages/page_allocator.h"

#include <algorithm>

namespace shoal::storage {

PageAllocator PageAllocator::FromUsed(uint64_t file_pages, std::vector<Extent> used) {
  PageAllocator a;
  std::sort(used.begin(), used.end(),
            [](const Extent& x, const Extent& y) { return x.first_page < y.first_page; });
  uint64_t at = 0;
  for (const Extent& e : used) {
    if (e.first_page > at) a.Free(at, static_cast<uint32_t>(e.first_page - at));
    at = std::max(at, e.first_page + e.num_pages);
  }
  absl::MutexLock lock(&a.mu_);
  a.end_ = std::max(file_pages, at);
  if (a.end_ > at) {
    a.free_[at] = a.end_ - at;
    a.free_pages_ += a.end_ - at;
  }
  return a;
}

PageAllocator::PageAllocator(PageAllocator&& other) noexcept {
  absl::MutexLock lock(&other.mu_);
  free_ = std::move(other.free_);
  end_ = other.end_;
  free_pages_ = other.free_pages_;
}

uint64_t PageAllocator::Allocate(uint32_t pages) {
  absl::MutexLock lock(&mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < pages) continue;
    const uint64_t first = it->first;
    const uint64_t rest = it->second - pages;
    free_.erase(it);
    if (rest > 0) free_[first + pages] = rest;
    free_pages_ -= pages;
    return first;
  }
  const uint64_t first = end_;
  end_ += pages;
  return first;
}

void PageAllocator::Free(uint64_t first, uint32_t pages) {
  if (pages == 0) return;
  absl::MutexLock lock(&mu_);
  uint64_t len = pages;
  free_pages_ += pages;
  auto next = free_.lower_bound(first);
  if (next != free_.end() && next->first == first + len) {
    len += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == first) {
      prev->second += len;
      return;
    }
  }
  free_[first] = len;
}

uint64_t PageAllocator::free_pages() const {
  absl::MutexLock lock(&mu_);
  return free_pages_;
}

uint64_t PageAllocator::file_pages() const {
  absl::MutexLock lock(&mu_);
  return end_;
}

}  // namespace shoal::storage

// PageAllocator: free page runs of a posting file, for copy-on-write rewrites. Allocate takes the
// first free run long enough (first fit) or extends the file; Free returns a run (merged with its
// neighbours). Nothing is persisted: at open the free runs are the file's pages that no committed
// directory row references (FromUsed).
//
//   PageAllocator alloc = PageAllocator::FromUsed(file_pages, used_extents);
//   uint64_t first = alloc.Allocate(3);   // 3 pages
//   alloc.Free({first, 3});
//
// Thread safety: internally synchronised.
#ifndef SHOAL_STORAGE_PAGES_PAGE_ALLOCATOR_H_
#define SHOAL_STORAGE_PAGES_PAGE_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "storage/pages/posting_file.h"

namespace shoal::storage {

class PageAllocator {
 public:
  // `file_pages` pages exist; those outside `used` are free.
  static PageAllocator FromUsed(uint64_t file_pages, std::vector<Extent> used);
  PageAllocator(PageAllocator&& other) noexcept;

  uint64_t Allocate(uint32_t pages);
  void Free(uint64_t first_page, uint32_t pages);
  uint64_t free_pages() const;
  uint64_t file_pages() const;

 private:
  PageAllocator() = default;
  mutable absl::Mutex mu_;
  std::map<uint64_t, uint64_t> free_ ABSL_GUARDED_BY(mu_);  // first page -> run length
  uint64_t end_ ABSL_GUARDED_BY(mu_) = 0;                   // pages in the file
  uint64_t free_pages_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_PAGES_PAGE_ALLOCATOR_H_

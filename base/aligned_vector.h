// AlignedVector<T>: a std::vector whose buffer starts on a 64-byte (cache-line) boundary.
//
//   shoal::base::AlignedVector<uint8_t> luts(4096);   // luts.data() % 64 == 0, after any growth
//
// Why: the AVX-512 kernels (RaBitQ's query quantization, lookup tables and code scan) load and
// store whole 64-byte lines. From a plain std::vector (glibc malloc: 16-byte aligned) every such
// access to a buffer that starts 16, 32 or 48 bytes into a line touches two lines, and which
// offset a buffer gets depended on the heap's history: the same binary code ran ~10% slower after
// an unrelated change moved its buffers (issue 15, docs/PERFORMANCE.md).
//
// Thread safety: that of std::vector. The allocator is stateless; every instance compares equal.
#ifndef SHOAL_BASE_ALIGNED_VECTOR_H_
#define SHOAL_BASE_ALIGNED_VECTOR_H_

#include <cstddef>
#include <new>
#include <vector>

namespace shoal::base {

inline constexpr size_t kCacheLineBytes = 64;

template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() noexcept = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>& /*other*/) noexcept {}  // NOLINT: rebind
  T* allocate(size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{kCacheLineBytes}));
  }
  void deallocate(T* p, size_t /*n*/) noexcept {
    ::operator delete (p, std::align_val_t{kCacheLineBytes});
  }
  template <typename U>
  bool operator==(const CacheLineAllocator<U>& /*other*/) const noexcept {
    return true;
  }
};

template <typename T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace shoal::base

#endif  // SHOAL_BASE_ALIGNED_VECTOR_H_

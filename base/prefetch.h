// Software prefetch of a byte range: every 64-byte line it touches asked for once (an unaligned
// range's last partial line included), to arrive while other work runs. A hint only (no fault on
// any address, no wait, no result changed).
//
//   base::PrefetchLines(vector, dim * sizeof(float));  // scored a few steps later
#ifndef SHOAL_BASE_PREFETCH_H_
#define SHOAL_BASE_PREFETCH_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace shoal::base {

inline constexpr size_t kCacheLine = 64;

inline void PrefetchLines(const void* p, size_t bytes) {
  if (bytes == 0) return;
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t last = (start + bytes - 1) & ~uintptr_t{kCacheLine - 1};
  for (uintptr_t line = start & ~uintptr_t{kCacheLine - 1}; line <= last; line += kCacheLine) {
    __builtin_prefetch(reinterpret_cast<const void*>(line));
  }
}

// How many rows of `row_bytes` to keep asked for ahead of the one in use while walking cold rows:
// about 32 KiB of them, 2 to 64 (asking for a whole batch up front evicted its first rows again
// before their use once it outgrew L1/L2).
inline size_t RowsAhead(size_t row_bytes) {
  return std::clamp<size_t>((size_t{32} << 10) / std::max<size_t>(row_bytes, 1), 2, 64);
}

}  // namespace shoal::base

#endif  // SHOAL_BASE_PREFETCH_H_

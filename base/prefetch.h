// Software prefetch of a byte range: every 64-byte line of it asked for, to arrive while other
// work runs. A hint only (no fault on any address, no wait, no result changed).
//
//   base::PrefetchLines(vector, dim * sizeof(float));  // scored a few steps later
#ifndef SHOAL_BASE_PREFETCH_H_
#define SHOAL_BASE_PREFETCH_H_

#include <algorithm>
#include <cstddef>

namespace shoal::base {

inline constexpr size_t kCacheLine = 64;

inline void PrefetchLines(const void* p, size_t bytes) {
  const char* b = static_cast<const char*>(p);
  for (size_t off = 0; off < bytes; off += kCacheLine) __builtin_prefetch(b + off);
}

// How many rows of `row_bytes` to keep asked for ahead of the one in use while walking cold rows:
// about 32 KiB of them, 2 to 64 (asking for a whole batch up front evicted its first rows again
// before their use once it outgrew L1/L2).
inline size_t RowsAhead(size_t row_bytes) {
  return std::clamp<size_t>((size_t{32} << 10) / std::max<size_t>(row_bytes, 1), 2, 64);
}

}  // namespace shoal::base

#endif  // SHOAL_BASE_PREFETCH_H_

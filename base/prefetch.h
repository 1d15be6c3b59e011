// Software prefetch of a byte range: every 64-byte line of it asked for, to arrive while other
// work runs. A hint only (no fault on any address, no wait, no result changed).
//
//   base::PrefetchLines(vector, dim * sizeof(float));  // scored a few steps later
#ifndef SHOAL_BASE_PREFETCH_H_
#define SHOAL_BASE_PREFETCH_H_

#include <cstddef>

namespace shoal::base {

inline constexpr size_t kCacheLine = 64;

inline void PrefetchLines(const void* p, size_t bytes) {
  const char* b = static_cast<const char*>(p);
  for (size_t off = 0; off < bytes; off += kCacheLine) __builtin_prefetch(b + off);
}

}  // namespace shoal::base

#endif  // SHOAL_BASE_PREFETCH_H_

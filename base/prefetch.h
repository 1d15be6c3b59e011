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

// One line's prefetch, as an instruction the compiler must keep: GCC 12 at -O2 deleted
// PrefetchLines' loop of __builtin_prefetch whole once inlined (its line count is made from the
// address), so for sessions no prefetch was emitted anywhere it was used (docs/PERFORMANCE.md).
inline void PrefetchLine(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

inline void PrefetchLines(const void* p, size_t bytes) {
  if (bytes == 0) return;
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  const size_t lines = (start + bytes - 1) / kCacheLine - start / kCacheLine + 1;
  // p + i * 64 lies in the i-th line from p's.
  for (size_t i = 0; i < lines; ++i) PrefetchLine(static_cast<const char*>(p) + i * kCacheLine);
}

// How many rows of `row_bytes` to keep asked for ahead of the one in use while walking cold rows:
// about 32 KiB of them, 2 to 64 (asking for a whole batch up front evicted its first rows again
// before their use once it outgrew L1/L2).
inline size_t RowsAhead(size_t row_bytes) {
  return std::clamp<size_t>((size_t{32} << 10) / std::max<size_t>(row_bytes, 1), 2, 64);
}

}  // namespace shoal::base

#endif  // SHOAL_BASE_PREFETCH_H_

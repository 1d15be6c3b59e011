// Compiled only to be disassembled by the ctest `prefetch_emitted` (base/CMakeLists.txt): each
// function must keep its prefetch instructions. GCC 12 at -O2 once deleted PrefetchLines' loop
// whole, and every software prefetch of the index went with it unnoticed (docs/PERFORMANCE.md).
#include <cstddef>

#include "base/prefetch.h"

namespace shoal::base {

// A range of a size known only at run time (a vector of the collection's dimension).
void PrefetchProbeRange(const void* p, size_t bytes) { PrefetchLines(p, bytes); }

// Rows walked ahead of their use, the way VectorCache::LookupBatch does.
void PrefetchProbeRows(const float* const* rows, size_t n, size_t dim) {
  for (size_t i = 0; i < n; ++i) PrefetchLines(rows[i], dim * sizeof(float));
}

}  // namespace shoal::base

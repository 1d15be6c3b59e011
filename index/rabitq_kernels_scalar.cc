// Scalar RaBitQ kernel: the reference every other level must match. Compiled without AVX and
// without tree vectorization (see CMakeLists.txt), so it runs on any x86-64.
#include "index/rabitq_internal.h"

namespace shoal::index::internal {

void RabitqDotScalar(const RabitqDotArgs& args, const uint8_t* codes, size_t n, uint64_t* dots) {
  for (size_t c = 0; c < n; ++c) {
    const uint8_t* code = codes + c * args.code_bytes;
    uint64_t dot = 0;
    for (size_t w = 0; w < args.code_words; ++w) {
      uint64_t x;
      __builtin_memcpy(&x, code + 8 * w, 8);
      for (size_t k = 0; k < args.query_bits; ++k) {
        const size_t at = k * args.code_words + w;
        dot += static_cast<uint64_t>(__builtin_popcountll(x & args.planes[at])) << args.shifts[at];
      }
    }
    dots[c] = dot;
  }
}

}  // namespace shoal::index::internal

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

void RabitqPlanesScalar(const uint16_t* qu, size_t d, size_t query_bits, size_t stride,
                        uint64_t* planes) {
  for (size_t w = 0; w < d / 64; ++w) {
    for (size_t k = 0; k < query_bits; ++k) {
      uint64_t word = 0;
      for (size_t b = 0; b < 64; ++b) word |= uint64_t{(qu[w * 64 + b] >> k) & 1u} << b;
      planes[k * stride + w] = word;
    }
  }
}

}  // namespace shoal::index::internal

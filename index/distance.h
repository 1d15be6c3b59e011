// Distance kernels: squared L2 and inner product over float vectors, with AVX-512, AVX2+FMA and
// scalar implementations chosen once at run time (base::Cpu(); SHOAL_CPU caps the level).
//
//   float d = shoal::index::L2Sqr(a, b, dim);
//
// All functions are pure and thread-safe.
#ifndef SHOAL_INDEX_DISTANCE_H_
#define SHOAL_INDEX_DISTANCE_H_

#include <cstddef>

namespace shoal::index {

// The index's view of a metric; the DB maps cosine to kInnerProduct over normalised vectors.
enum class Metric { kL2, kInnerProduct };

float L2Sqr(const float* a, const float* b, size_t dim);
float InnerProduct(const float* a, const float* b, size_t dim);
// "smaller is closer": L2Sqr, or -InnerProduct.
float Distance(Metric metric, const float* a, const float* b, size_t dim);

// Name of the kernel level in use: "avx512", "avx2" or "scalar".
const char* KernelLevel();

}  // namespace shoal::index

#endif  // SHOAL_INDEX_DISTANCE_H_

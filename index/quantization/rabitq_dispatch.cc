// RaBitQ's kernel dispatch: which ISA level's fast-scan, lookup-table, finish and quantize
// kernels (rabitq_kernels_*.cc) run, chosen once from the CPU (SHOAL_CPU caps it), and the
// portable fast Hadamard transform the others are checked against.
#include "index/distance/distance_internal.h"
#include "index/quantization/rabitq_internal.h"

namespace shoal::index {

namespace internal {

void RabitqFhtPortable(float* v, size_t n) {
  for (size_t h = 1; h < n; h *= 2) {
    for (size_t i = 0; i < n; i += 2 * h) {
      for (size_t j = i; j < i + h; ++j) {
        const float a = v[j];
        const float b = v[j + h];
        v[j] = a + b;
        v[j + h] = a - b;
      }
    }
  }
}

bool RabitqLevelSupported(KernelLevelId level) { return LevelSupported(level); }

RabitqScanFn RabitqScanFor(KernelLevelId level) {
  switch (level) {
    case KernelLevelId::kAvx512:
      return RabitqScanAvx512;
    case KernelLevelId::kAvx2:
      return RabitqScanAvx2;
    case KernelLevelId::kScalar:
      break;
  }
  return RabitqScanScalar;
}

RabitqLutFn RabitqLutFor(KernelLevelId level) {
  return level == KernelLevelId::kAvx512 ? RabitqLutAvx512 : RabitqLutScalar;
}

RabitqFinishFn RabitqFinishFor(KernelLevelId level) {
  return level == KernelLevelId::kAvx512 ? RabitqFinishAvx512 : RabitqFinishScalar;
}

RabitqQuantizeFn RabitqQuantizeFor(KernelLevelId level) {
  return level == KernelLevelId::kAvx512 ? RabitqQuantizeAvx512 : RabitqQuantizeScalar;
}

KernelLevelId RabitqActiveLevel() {
  static const KernelLevelId active = [] {
    if (RabitqLevelSupported(KernelLevelId::kAvx512)) return KernelLevelId::kAvx512;
    if (RabitqLevelSupported(KernelLevelId::kAvx2)) return KernelLevelId::kAvx2;
    return KernelLevelId::kScalar;
  }();
  return active;
}

}  // namespace internal
}  // namespace shoal::index

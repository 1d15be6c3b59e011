#include "base/cpu_features.h"

#include <cpuid.h>

#include <cstdlib>
#include <string_view>

namespace shoal::base {
namespace {

// CPUID leaf 1, ECX: clang 14's __builtin_cpu_supports does not know "f16c" (GCC does).
bool HasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

CpuFeatures Detect() {
  __builtin_cpu_init();
  CpuFeatures f;
  f.popcnt = __builtin_cpu_supports("popcnt");
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.f16c = HasF16c();
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512vpopcntdq = __builtin_cpu_supports("avx512vpopcntdq");
  const char* cap = std::getenv("SHOAL_CPU");
  std::string_view level = cap == nullptr ? "" : cap;
  if (level == "scalar" || level == "avx2") {
    f.avx512f = f.avx512bw = f.avx512vl = f.avx512vnni = f.avx512vpopcntdq = false;
  }
  if (level == "scalar") f.popcnt = f.avx2 = f.fma = f.f16c = false;
  return f;
}

}  // namespace

const CpuFeatures& Cpu() {
  static const CpuFeatures features = Detect();
  return features;
}

}  // namespace shoal::base

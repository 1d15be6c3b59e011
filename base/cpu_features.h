// What the running CPU supports, read once at start-up. Kernels in index/ pick their
// implementation from this (AVX-512 > AVX2 > scalar). Thread-safe (immutable after first use).
//
//   if (shoal::base::Cpu().avx512f) { ... }
#ifndef SHOAL_BASE_CPU_FEATURES_H_
#define SHOAL_BASE_CPU_FEATURES_H_

namespace shoal::base {

struct CpuFeatures {
  // popcnt: x86-64's baseline lacks it, so std::popcount outside a kernel calls libgcc.
  bool popcnt = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;  // vcvtph2ps / vcvtps2ph (half <-> float)
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  bool avx512vpopcntdq = false;
};

// Features of this CPU; the environment variable SHOAL_CPU=scalar|avx2|avx512 caps them
// (tests use it to compare kernels; operators to rule out a suspect path).
const CpuFeatures& Cpu();

}  // namespace shoal::base

#endif  // SHOAL_BASE_CPU_FEATURES_H_

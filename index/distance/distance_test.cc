#include "index/distance/distance.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "base/test_seed.h"
#include "gtest/gtest.h"
#include "index/distance/distance_internal.h"
#include "index/distance/finite_check.h"

namespace shoal::index {
namespace {

using internal::KernelLevelId;

uint32_t Seed() { return base::TestSeed(); }

std::vector<KernelLevelId> SupportedLevels() {
  std::vector<KernelLevelId> levels;
  for (auto level : {KernelLevelId::kScalar, KernelLevelId::kAvx2, KernelLevelId::kAvx512}) {
    if (internal::LevelSupported(level)) levels.push_back(level);
  }
  return levels;
}

// Exact-enough references and the scale of their rounding error (sum of |terms|).
struct Reference {
  double value;
  double magnitude;
};
Reference L2Reference(const float* a, const float* b, size_t dim) {
  double s = 0;
  for (size_t i = 0; i < dim; ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return {s, s};
}
Reference IpReference(const float* a, const float* b, size_t dim) {
  double s = 0, m = 0;
  for (size_t i = 0; i < dim; ++i) {
    s += double(a[i]) * b[i];
    m += std::abs(double(a[i]) * b[i]);
  }
  return {s, m};
}

// Float accumulation of `dim` terms: error at most ~dim * 2^-24 * magnitude; 1e-5 relative
// to the magnitude is far inside that for the dims tested, and far outside a wrong result.
void ExpectNear(float got, Reference ref, const std::string& what) {
  EXPECT_NEAR(got, ref.value, 1e-5 * ref.magnitude + 1e-30) << what;
}

TEST(DistanceTest, EveryLevelMatchesDoubleReferenceOverManyDims) {
  std::mt19937 rng(Seed());
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<size_t> dims;
  for (size_t d = 1; d <= 130; ++d) dims.push_back(d);
  for (size_t d : {191, 255, 256, 257, 383, 511, 512, 513, 767, 783, 784, 785, 960, 999, 1024}) {
    dims.push_back(d);
  }
  for (KernelLevelId level : SupportedLevels()) {
    const auto& kernels = internal::KernelsFor(level);
    for (size_t dim : dims) {
      // +1: unaligned starts.
      std::vector<float> a(dim + 1), b(dim + 1);
      for (auto& x : a) x = uniform(rng);
      for (auto& x : b) x = uniform(rng);
      const std::string what = std::string(kernels.name) + " dim " + std::to_string(dim);
      ExpectNear(kernels.l2_sqr(a.data() + 1, b.data() + 1, dim),
                 L2Reference(a.data() + 1, b.data() + 1, dim), what);
      ExpectNear(kernels.inner_product(a.data() + 1, b.data() + 1, dim),
                 IpReference(a.data() + 1, b.data() + 1, dim), what);
    }
  }
}

TEST(DistanceTest, EveryLevelIsExactOnSmallIntegers) {
  // Small integer values keep every partial sum exact in float, so all levels must agree
  // exactly with each other and with the reference; this also catches a tail lane read twice.
  std::mt19937 rng(Seed());
  std::uniform_int_distribution<int> value(0, 15);
  for (size_t dim = 1; dim <= 300; ++dim) {
    std::vector<float> a(dim), b(dim);
    for (auto& x : a) x = value(rng);
    for (auto& x : b) x = value(rng);
    for (KernelLevelId level : SupportedLevels()) {
      const auto& kernels = internal::KernelsFor(level);
      EXPECT_EQ(kernels.l2_sqr(a.data(), b.data(), dim), L2Reference(a.data(), b.data(), dim).value)
          << kernels.name << " dim " << dim;
      EXPECT_EQ(kernels.inner_product(a.data(), b.data(), dim),
                IpReference(a.data(), b.data(), dim).value)
          << kernels.name << " dim " << dim;
    }
  }
}

TEST(DistanceTest, ZeroDimIsZero) {
  const float a = 1, b = 2;
  for (KernelLevelId level : SupportedLevels()) {
    EXPECT_EQ(internal::KernelsFor(level).l2_sqr(&a, &b, 0), 0.0f);
    EXPECT_EQ(internal::KernelsFor(level).inner_product(&a, &b, 0), 0.0f);
  }
}

TEST(DistanceTest, PublicFunctionsUseTheActiveLevel) {
  const std::string level = KernelLevel();
  const auto& cpu = base::Cpu();
  if (cpu.avx512f && cpu.avx512bw && cpu.avx512vl && cpu.fma) {
    EXPECT_EQ(level, "avx512");
  } else if (cpu.avx2 && cpu.fma && cpu.f16c) {
    EXPECT_EQ(level, "avx2");
  } else {
    EXPECT_EQ(level, "scalar");
  }
  const float a[3] = {1, 2, 3}, b[3] = {4, 6, 3};
  EXPECT_EQ(L2Sqr(a, b, 3), 25.0f);
  EXPECT_EQ(InnerProduct(a, b, 3), 25.0f);
  EXPECT_EQ(Distance(Metric::kL2, a, b, 3), 25.0f);
  EXPECT_EQ(Distance(Metric::kInnerProduct, a, b, 3), -25.0f);
}

// L2SqrRows is L2Sqr over each row, bit for bit (the tree's descent keeps the same children
// whichever it calls): every row count around the AVX-512 kernel's group of 4, dims with and
// without a 64-, 16- and masked tail, rows scattered in memory.
TEST(DistanceTest, RowsKernelMatchesL2SqrBitForBit) {
  std::mt19937 rng(Seed());
  std::normal_distribution<float> g(0.0f, 3.0f);
  for (size_t dim : {1, 7, 16, 33, 64, 100, 128, 143, 784}) {
    std::vector<float> a(dim), pool(13 * dim * 2);
    for (float& x : a) x = g(rng);
    for (float& x : pool) x = g(rng);
    std::vector<const float*> rows;
    for (size_t i = 0; i < 13; ++i) rows.push_back(pool.data() + (i * 7 % 13) * 2 * dim + i % 2);
    for (size_t n = 0; n <= rows.size(); ++n) {
      std::vector<float> out(n + 1, -1.0f);
      L2SqrRows(a.data(), rows.data(), n, out.data(), dim);
      for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(out[i], L2Sqr(a.data(), rows[i], dim))
            << "dim " << dim << " n " << n << " row " << i << " seed " << Seed();
      }
      EXPECT_EQ(out[n], -1.0f) << "wrote past n: dim " << dim << " n " << n;
    }
  }
}

// PackQueryBlockAvx512 writes point q's dimension d less shift[d] at d * kQueryBlock + q, zero
// for the rows past `rows`, and nothing past the block (odd dimensions end on a half store); it
// says whether every value it read was finite.
TEST(DistanceTest, QueryBlockPackingTransposesAndShifts) {
  if (!internal::LevelSupported(KernelLevelId::kAvx512)) GTEST_SKIP() << "no AVX-512";
  using internal::kQueryBlock;
  std::mt19937 rng(Seed());
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (size_t dim : {1, 2, 7, 15, 16, 17, 33, 50, 128}) {
    for (size_t rows = 1; rows <= kQueryBlock; ++rows) {
      std::vector<float> points(rows * dim), shift(dim);
      for (auto& v : points) v = uniform(rng);
      for (auto& v : shift) v = uniform(rng);
      std::vector<float> qpack(dim * kQueryBlock + 1, -7.0f);
      EXPECT_TRUE(
          internal::PackQueryBlockAvx512(points.data(), rows, dim, shift.data(), qpack.data()));
      for (size_t d = 0; d < dim; ++d) {
        for (size_t q = 0; q < kQueryBlock; ++q) {
          const float expected = q < rows ? points[q * dim + d] - shift[d] : 0.0f;
          EXPECT_EQ(qpack[d * kQueryBlock + q], expected)
              << "dim " << dim << " rows " << rows << " d " << d << " q " << q;
        }
      }
      EXPECT_EQ(qpack[dim * kQueryBlock], -7.0f) << "wrote past the block: dim " << dim;
      // A NaN or infinity anywhere in the rows read is reported, among negative values too.
      for (float bad :
           {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
        std::vector<float> with_bad = points;
        for (float& v : with_bad) v = -std::abs(v);
        with_bad[rng() % with_bad.size()] = bad;
        EXPECT_FALSE(
            internal::PackQueryBlockAvx512(with_bad.data(), rows, dim, shift.data(), qpack.data()))
            << "dim " << dim << " rows " << rows;
      }
    }
  }
}

TEST(DistanceTest, BlockKernelMatchesPlainDotProducts) {
  if (!internal::LevelSupported(KernelLevelId::kAvx512)) GTEST_SKIP() << "no AVX-512";
  using internal::kPanelWidth;
  using internal::kQueryBlock;
  std::mt19937 rng(Seed());
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (size_t dim : {1, 7, 16, 33, 100, 784}) {
    std::vector<float> q(kQueryBlock * dim), x(kPanelWidth * dim), bias(kPanelWidth);
    for (auto& v : q) v = uniform(rng);
    for (auto& v : x) v = uniform(rng);
    for (auto& v : bias) v = uniform(rng);
    std::vector<float> qpack(dim * kQueryBlock), panel(dim * kPanelWidth);
    for (size_t d = 0; d < dim; ++d) {
      for (size_t i = 0; i < kQueryBlock; ++i) qpack[d * kQueryBlock + i] = q[i * dim + d];
      for (size_t j = 0; j < kPanelWidth; ++j) panel[d * kPanelWidth + j] = x[j * dim + d];
    }
    // Thresholds around the middle of the scores, so masks have both bits.
    std::vector<float> thresholds(kQueryBlock);
    for (auto& t : thresholds) t = uniform(rng) * std::sqrt(float(dim));
    std::vector<float> scores(kQueryBlock * kPanelWidth);
    std::vector<uint64_t> masks(kQueryBlock);
    internal::ScoreBlockAvx512(qpack.data(), panel.data(), dim, bias.data(), -2.0f,
                               thresholds.data(), scores.data(), masks.data());
    for (size_t i = 0; i < kQueryBlock; ++i) {
      EXPECT_EQ(masks[i] >> kPanelWidth, 0u);
      for (size_t j = 0; j < kPanelWidth; ++j) {
        const float got = scores[i * kPanelWidth + j];
        const Reference dot = IpReference(&q[i * dim], &x[j * dim], dim);
        EXPECT_NEAR(got, bias[j] - 2 * dot.value, 1e-5 * (2 * dot.magnitude + 1))
            << "dim " << dim << " q " << i << " x " << j;
        EXPECT_EQ((masks[i] >> j) & 1, got <= thresholds[i] ? 1u : 0u) << "dim " << dim;
      }
    }
    // Fewer lanes: the same scores bit for bit up to the next multiple of 16, nothing past it.
    for (size_t lanes : {1, 16, 17, 32, 40}) {
      const size_t width = (lanes + 15) / 16 * 16;
      std::vector<float> part(kQueryBlock * kPanelWidth, -7.0f);
      std::vector<uint64_t> part_masks(kQueryBlock);
      internal::ScoreBlockAvx512(qpack.data(), panel.data(), dim, bias.data(), -2.0f,
                                 thresholds.data(), part.data(), part_masks.data(), lanes);
      for (size_t i = 0; i < kQueryBlock; ++i) {
        EXPECT_EQ(part_masks[i], masks[i] & ((uint64_t{1} << width) - 1)) << "lanes " << lanes;
        for (size_t j = 0; j < kPanelWidth; ++j) {
          EXPECT_EQ(part[i * kPanelWidth + j], j < width ? scores[i * kPanelWidth + j] : -7.0f)
              << "dim " << dim << " lanes " << lanes << " q " << i << " x " << j;
        }
      }
    }
  }
}

uint32_t Bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

// BestLanesAvx512 keeps the `keep` least scores of the mask, ties to the lower lane, and the
// whole mask when it has no more bits than that (what a sort of the masked lanes keeps).
TEST(DistanceTest, BestLanesKeepsTheLeastScoresTiesToTheLowerLane) {
  if (!internal::LevelSupported(KernelLevelId::kAvx512)) GTEST_SKIP() << "no AVX-512";
  using internal::kPanelWidth;
  std::mt19937_64 rng(Seed());
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<float> scores(kPanelWidth);
    // Few distinct values, so ties are common; an infinite score now and then.
    for (float& v : scores) v = static_cast<float>(rng() % 12) - 4.0f;
    if (trial % 7 == 0) scores[rng() % kPanelWidth] = __builtin_inff();
    // A third of the masks within the first 16 lanes, a third within 32 (the kernel's one- and
    // two-register paths).
    const uint64_t lanes_used = trial % 3 == 0   ? 0xFFFF
                                : trial % 3 == 1 ? 0xFFFFFFFF
                                                 : (uint64_t{1} << kPanelWidth) - 1;
    const uint64_t mask = (trial % 4 < 2 ? rng() & rng() : rng()) & lanes_used;
    const size_t keep = 1 + rng() % 12;
    std::vector<size_t> lanes;  // the masked lanes by score, ties by lane
    for (size_t j = 0; j < kPanelWidth; ++j) {
      if ((mask >> j) & 1) lanes.push_back(j);
    }
    std::stable_sort(lanes.begin(), lanes.end(),
                     [&](size_t a, size_t b) { return scores[a] < scores[b]; });
    uint64_t expected = 0;
    for (size_t i = 0; i < std::min(keep, lanes.size()); ++i) expected |= uint64_t{1} << lanes[i];
    EXPECT_EQ(internal::BestLanesAvx512(scores.data(), mask, keep), expected)
        << "trial " << trial << " keep " << keep << " seed " << Seed();
  }
}

// AllFinite at every kernel level and length: one NaN or infinity anywhere (among negative
// values too: the sign bit must not hide it) is seen; the largest finite values are not.
TEST(DistanceTest, AllFiniteSeesEveryNanAndInfinityAtEveryLevel) {
  const float bads[] = {
      std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{63}, size_t{64}, size_t{65},
                   size_t{255}, size_t{256}, size_t{300}}) {
    std::vector<float> v(n, -1.0f);
    if (n > 2) v[n / 2] = -std::numeric_limits<float>::max();
    if (n > 3) v[n / 3] = std::numeric_limits<float>::max();
    for (auto level : {KernelLevelId::kScalar, KernelLevelId::kAvx512}) {
      if (!internal::LevelSupported(level)) continue;
      auto all_finite =
          level == KernelLevelId::kAvx512 ? internal::AllFiniteAvx512 : internal::AllFiniteScalar;
      EXPECT_TRUE(all_finite(v.data(), n)) << "n " << n;
      for (size_t at = 0; at < n; at += 1 + at / 4) {
        for (float bad : bads) {
          std::vector<float> w = v;
          w[at] = bad;
          EXPECT_FALSE(all_finite(w.data(), n)) << "n " << n << " at " << at << " " << bad;
        }
      }
    }
    EXPECT_TRUE(AllFinite(v.data(), n));
  }
}

// CheckFiniteRows names the first NaN or infinity wherever it lies: in a full block of the
// vectorised pass or in the tail, with a finite value as large as a float holds passing.
TEST(DistanceTest, CheckFiniteRowsNamesTheFirstBadValue) {
  const size_t rows = 100, width = 7;  // 700 values: two blocks of 256 and a tail
  std::vector<float> v(rows * width, 1.0f);
  v[3] = std::numeric_limits<float>::max();
  v[4] = -std::numeric_limits<float>::max();
  v[5] = std::numeric_limits<float>::denorm_min();
  EXPECT_TRUE(CheckFiniteRows(v.data(), rows, width, "points").ok());
  for (size_t at : {size_t{0}, size_t{255}, size_t{256}, size_t{300}, size_t{699}}) {
    for (float bad :
         {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity(),
          std::numeric_limits<float>::infinity()}) {
      std::vector<float> w = v;
      w[at] = bad;
      if (at + 1 < w.size()) w[at + 1] = std::numeric_limits<float>::quiet_NaN();  // a later one
      const absl::Status s = CheckFiniteRows(w.data(), rows, width, "points");
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(s.message().find(absl::StrCat("points[", at / width, "]")), std::string::npos) << s;
      EXPECT_NE(s.message().find(absl::StrCat("column ", at % width)), std::string::npos) << s;
    }
  }
}

TEST(DistanceTest, PortableHalfConversionsMatchF16cBitForBit) {
  if (!base::Cpu().f16c) GTEST_SKIP() << "no F16C";
  std::vector<uint16_t> halves(65536);
  for (uint32_t h = 0; h < 65536; ++h) halves[h] = static_cast<uint16_t>(h);
  std::vector<float> want(65536);
  internal::HalvesToFloatsF16c(halves.data(), halves.size(), want.data());
  for (uint32_t h = 0; h < 65536; ++h) {
    ASSERT_EQ(Bits(HalfToFloat(static_cast<uint16_t>(h))), Bits(want[h])) << "half " << h;
  }
  // Every half, its neighbours in float and the midpoints (ties), plus random bit patterns.
  std::vector<float> floats;
  for (float f : want) {
    const uint32_t b = Bits(f);
    for (uint32_t delta : {0u, 1u, 0xFFFu, 0x1000u, 0x1001u, 0x1FFFu}) {
      for (uint32_t v : {b + delta, b - delta}) {
        float x;
        std::memcpy(&x, &v, 4);
        floats.push_back(x);
      }
    }
  }
  std::mt19937 rng(Seed());
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t v = rng();
    float x;
    std::memcpy(&x, &v, 4);
    floats.push_back(x);
  }
  std::vector<uint16_t> got(floats.size());
  internal::FloatsToHalvesF16c(floats.data(), floats.size(), got.data());
  for (size_t i = 0; i < floats.size(); ++i) {
    ASSERT_EQ(FloatToHalf(floats[i]), got[i]) << "float bits " << std::hex << Bits(floats[i]);
  }
}

TEST(DistanceTest, FloatsToHalvesRefusesWhatAHalfCannotHold) {
  std::vector<uint16_t> out(2);
  const float fine[2] = {65504.0f, -1e-9f};
  EXPECT_TRUE(FloatsToHalves(fine, 2, out.data()));
  EXPECT_EQ(HalfToFloat(out[0]), 65504.0f);
  for (float bad : {65505.0f, -70000.0f, std::nanf(""), INFINITY}) {
    const float in[2] = {1.0f, bad};
    EXPECT_FALSE(FloatsToHalves(in, 2, out.data())) << bad;
  }
}

// Every level against a double reference over the halves' exact values; on small integers
// (exact in float) bit-equal to each other; with a bound, either the same value (below it) or a
// partial sum above the bound and at most the distance.
TEST(DistanceTest, HalfKernelsEveryLevelMatchReference) {
  std::mt19937 rng(Seed());
  std::uniform_real_distribution<float> uniform(-300.0f, 300.0f);
  std::uniform_int_distribution<int> small(0, 15);
  for (size_t dim : {1,   2,   7,   8,   15,  16,  17,  31,  33,  63,  64, 65,
                     100, 128, 129, 200, 255, 256, 257, 783, 784, 785, 960}) {
    std::vector<float> a(dim), b(dim), ia(dim), ib(dim);
    for (auto& x : a) x = uniform(rng);
    for (auto& x : b) x = uniform(rng);
    for (auto& x : ia) x = static_cast<float>(small(rng));
    for (auto& x : ib) x = static_cast<float>(small(rng));
    std::vector<uint16_t> h(dim + 1), ih(dim);
    ASSERT_TRUE(FloatsToHalves(b.data(), dim, h.data() + 1));  // +1: unaligned
    ASSERT_TRUE(FloatsToHalves(ib.data(), dim, ih.data()));
    for (size_t i = 0; i < dim; ++i) b[i] = HalfToFloat(h[i + 1]);
    const Reference ref = L2Reference(a.data(), b.data(), dim);
    for (KernelLevelId level : SupportedLevels()) {
      const auto& kernels = internal::KernelsFor(level);
      const std::string what = std::string(kernels.name) + " dim " + std::to_string(dim);
      const float full = kernels.l2_sqr_half_bounded(a.data(), h.data() + 1, dim, INFINITY);
      ExpectNear(full, ref, what);
      EXPECT_EQ(kernels.l2_sqr_half_bounded(ia.data(), ih.data(), dim, INFINITY),
                L2Reference(ia.data(), ib.data(), dim).value)
          << what;
      for (float fraction : {0.0f, 0.1f, 0.5f, 0.9f, 1.0f, 1.1f}) {
        const float bound = fraction * full;
        const float got = kernels.l2_sqr_half_bounded(a.data(), h.data() + 1, dim, bound);
        if (got <= bound) {
          EXPECT_EQ(got, full) << what << " bound " << bound;
        } else {
          EXPECT_LE(got, full) << what << " bound " << bound;
        }
        if (fraction > 1) {
          EXPECT_EQ(got, full) << what;
        }
        // Dimensions beyond the first check always allow an early stop below a tiny bound.
        if (fraction == 0 && dim >= 2 * internal::kHalfCheckDims && full > 0) {
          EXPECT_LT(got, full) << what;
        }
      }
    }
  }
  const float a = 1;
  const uint16_t b = FloatToHalf(2);
  EXPECT_EQ(L2SqrHalf(&a, &b, 1), 1.0f);
  EXPECT_EQ(L2SqrHalf(&a, &b, 0), 0.0f);
  EXPECT_EQ(L2SqrHalfBounded(&a, &b, 1, 0.5f), 1.0f);
}

// DistanceBounded is the distance when that is within the bound, else a value above the bound
// and not above the distance, for both metrics; the AVX-512 L2 kernel sums as L2SqrAvx512 does
// and stops early below a tiny bound.
TEST(DistanceTest, DistanceBoundedIsTheDistanceOrAboveTheBound) {
  std::mt19937 rng(Seed());
  std::uniform_real_distribution<float> uniform(-300.0f, 300.0f);
  for (size_t dim : {1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 200, 256, 257, 784, 960, 1536}) {
    std::vector<float> a(dim), b(dim + 1);
    for (auto& x : a) x = uniform(rng);
    for (auto& x : b) x = uniform(rng);
    const float* ub = b.data() + 1;  // unaligned
    for (Metric metric : {Metric::kL2, Metric::kInnerProduct}) {
      const std::string what =
          std::string(metric == Metric::kL2 ? "l2" : "ip") + " dim " + std::to_string(dim);
      const float full = Distance(metric, a.data(), ub, dim);
      EXPECT_EQ(DistanceBounded(metric, a.data(), ub, dim, INFINITY), full) << what;
      for (float fraction : {-1.0f, 0.0f, 0.1f, 0.5f, 0.9f, 1.0f, 1.1f}) {
        const float bound = fraction * std::abs(full);
        const float got = DistanceBounded(metric, a.data(), ub, dim, bound);
        if (full <= bound) {
          EXPECT_EQ(got, full) << what << " bound " << bound;
        } else {
          EXPECT_GT(got, bound) << what << " bound " << bound;
          EXPECT_LE(got, full) << what << " bound " << bound;
        }
      }
    }
    if (internal::LevelSupported(KernelLevelId::kAvx512)) {
      const float l2 = internal::L2SqrAvx512(a.data(), ub, dim);
      EXPECT_EQ(internal::L2SqrBoundedAvx512(a.data(), ub, dim, l2), l2) << dim;
      if (dim >= 2 * internal::kHalfCheckDims && l2 > 0) {
        EXPECT_LT(internal::L2SqrBoundedAvx512(a.data(), ub, dim, 0), l2) << dim;
      }
    }
  }
}

}  // namespace
}  // namespace shoal::index

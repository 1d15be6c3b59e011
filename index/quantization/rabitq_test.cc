#include "index/quantization/rabitq.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"
#include "index/distance/distance.h"
#include "index/quantization/quantizer.h"
#include "index/quantization/rabitq_internal.h"
#include "shoal/dataset.h"

namespace shoal::index {
namespace {

using internal::KernelLevelId;

std::vector<float> RandomVector(std::mt19937_64& rng, size_t dim, float scale = 1.0f) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(dim);
  for (float& x : v) x = normal(rng);
  return v;
}

double Dot(const float* a, const float* b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += double{a[i]} * b[i];
  return s;
}

double ExactL2(const float* a, const float* b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
  return s;
}

TEST(RandomRotationTest, PadsToMultipleOf64AndPreservesNormsAndDots) {
  std::mt19937_64 rng(base::TestSeed());
  for (size_t dim : {1, 5, 63, 64, 100, 128, 200, 784, 1000}) {
    RandomRotation rot(dim, rng());
    EXPECT_EQ(rot.padded_dim(), (dim + 63) / 64 * 64);
    std::vector<float> rx(rot.padded_dim()), ry(rot.padded_dim());
    for (int trial = 0; trial < 20; ++trial) {
      const std::vector<float> x = RandomVector(rng, dim), y = RandomVector(rng, dim);
      rot.Apply(x.data(), rx.data());
      rot.Apply(y.data(), ry.data());
      const double nx = std::sqrt(Dot(x.data(), x.data(), dim));
      const double ny = std::sqrt(Dot(y.data(), y.data(), dim));
      EXPECT_NEAR(std::sqrt(Dot(rx.data(), rx.data(), rx.size())), nx, 1e-5 * nx) << dim;
      EXPECT_NEAR(Dot(rx.data(), ry.data(), rx.size()), Dot(x.data(), y.data(), dim),
                  1e-5 * nx * ny)
          << dim;
    }
  }
}

TEST(RandomRotationTest, SpreadsAUnitVectorOverAllCoordinates) {
  RandomRotation rot(784, 7);
  std::vector<float> e(784, 0.0f), out(rot.padded_dim());
  e[3] = 1;
  rot.Apply(e.data(), out.data());
  size_t nonzero = 0;
  for (float v : out) nonzero += std::fabs(v) > 1e-6f;
  EXPECT_EQ(nonzero, out.size());
}

TEST(RandomRotationTest, DeterministicPerSeed) {
  const std::vector<float> x = [] {
    std::mt19937_64 rng(1);
    return RandomVector(rng, 100);
  }();
  RandomRotation a(100, 42), b(100, 42), c(100, 43);
  std::vector<float> ra(128), rb(128), rc(128);
  a.Apply(x.data(), ra.data());
  b.Apply(x.data(), rb.data());
  c.Apply(x.data(), rc.data());
  EXPECT_EQ(ra, rb);
  EXPECT_NE(ra, rc);
  std::vector<float> in_place = x;
  in_place.resize(128);
  a.Apply(in_place.data(), in_place.data());
  EXPECT_EQ(in_place, ra);
}

TEST(RandomRotationTest, SerializeRoundTripAndCorruptionIsDataLoss) {
  RandomRotation rot(300, 99);
  const std::string bytes = rot.Serialize();
  absl::StatusOr<RandomRotation> back = RandomRotation::Deserialize(bytes, "rot");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->dim(), 300u);
  EXPECT_EQ(back->seed(), 99u);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] ^= 0x10;
    absl::StatusOr<RandomRotation> r = RandomRotation::Deserialize(bad, "rot");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << i;
  }
  absl::StatusOr<RandomRotation> truncated =
      RandomRotation::Deserialize(bytes.substr(0, bytes.size() - 1), "rot.bin");
  EXPECT_EQ(truncated.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(truncated.status().message().find("rot.bin"), std::string::npos);
}

TEST(RaBitQTest, SerializeRoundTripAndCorruptionIsDataLoss) {
  RaBitQ rq(77, 3, 5, 2.5f);
  const std::string bytes = rq.Serialize();
  absl::StatusOr<RaBitQ> back = RaBitQ::Deserialize(bytes, "rq");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->dim(), 77u);
  EXPECT_EQ(back->bits(), 3u);
  EXPECT_EQ(back->eps0(), 2.5f);
  EXPECT_EQ(back->rotation().seed(), 5u);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] ^= 0x01;
    EXPECT_EQ(RaBitQ::Deserialize(bad, "rq").status().code(), absl::StatusCode::kDataLoss) << i;
  }
}

// Found by fuzz/index_format_fuzzer: a NaN minimum made Encode cast NaN to uint8 (UB).
TEST(QuantizerTest, Sq8WithANonFiniteMinOrStepIsDataLoss) {
  constexpr size_t kDim = 4;
  absl::StatusOr<std::unique_ptr<PostingQuantizer>> q = MakeQuantizer("sq8", kDim, 1);
  ASSERT_TRUE(q.ok());
  std::vector<float> sample(8 * kDim);
  for (size_t i = 0; i < sample.size(); ++i) sample[i] = static_cast<float>(i % 5);
  (*q)->Train(sample.data(), 8);
  const std::string bytes = (*q)->Serialize();
  ASSERT_TRUE(DeserializeQuantizer(bytes, "q.bin").ok());
  const size_t min_at = bytes.size() - 2 * kDim * sizeof(float);
  for (size_t at : {min_at, min_at + kDim * sizeof(float)}) {
    for (float bad : {std::nanf(""), INFINITY}) {
      std::string corrupt = bytes;
      std::memcpy(corrupt.data() + at, &bad, sizeof bad);
      EXPECT_EQ(DeserializeQuantizer(corrupt, "q.bin").status().code(), absl::StatusCode::kDataLoss)
          << "offset " << at << " value " << bad;
    }
  }
}

// Found by fuzz/index_format_fuzzer (UBSan): a dimension of 0 memcpy'd into null arrays.
TEST(QuantizerTest, Sq8WithNoDimensionsIsDataLoss) {
  const std::string bytes = std::string("shoal-sq8-v1") + std::string(4, '\0');
  absl::StatusOr<std::unique_ptr<PostingQuantizer>> q = DeserializeQuantizer(bytes, "q.bin");
  EXPECT_EQ(q.status().code(), absl::StatusCode::kDataLoss) << q.status();
  EXPECT_NE(q.status().message().find("q.bin"), std::string::npos) << q.status();
}

TEST(RaBitQTest, CreateRejectsBadArguments) {
  EXPECT_EQ(RaBitQ::Create(0, 1, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RaBitQ::Create(8, 0, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RaBitQ::Create(8, 9, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RaBitQ::Create(8, 1, 1, 0.0f).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(RaBitQ::Create(8, 8, 1).ok());
}

TEST(RaBitQTest, CodeBytes) {
  EXPECT_EQ(RaBitQ(128, 1, 1).code_bytes(), 16u + 16u);
  EXPECT_EQ(RaBitQ(784, 4, 1).code_bytes(), 4u * 832 / 8 + 16u);
}

TEST(RaBitQTest, VectorAtItsCentroidAndQueryAtCentroidAreExact) {
  std::mt19937_64 rng(3);
  for (uint32_t bits : {1u, 4u}) {
    RaBitQ rq(50, bits, 11);
    const std::vector<float> c = RandomVector(rng, 50), x = RandomVector(rng, 50);
    std::vector<uint8_t> code(rq.code_bytes());
    rq.Encode(c.data(), c.data(), code.data());
    RaBitQ::Query q;
    rq.PrepareQuery(x.data(), c.data(), &q);
    RaBitQ::Estimate e = rq.EstimateOne(q, code.data());
    EXPECT_NEAR(e.distance, ExactL2(x.data(), c.data(), 50), 1e-3);
    EXPECT_LE(e.error, 1e-4 * e.distance);
    rq.Encode(x.data(), c.data(), code.data());
    rq.PrepareQuery(c.data(), c.data(), &q);
    e = rq.EstimateOne(q, code.data());
    EXPECT_NEAR(e.distance, ExactL2(x.data(), c.data(), 50), 1e-3);
    EXPECT_LE(e.error, 1e-4 * e.distance);
  }
}

// Every supported kernel level gives exactly the scalar reference's estimates.
TEST(RaBitQTest, KernelLevelsMatchScalarReferenceExactly) {
  std::mt19937_64 rng(base::TestSeed());
  // 5000: more than 4096 dimensions, so the kernels' 16-bit sums are flushed mid-code.
  for (size_t dim : {1, 64, 100, 128, 200, 784, 5000}) {
    for (uint32_t bits = 1; bits <= 8; ++bits) {
      if (dim == 5000 && bits != 1 && bits != 8) continue;
      RaBitQ rq(dim, bits, rng());
      const size_t n = 37;
      const std::vector<float> c = RandomVector(rng, dim);
      std::vector<uint8_t> codes(n * rq.code_bytes());
      for (size_t i = 0; i < n; ++i) {
        const std::vector<float> x = RandomVector(rng, dim);
        rq.Encode(x.data(), c.data(), &codes[i * rq.code_bytes()]);
      }
      RaBitQ::Query q;
      const std::vector<float> query = RandomVector(rng, dim);
      rq.PrepareQuery(query.data(), c.data(), &q);
      std::vector<RaBitQ::Estimate> ref(n);
      for (size_t i = 0; i < n; ++i) ref[i] = rq.EstimateOne(q, &codes[i * rq.code_bytes()]);
      std::vector<uint8_t> packed(rq.PackedBytes(n));
      rq.Pack(codes.data(), n, packed.data());
      for (KernelLevelId level :
           {KernelLevelId::kScalar, KernelLevelId::kAvx2, KernelLevelId::kAvx512}) {
        if (!internal::RabitqLevelSupported(level)) continue;
        std::vector<RaBitQ::Estimate> got(n);
        EstimatePackedAtLevel(rq, level, q, packed.data(), n, got.data());
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(got[i].distance, ref[i].distance)
              << "dim " << dim << " bits " << bits << " level " << static_cast<int>(level);
          ASSERT_EQ(got[i].error, ref[i].error);
        }
      }
      std::vector<RaBitQ::Estimate> active(n);
      rq.EstimateBatch(q, codes.data(), n, active.data());
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(active[i].distance, ref[i].distance);
      std::vector<float> lower(n), upper(n);
      rq.EstimatePackedBounds(q, packed.data(), n, lower.data(), upper.data());
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(lower[i], ref[i].distance - ref[i].error) << "dim " << dim << " bits " << bits;
        ASSERT_EQ(upper[i], ref[i].distance + ref[i].error) << "dim " << dim << " bits " << bits;
      }
    }
  }
}

// A quantizer's Bounds are its Estimates as intervals, [estimate - error, estimate + error] in
// float, packed or not, for both tiers and for a partial last block (what the index's scan
// works on; RaBitQ writes them straight from its finished blocks).
TEST(QuantizerTest, BoundsAreTheEstimatesAsIntervals) {
  std::mt19937_64 rng(base::TestSeed());
  for (const std::string spec : {"rabitq:bits=1", "rabitq:bits=3", "rabitq:bits=7", "sq8"}) {
    for (size_t dim : {100, 784}) {
      auto quantizer = MakeQuantizer(spec, dim, rng());
      ASSERT_TRUE(quantizer.ok()) << quantizer.status();
      PostingQuantizer& pq = **quantizer;
      const size_t n = 45;
      std::vector<float> sample;
      for (size_t i = 0; i < 64; ++i) {
        const std::vector<float> v = RandomVector(rng, dim);
        sample.insert(sample.end(), v.begin(), v.end());
      }
      pq.Train(sample.data(), 64);
      const std::vector<float> centroid = RandomVector(rng, dim);
      QuantizedPosting posting;
      posting.code_bytes = pq.code_bytes();
      posting.codes.resize(n * pq.code_bytes());
      for (size_t i = 0; i < n; ++i) {
        const std::vector<float> x = RandomVector(rng, dim);
        pq.Encode(x.data(), centroid.data(), &posting.codes[i * pq.code_bytes()]);
        posting.ids.push_back(i);
      }
      const std::vector<float> query = RandomVector(rng, dim);
      std::vector<float> prepared_q(pq.prepared_dim()), prepared_c(pq.prepared_dim());
      pq.Prepare(query.data(), prepared_q.data());
      pq.Prepare(centroid.data(), prepared_c.data());
      for (bool pack : {false, true}) {
        if (pack) pq.Pack(&posting);
        std::vector<float> est(n), err(n), lower(n), upper(n);
        pq.Estimate(prepared_q.data(), prepared_c.data(), posting, est.data(), err.data());
        pq.Bounds(prepared_q.data(), prepared_c.data(), posting, lower.data(), upper.data());
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(lower[i], est[i] - err[i]) << spec << " dim " << dim << " packed " << pack;
          ASSERT_EQ(upper[i], est[i] + err[i]) << spec << " dim " << dim << " packed " << pack;
        }
      }
    }
  }
}

TEST(RaBitQTest, LutKernelsAgreePackRoundTripsAndRotatedPreparationMatches) {
  std::mt19937_64 rng(base::TestSeed());
  for (size_t dim : {64, 100, 784}) {
    for (uint32_t bits : {1u, 2u, 5u, 8u}) {
      RaBitQ rq(dim, bits, rng());
      const size_t d = rq.padded_dim();
      // Lookup tables: every level gives the scalar kernel's bytes, for every 6-bit group.
      std::vector<uint16_t> qu(d);
      for (auto& u : qu) u = static_cast<uint16_t>(rng() % (1u << rq.query_bits()));
      for (uint32_t shift : {0u, 6u}) {
        std::vector<uint8_t> ref(d / 4 * 16), got(ref.size());
        internal::RabitqLutScalar(qu.data(), d, shift, ref.data());
        if (internal::RabitqLevelSupported(KernelLevelId::kAvx512)) {
          internal::RabitqLutAvx512(qu.data(), d, shift, got.data());
          EXPECT_EQ(got, ref) << "dim " << dim << " bits " << bits << " shift " << shift;
        }
      }
      // Walsh-Hadamard butterflies: the AVX-512 kernel gives the portable loop's bits.
      if (internal::RabitqLevelSupported(KernelLevelId::kAvx512)) {
        for (size_t n : {16, 64, 512, 1024}) {
          std::vector<float> ref = RandomVector(rng, n), got = ref;
          internal::RabitqFhtPortable(ref.data(), n);
          internal::RabitqFhtAvx512(got.data(), n);
          EXPECT_EQ(got, ref) << "n " << n;
        }
      }
      // Query quantization: the AVX-512 lanes give the scalar lanes' bits.
      if (internal::RabitqLevelSupported(KernelLevelId::kAvx512)) {
        const std::vector<float> a = RandomVector(rng, d), b = RandomVector(rng, d);
        const uint32_t levels = (1u << rq.query_bits()) - 1;
        std::vector<float> r_ref(d), r_got(d);
        std::vector<uint16_t> qu_ref(d), qu_got(d);
        // With one 6-bit group the lookup tables come out of the same pass.
        const bool fused = levels < 64;
        std::vector<uint8_t> lut_ref(d / 4 * 16), lut_got(d / 4 * 16), lut_plain(d / 4 * 16);
        internal::RabitqQuantized ref, got;
        internal::RabitqQuantizeScalar(a.data(), b.data(), d, levels, r_ref.data(), qu_ref.data(),
                                       fused ? lut_ref.data() : nullptr, &ref);
        internal::RabitqQuantizeAvx512(a.data(), b.data(), d, levels, r_got.data(), qu_got.data(),
                                       fused ? lut_got.data() : nullptr, &got);
        EXPECT_EQ(r_got, r_ref);
        EXPECT_EQ(qu_got, qu_ref);
        if (fused) {
          internal::RabitqLutScalar(qu_ref.data(), d, 0, lut_plain.data());
          EXPECT_EQ(lut_ref, lut_plain) << "dim " << dim << " bits " << bits;
          EXPECT_EQ(lut_got, lut_plain) << "dim " << dim << " bits " << bits;
        }
        EXPECT_EQ(got.norm, ref.norm);
        EXPECT_EQ(got.lo, ref.lo);
        EXPECT_EQ(got.delta, ref.delta);
        EXPECT_EQ(got.sum_qu, ref.sum_qu);
        EXPECT_EQ(got.error_sq, ref.error_sq);
      }
      // Pack then Unpack gives the codes back, for a partial last block too.
      const std::vector<float> centroid = RandomVector(rng, dim);
      const size_t n = 45;
      std::vector<uint8_t> codes(n * rq.code_bytes()), back(codes.size());
      for (size_t i = 0; i < n; ++i) {
        const std::vector<float> v = RandomVector(rng, dim);
        rq.Encode(v.data(), centroid.data(), &codes[i * rq.code_bytes()]);
      }
      std::vector<uint8_t> packed(rq.PackedBytes(n));
      rq.Pack(codes.data(), n, packed.data());
      rq.Unpack(packed.data(), n, back.data());
      EXPECT_EQ(back, codes) << "dim " << dim << " bits " << bits;
      // PackAt over a packed array: overwriting slots one by one (in another order, over
      // different codes) gives Pack's bytes; UnpackAt reads each slot back.
      std::vector<uint8_t> one_by_one(rq.PackedBytes(n));
      std::vector<uint8_t> other(rq.code_bytes());
      for (size_t i = 0; i < n; ++i) {
        const std::vector<float> v = RandomVector(rng, dim);
        rq.Encode(v.data(), centroid.data(), other.data());
        rq.PackAt(other.data(), n - 1 - i, one_by_one.data());
      }
      for (size_t i = 0; i < n; ++i) rq.PackAt(&codes[i * rq.code_bytes()], i, one_by_one.data());
      EXPECT_EQ(one_by_one, packed) << "dim " << dim << " bits " << bits;
      for (size_t i = 0; i < n; i += 7) {
        rq.UnpackAt(packed.data(), i, other.data());
        EXPECT_EQ(0, std::memcmp(other.data(), &codes[i * rq.code_bytes()], rq.code_bytes()))
            << "slot " << i;
      }
      // P (q - c) prepared from P q and P c estimates what PrepareQuery(q, c) does, up to float
      // rounding of the rotation.
      const std::vector<float> c = RandomVector(rng, dim), x = RandomVector(rng, dim);
      const std::vector<float> query = RandomVector(rng, dim);
      std::vector<uint8_t> code(rq.code_bytes());
      rq.Encode(x.data(), c.data(), code.data());
      std::vector<float> pq(d), pc(d);
      rq.rotation().Apply(query.data(), pq.data());
      rq.rotation().Apply(c.data(), pc.data());
      RaBitQ::Query direct, rotated;
      rq.PrepareQuery(query.data(), c.data(), &direct);
      rq.PrepareRotated(pq.data(), pc.data(), &rotated);
      for (size_t i = 0; i < d; ++i) {
        ASSERT_NEAR(direct.rotated[i], rotated.rotated[i], 1e-5f) << "dim " << dim << " at " << i;
      }
      // The rounding can move a component across a level boundary of the quantized query: a
      // few components, by one level each. Each such flip moves the estimate by far more than
      // the rotation's rounding, so the tolerance is the rounding's where no level moved and ten
      // times it where some did.
      size_t flips = 0;
      for (size_t i = 0; i < d; ++i) {
        const int diff = int{direct.qu[i]} - int{rotated.qu[i]};
        ASSERT_LE(std::abs(diff), 1) << "dim " << dim << " at " << i;
        flips += diff != 0;
      }
      EXPECT_LE(flips, d / 64) << "dim " << dim;
      const RaBitQ::Estimate a = rq.EstimateOne(direct, code.data());
      const RaBitQ::Estimate b = rq.EstimateOne(rotated, code.data());
      const float exact = L2Sqr(query.data(), x.data(), dim);
      const float tolerance = (flips == 0 ? 1e-3f : 1e-2f) * exact + 1e-3f;
      EXPECT_NEAR(a.distance, b.distance, tolerance) << "dim " << dim << ", " << flips << " flips";
      EXPECT_NEAR(a.error, b.error, tolerance) << "dim " << dim << ", " << flips << " flips";
    }
  }
}

// The bound scales linearly in eps0, so one pass measures every eps0: a pair is inside the bound
// of eps0' iff |estimate - exact| <= error * eps0' / eps0.
constexpr float kEps0s[] = {RaBitQ::kDefaultEps0, 2.6f, RaBitQ::kEps0For999};

struct BoundStats {
  double within[3] = {0, 0, 0};  // per kEps0s: fraction of pairs with |estimate - exact| <= error
  double mean_rel = 0;           // mean |estimate - exact| / exact
  double mean_bound = 0;         // mean error / exact at the default eps0
};

// Encodes `base` rows [0, n) at `bits`, each relative to its nearest of 64 centroids (rows of
// base picked at random), and scores `queries` against every code.
BoundStats MeasureBound(const Matrix& base, size_t n, const Matrix& queries, size_t num_queries,
                        uint32_t bits, uint64_t seed) {
  const size_t dim = base.cols;
  std::mt19937_64 rng(seed);
  std::vector<const float*> centroids;
  for (int i = 0; i < 64; ++i) centroids.push_back(base.Row(rng() % base.rows));
  std::vector<std::vector<size_t>> members(centroids.size());
  for (size_t i = 0; i < n; ++i) {
    size_t best = 0;
    double best_d = INFINITY;
    for (size_t c = 0; c < centroids.size(); ++c) {
      const double d = ExactL2(base.Row(i), centroids[c], dim);
      if (d < best_d) best_d = d, best = c;
    }
    members[best].push_back(i);
  }
  RaBitQ rq(dim, bits, seed);
  size_t pairs = 0, inside[3] = {0, 0, 0};
  double rel = 0, bound = 0;
  std::vector<uint8_t> codes;
  std::vector<RaBitQ::Estimate> est;
  RaBitQ::Query q;
  for (size_t c = 0; c < centroids.size(); ++c) {
    const std::vector<size_t>& ids = members[c];
    codes.resize(ids.size() * rq.code_bytes());
    est.resize(ids.size());
    for (size_t j = 0; j < ids.size(); ++j) {
      rq.Encode(base.Row(ids[j]), centroids[c], &codes[j * rq.code_bytes()]);
    }
    for (size_t qi = 0; qi < num_queries; ++qi) {
      rq.PrepareQuery(queries.Row(qi), centroids[c], &q);
      rq.EstimateBatch(q, codes.data(), ids.size(), est.data());
      for (size_t j = 0; j < ids.size(); ++j) {
        const double exact = ExactL2(queries.Row(qi), base.Row(ids[j]), dim);
        const double diff = std::fabs(est[j].distance - exact);
        ++pairs;
        for (int e = 0; e < 3; ++e) inside[e] += diff <= est[j].error * (kEps0s[e] / rq.eps0());
        if (exact > 0) {
          rel += diff / exact;
          bound += est[j].error / exact;
        }
      }
    }
  }
  BoundStats s;
  for (int e = 0; e < 3; ++e) s.within[e] = static_cast<double>(inside[e]) / pairs;
  s.mean_rel = rel / pairs;
  s.mean_bound = bound / pairs;
  return s;
}

void CheckBoundAcrossBits(const AnnDataset& ds, size_t n, size_t num_queries) {
  const uint64_t seed = base::TestSeed();
  double previous_rel = INFINITY;
  for (uint32_t bits : {1u, 2u, 4u, 8u}) {
    const BoundStats s = MeasureBound(ds.train, n, ds.test, num_queries, bits, seed + bits);
    std::printf(
        "%s bits=%u: within bound at eps0 1.9 / 2.6 / %.1f: %.5f / %.5f / %.5f; mean relative "
        "error %.5f, mean bound/exact %.5f\n",
        ds.name.c_str(), bits, RaBitQ::kEps0For999, s.within[0], s.within[1], s.within[2],
        s.mean_rel, s.mean_bound);
    // eps0 = 1.9 is a ~94% bound (two-sided Gaussian tail), kEps0For999 the 99.9% one.
    EXPECT_GE(s.within[0], RaBitQ::NominalConfidence(RaBitQ::kDefaultEps0) - 0.01) << bits;
    EXPECT_GE(s.within[2], 0.999) << "bits " << bits;
    EXPECT_LT(s.mean_rel, previous_rel) << "bits " << bits;
    previous_rel = s.mean_rel;
  }
}

TEST(RaBitQTest, ErrorScalesWithEps0) {
  RaBitQ a(64, 2, 9), b(64, 2, 9, 3.8f);
  std::mt19937_64 rng(4);
  const std::vector<float> c = RandomVector(rng, 64), x = RandomVector(rng, 64),
                           y = RandomVector(rng, 64);
  std::vector<uint8_t> code(a.code_bytes());
  a.Encode(x.data(), c.data(), code.data());
  RaBitQ::Query q;
  a.PrepareQuery(y.data(), c.data(), &q);
  const RaBitQ::Estimate ea = a.EstimateOne(q, code.data());
  const RaBitQ::Estimate eb = b.EstimateOne(q, code.data());
  EXPECT_EQ(ea.distance, eb.distance);
  EXPECT_NEAR(eb.error, 2 * ea.error, 1e-3 * ea.error);
  EXPECT_NEAR(RaBitQ::NominalConfidence(1.9f), 0.9426, 1e-3);
  EXPECT_NEAR(RaBitQ::NominalConfidence(3.3f), 0.9990, 1e-4);
}

TEST(RaBitQBoundTest, HoldsOnSyntheticData) {
  absl::StatusOr<AnnDataset> ds = LoadDataset("synthetic:n=20000,d=128,q=100,seed=3");
  ASSERT_TRUE(ds.ok()) << ds.status();
  CheckBoundAcrossBits(*ds, ds->train.rows, 50);
}

TEST(RaBitQBoundTest, HoldsOnFashionMnist) {
  absl::StatusOr<AnnDataset> ds = LoadDataset("fashion-mnist");
  if (absl::IsNotFound(ds.status())) GTEST_SKIP() << "fashion-mnist not installed";
  ASSERT_TRUE(ds.ok()) << ds.status();
  CheckBoundAcrossBits(*ds, 10000, 40);
}

}  // namespace
}  // namespace shoal::index

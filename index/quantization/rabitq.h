// RaBitQ codes for posting entries: each vector x is stored as a B-bit-per-dimension code of its
// residual to the posting centroid c, plus three correction factors, and a query scores a code
// with an integer fast-scan kernel (32 codes at a time through in-register lookup tables:
// AVX-512BW, AVX2 or scalar vpshufb-style; chosen at run time from base::Cpu(), SHOAL_CPU caps it).
// Every kernel level gives bit-identical estimates: the scan kernels compute an exact integer dot
// product, and the float kernels after it (query quantization, the estimate and its bound) do
// the same operations in the same order at every level.
//
//   RaBitQ rq(/*dim=*/128, /*bits=*/1, /*seed=*/42);
//   std::vector<uint8_t> codes(n * rq.code_bytes());
//   for (size_t i = 0; i < n; ++i) rq.Encode(x[i], centroid, &codes[i * rq.code_bytes()]);
//   RaBitQ::Query q;
//   rq.PrepareQuery(query, centroid, &q);            // once per (query, posting)
//   std::vector<uint8_t> packed(rq.PackedBytes(n));  // the fast-scan form, kept in RAM
//   rq.Pack(codes.data(), n, packed.data());
//   std::vector<RaBitQ::Estimate> est(n);
//   rq.EstimatePacked(q, packed.data(), n, est.data());
//   // est[i].distance - est[i].error <= |query - x[i]|^2 <= est[i].distance + est[i].error
//   // holds with the confidence of eps0 (see below); fetch x[i] only when its lower bound can
//   // still beat the current k-th distance.
//
// ---- What is implemented (Gao & Long, SIGMOD'24; Gao et al., Extended RaBitQ, SIGMOD'25) ----
// Rotation P: RandomRotation below (D = dim padded to a multiple of 64). For x, c, q:
//   r = x - c, o = P r / |r| (unit, D dims);  q' = P (q - c) / |q - c| (unit).
// Code (B bits): integers u_i in [0, 2^B), the grid point y_i = u_i - (2^B - 1)/2 (odd
//   half-integers, so B = 1 is the sign code of plain RaBitQ), o_bar = y / |y|. B = 1: u_i =
//   [o_i >= 0]. B >= 2 (Extended RaBitQ): u_i = the sign bit plus B-1 magnitude bits, y = the
//   grid point nearest to t * o (same signs as o) for the scale t that maximises <o_bar, o>,
//   found by a coarse-to-fine search over t (the paper enumerates t exactly; a near-optimal t
//   only costs accuracy, the bound below holds for whatever code is stored, since it is stated
//   in terms of that code's own <o_bar, o>).
// Estimator (both papers): <o, q'> ~= <o_bar, q'> / <o_bar, o>, unbiased, and
//   |x - q|^2 ~= |r|^2 + |q - c|^2 - 2 |r| |q - c| <o_bar, q'> / <o_bar, o>.
// Bound (RaBitQ Theorem 3.2, which Extended RaBitQ reuses for its codes): with probability about
//   1 - 2 exp(-c0 eps0^2),
//   |<o_bar, q'>/<o_bar, o> - <o, q'>| <= sqrt(1 - <o_bar, o>^2) / <o_bar, o> * eps0 / sqrt(D - 1)
//   with eps0 = 1.9 (kDefaultEps0, configurable) and D the padded (rotated) dimension: the error
//   term is sqrt(1-<o_bar,o>^2)/<o_bar,o> * sqrt(1-<o,q'>^2) * <e1, e2>, <e1, e2> a coordinate of
//   a uniform unit vector in R^(D-1) (~N(0, 1/(D-1))), so the confidence is ~P(|N(0,1)| <= eps0):
//   94.3% at 1.9, 99.9% at 3.3 (see kEps0For999). Extra bits tighten it only through
//   <o_bar, o>: measured sqrt(1 - a^2)/a ~ 0.75, 0.40, 0.10, 0.006 at B = 1, 2, 4, 8.
// Query quantization: q' is scalar-quantized to B_q bits per dimension, B_q = B + 3 (4 for
//   plain RaBitQ, as in the paper) but at most 6 while B <= 5, so that the lookup tables are one
//   6-bit group and every block is scanned once (with B_q = 7 or 8 at B = 4 or 5 each block was
//   scanned twice and two tables built per posting; the coarser query widens the bound by a few
//   percent there, |e|^2 below): q_bar_i = lower + delta * qu_i, qu_i = round((q'_i -
//   lower)/delta), and the estimator uses q_bar. Its error e = q_bar - q' is known exactly at
//   PrepareQuery; <o_bar, e> is a second zero-mean term of scale |e|/sqrt(D), independent of the
//   first, so the two add in quadrature. The bound reported is therefore
//   error = 2 |r| |q - c| * eps0 / sqrt(D - 1) * sqrt(1 - <o_bar, o>^2 + |e|^2) / <o_bar, o>
//   + 1e-5 (|r|^2 + |q - c|^2), an allowance for float rounding (rotation, factors)
//   (|e|^2 ~ D delta^2 / 12: ~0.01 at B = 1, D = 128, i.e. a ~1.6% wider bound than the paper's).
//   rabitq_test checks on Fashion-MNIST and synthetic data, for B = 1, 2, 4, 8, that >= 99.9% of
//   (query, vector) pairs fall inside it at kEps0For999 and ~94% at the default eps0.
//
// Code layout (code_bytes() = B * D / 8 + 16): B bit planes of D bits as little-endian uint64
// words, most significant plane (the signs) first; then four floats: |r|, |r| / <y, o>,
// |r|^2 (1 - <o_bar,o>^2) / <o_bar,o>^2 and sum(u_i). |x|^2 is not stored: the index only needs
// it for inner-product collections, which it normalises to unit vectors (|x|^2 = 1).
//
// Thread safety: RandomRotation and RaBitQ are immutable after construction; all const methods
// may be called concurrently. A Query is written by PrepareQuery and then only read.
#ifndef SHOAL_INDEX_QUANTIZATION_RABITQ_H_
#define SHOAL_INDEX_QUANTIZATION_RABITQ_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/aligned_vector.h"

namespace shoal::index {

namespace internal {
enum class KernelLevelId;
struct RabitqFinishConstants;
}  // namespace internal

// A seeded randomized Hadamard rotation of R^dim. D = padded_dim() = dim rounded up to a
// multiple of 64; L = the largest power of two <= D. Apply zero-pads x to D and then runs 3
// rounds of: flip the signs of a random subset of the D coordinates, an orthonormal fast
// Walsh-Hadamard transform (H_L / sqrt(L)) on coordinates [0, L), and, when D > L, another on
// [D - L, D) (the two blocks overlap since L > D/2, so every coordinate is mixed). Each step is
// orthogonal, so the whole map is orthonormal; cost O(D log D). Immutable; thread-safe.
class RandomRotation {
 public:
  // dim >= 1. The signs come from std::mt19937_64(seed): the same (dim, seed) gives the same
  // rotation on every machine.
  RandomRotation(size_t dim, uint64_t seed);

  size_t dim() const { return dim_; }
  size_t padded_dim() const { return padded_dim_; }
  uint64_t seed() const { return seed_; }

  // x has dim() floats, out has padded_dim() floats; x == out (in place) is allowed.
  void Apply(const float* x, float* out) const;

  // 28 bytes: magic, version, dim, seed, CRC-32C. Deserialize returns DataLoss (naming `where`)
  // for a wrong size, magic, version, checksum or an impossible dim.
  std::string Serialize() const;
  static absl::StatusOr<RandomRotation> Deserialize(std::string_view bytes,
                                                    const std::string& where);

 private:
  void Round(const float* signs, float* v) const;

  size_t dim_;
  size_t padded_dim_;
  size_t block_;  // L
  uint64_t seed_;
  std::vector<float> signs_;  // 3 rounds x padded_dim_ of +-1
};

// RaBitQ with `bits` bits per dimension (1 = plain RaBitQ; 2..8 = Extended RaBitQ): squared-L2
// estimates with an error bound, for vectors encoded relative to a centroid (see the top of
// this file for the exact estimator and bound).
class RaBitQ {
 public:
  // eps0 = 1.9 is the papers' choice: a ~94% bound (P(|N(0,1)| <= 1.9) = 0.943; measured
  // 94.5-95.5% of pairs on Fashion-MNIST and synthetic data). kEps0For999 bounds >= 99.9% of
  // pairs (nominal 99.95%; at 3.3 (nominal 99.90%) 99.93-99.97% measured; rabitq_test measures it
  // on both data sets at 1, 2, 4, 8 bits).
  static constexpr float kDefaultEps0 = 1.9f;
  static constexpr float kEps0For999 = 3.5f;
  // The bound's nominal confidence for eps0: P(|N(0,1)| <= eps0) = erf(eps0 / sqrt(2)).
  static double NominalConfidence(float eps0);
  static constexpr uint32_t kMaxBits = 8;

  // Preconditions: dim >= 1, 1 <= bits <= 8, eps0 > 0 (Create checks them and returns
  // InvalidArgument; the constructor aborts on a violation).
  RaBitQ(size_t dim, uint32_t bits, uint64_t seed, float eps0 = kDefaultEps0);
  static absl::StatusOr<RaBitQ> Create(size_t dim, uint32_t bits, uint64_t seed,
                                       float eps0 = kDefaultEps0);

  size_t dim() const { return rotation_.dim(); }
  size_t padded_dim() const { return rotation_.padded_dim(); }
  uint32_t bits() const { return bits_; }
  // Bits per dimension of the quantized query: bits() + 3, capped at 6 for bits() <= 5 (one
  // lookup-table group; see the top of this file).
  uint32_t query_bits() const { return QueryBitsFor(bits_); }
  static constexpr uint32_t QueryBitsFor(uint32_t bits) {
    return bits <= kOneGroupMaxBits ? std::min(bits + 3, 6u) : bits + 3;
  }
  // The most code bits whose query fits one 6-bit lookup-table group.
  static constexpr uint32_t kOneGroupMaxBits = 5;
  float eps0() const { return eps0_; }
  // Bytes of one encoded vector including its factors: bits() * padded_dim() / 8 + 16.
  size_t code_bytes() const { return code_bytes_; }
  const RandomRotation& rotation() const { return rotation_; }

  // Encodes x relative to centroid c (both dim() floats) into code_bytes() bytes at `code`.
  // x == c gives a code whose estimate is |q - c|^2 with only the rounding allowance as error.
  void Encode(const float* x, const float* centroid, uint8_t* code) const;

  // Per (query, centroid) preparation, reusable for every code of one posting.
  struct Query {
    base::AlignedVector<float> rotated;  // q' = P (q - c) / |q - c|, padded_dim() floats
    float residual_norm = 0;             // |q - c|
    double lower = 0;                    // q_bar_i = lower + delta * qu_i
    double delta = 0;
    double sum_q_bar = 0;              // sum_i q_bar_i
    double error_sq = 0;               // |q_bar - q'|^2
    uint32_t query_bits = 0;           // B_q
    base::AlignedVector<uint16_t> qu;  // the quantized query: padded_dim() levels in [0, 2^B_q)
    // Fast-scan lookup tables, lut_groups() x padded_dim()/4 x 16 bytes: qu split into 6-bit
    // groups (group g = bits 6g..6g+5 of each level), and for each group of 4 dimensions j and
    // each 4-bit pattern e, the sum of that group's values over the dimensions whose bit is set
    // in e (at most 4 * 63 = 252, one byte).
    // All three are 64-byte aligned: the AVX-512 kernels load and store whole lines of them.
    base::AlignedVector<uint8_t> luts;
  };
  void PrepareQuery(const float* q, const float* centroid, Query* out) const;
  // The same from the rotated query P q and rotated centroid P c (padded_dim() floats each,
  // rotation().Apply): P (q - c) = P q - P c, so a caller that rotates each centroid once and
  // each query once saves a rotation per (query, posting).
  void PrepareRotated(const float* rotated_q, const float* rotated_c, Query* out) const;
  // 6-bit groups the quantized query is split into for the lookup tables.
  size_t lut_groups() const { return (query_bits() + 5) / 6; }

  // Estimated |q - x|^2 and its bound: |distance - exact| <= error with the confidence of eps0.
  struct Estimate {
    float distance;
    float error;
  };
  // One code, through the plain scalar reference (the dot product straight from the bits).
  Estimate EstimateOne(const Query& q, const uint8_t* code) const;
  // n codes at codes + i * code_bytes(): packs them (below) and scans them. Identical results
  // to EstimateOne on every kernel level.
  void EstimateBatch(const Query& q, const uint8_t* codes, size_t n, Estimate* out) const;

  // ---- Fast-scan form (in RAM; postings on disk keep the code layout above) ----
  // n codes regrouped in blocks of kScanBlock: per block, for each bit plane and each group j of
  // 4 dimensions (padded_dim()/4 per plane), 16 bytes whose byte i holds the 4 bits of code i in
  // its low nibble and those of code i + 16 in its high nibble; then the block's factors as four
  // arrays of 32 floats. Codes past n in the last block are zero. A kernel scores a block with
  // one byte shuffle per 4 dimensions and 32 codes (the lookup tables of Query::luts), instead
  // of one popcount per 64 dimensions, query bit and code.
  static constexpr size_t kScanBlock = 32;
  size_t PackedBytes(size_t n) const;
  void Pack(const uint8_t* codes, size_t n, uint8_t* packed) const;
  void Unpack(const uint8_t* packed, size_t n, uint8_t* codes) const;
  // One entry of a packed array, for arrays that change an entry at a time (the semantic
  // cache's lists): PackAt writes `code` into slot i of `packed` (which holds at least
  // PackedBytes(i + 1) bytes), replacing what the slot held and leaving every other slot as it
  // was; UnpackAt reads slot i back into code_bytes() bytes. A slot never written reads back as
  // an all-zero code.
  void PackAt(const uint8_t* code, size_t i, uint8_t* packed) const;
  void UnpackAt(const uint8_t* packed, size_t i, uint8_t* code) const;
  // The hot loop, through the best kernel for this CPU; identical results on every level.
  void EstimatePacked(const Query& q, const uint8_t* packed, size_t n, Estimate* out) const;
  // The same estimates as each code's interval: lower[i] = distance - error and upper[i] =
  // distance + error (float), written as each block is finished instead of through Estimates.
  void EstimatePackedBounds(const Query& q, const uint8_t* packed, size_t n, float* lower,
                            float* upper) const;

  // 48 bytes: magic, version, bits, eps0, the rotation's 28 bytes, CRC-32C; Deserialize returns
  // DataLoss (naming `where`) for anything malformed.
  std::string Serialize() const;
  static absl::StatusOr<RaBitQ> Deserialize(std::string_view bytes, const std::string& where);

 private:
  friend void EstimatePackedAtLevel(const RaBitQ& rq, internal::KernelLevelId level, const Query& q,
                                    const uint8_t* packed, size_t n, Estimate* out);
  size_t block_bytes() const { return bits_ * padded_dim() * 4 + kScanBlock * 4 * sizeof(float); }

  // Per-query constants of the float part (internal::RabitqFinishConstants), so that finishing
  // an estimate is a few multiplies and one sqrt.
  internal::RabitqFinishConstants Constants(const Query& q) const;
  void EstimatePackedWith(internal::KernelLevelId level, const Query& q, const uint8_t* packed,
                          size_t n, Estimate* out) const;
  // The scan behind both: emit(start, m, distance, error) for each block of m codes from start.
  template <typename Emit>
  void ScanPacked(internal::KernelLevelId level, const Query& q, const uint8_t* packed, size_t n,
                  Emit&& emit) const;
  void PrepareResidual(const float* a, const float* b, Query* out) const;
  // Chooses the Extended RaBitQ grid point for the unit vector o; writes u, returns <y, o>/|y|.
  double QuantizeUnit(const float* o, uint8_t* u) const;

  RandomRotation rotation_;
  uint32_t bits_;
  float eps0_;
  size_t code_bytes_;
};

// Test hook: EstimatePacked through a specific kernel level (which must be supported, see
// rabitq_internal.h).
void EstimatePackedAtLevel(const RaBitQ& rq, internal::KernelLevelId level, const RaBitQ::Query& q,
                           const uint8_t* packed, size_t n, RaBitQ::Estimate* out);

}  // namespace shoal::index

#endif  // SHOAL_INDEX_QUANTIZATION_RABITQ_H_

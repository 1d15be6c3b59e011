// RandomRotation, RaBitQ encoding, query preparation and the float half of the estimator (the
// fast-scan packing is in rabitq_pack.cc). The integer half (the lookup-table dot product) lives in
// rabitq_kernels_*.cc; everything after it is RaBitQ::Finish, shared by every kernel level so their
// estimates are bit-identical.
#include "index/quantization/rabitq.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/cpu_features.h"
#include "index/quantization/rabitq_internal.h"
#include "storage/io/crc32c.h"

namespace shoal::index {
namespace {

constexpr uint32_t kRotationMagic = 0x54525253;  // "SRRT"
constexpr uint32_t kRaBitQMagic = 0x51425253;    // "SRBQ"
constexpr uint32_t kVersion = 1;
constexpr size_t kRotationBytes = 28;
constexpr size_t kRaBitQBytes = 48;
constexpr size_t kMaxDim = size_t{1} << 20;
constexpr int kRounds = 3;

size_t PadTo64(size_t dim) { return (dim + 63) / 64 * 64; }

// Orthonormal in-place Walsh-Hadamard transform of n (a power of two, >= 64) floats.
void Fht(float* v, size_t n) {
  static const bool avx512 = internal::RabitqActiveLevel() == internal::KernelLevelId::kAvx512;
  if (avx512) {
    internal::RabitqFhtAvx512(v, n);
  } else {
    internal::RabitqFhtPortable(v, n);
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(n));
  for (size_t i = 0; i < n; ++i) v[i] *= scale;
}

template <typename T>
void Put(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(T));
}

template <typename T>
T Get(std::string_view bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

absl::Status CheckFramed(std::string_view bytes, size_t size, uint32_t magic,
                         const std::string& where, const char* what) {
  if (bytes.size() != size) {
    return absl::DataLossError(
        absl::StrCat(where, ": ", what, " is ", bytes.size(), " bytes, expected ", size));
  }
  const uint32_t crc = Get<uint32_t>(bytes, size - 4);
  if (crc != storage::Crc32c(bytes.data(), size - 4)) {
    return absl::DataLossError(absl::StrCat(where, ": ", what, " checksum mismatch"));
  }
  if (Get<uint32_t>(bytes, 0) != magic || Get<uint32_t>(bytes, 4) != kVersion) {
    return absl::DataLossError(absl::StrCat(where, ": ", what, " has a bad magic or version"));
  }
  return absl::OkStatus();
}

void AppendCrc(std::string* out) { Put<uint32_t>(out, storage::Crc32c(out->data(), out->size())); }

}  // namespace

// ---- RandomRotation ----

RandomRotation::RandomRotation(size_t dim, uint64_t seed)
    : dim_(dim), padded_dim_(PadTo64(std::max<size_t>(dim, 1))), block_(1), seed_(seed) {
  while (block_ * 2 <= padded_dim_) block_ *= 2;
  std::mt19937_64 rng(seed);
  signs_.resize(kRounds * padded_dim_);
  uint64_t word = 0;
  for (size_t i = 0; i < signs_.size(); ++i) {
    if (i % 64 == 0) word = rng();
    signs_[i] = (word >> (i % 64)) & 1 ? -1.0f : 1.0f;
  }
}

void RandomRotation::Round(const float* signs, float* v) const {
  for (size_t i = 0; i < padded_dim_; ++i) v[i] *= signs[i];
  Fht(v, block_);
  if (padded_dim_ > block_) Fht(v + padded_dim_ - block_, block_);
}

void RandomRotation::Apply(const float* x, float* out) const {
  if (x != out) std::copy(x, x + dim_, out);
  std::fill(out + dim_, out + padded_dim_, 0.0f);
  for (int r = 0; r < kRounds; ++r) Round(signs_.data() + r * padded_dim_, out);
}

std::string RandomRotation::Serialize() const {
  std::string out;
  Put<uint32_t>(&out, kRotationMagic);
  Put<uint32_t>(&out, kVersion);
  Put<uint64_t>(&out, dim_);
  Put<uint64_t>(&out, seed_);
  AppendCrc(&out);
  return out;
}

absl::StatusOr<RandomRotation> RandomRotation::Deserialize(std::string_view bytes,
                                                           const std::string& where) {
  absl::Status s = CheckFramed(bytes, kRotationBytes, kRotationMagic, where, "rotation");
  if (!s.ok()) return s;
  const uint64_t dim = Get<uint64_t>(bytes, 8);
  if (dim == 0 || dim > kMaxDim) {
    return absl::DataLossError(absl::StrCat(where, ": rotation dim ", dim, " out of range"));
  }
  return RandomRotation(dim, Get<uint64_t>(bytes, 16));
}

// ---- RaBitQ ----

RaBitQ::RaBitQ(size_t dim, uint32_t bits, uint64_t seed, float eps0)
    : rotation_(dim, seed), bits_(bits), eps0_(eps0) {
  if (dim == 0 || dim > kMaxDim || bits < 1 || bits > kMaxBits || !(eps0 > 0)) {
    std::fprintf(stderr, "RaBitQ: invalid dim %zu / bits %u / eps0 %g\n", dim, bits, eps0);
    std::abort();
  }
  code_bytes_ = bits_ * padded_dim() / 8 + internal::kRabitqFactorBytes;
}

double RaBitQ::NominalConfidence(float eps0) { return std::erf(eps0 / std::sqrt(2.0)); }

absl::StatusOr<RaBitQ> RaBitQ::Create(size_t dim, uint32_t bits, uint64_t seed, float eps0) {
  if (dim == 0 || dim > kMaxDim) {
    return absl::InvalidArgumentError(absl::StrCat("RaBitQ dim ", dim, " not in [1, 2^20]"));
  }
  if (bits < 1 || bits > kMaxBits) {
    return absl::InvalidArgumentError(absl::StrCat("RaBitQ bits ", bits, " not in [1, 8]"));
  }
  if (!(eps0 > 0)) return absl::InvalidArgumentError("RaBitQ eps0 must be > 0");
  return RaBitQ(dim, bits, seed, eps0);
}

// Extended RaBitQ: y = sign(o) (k + 1/2) with k_i = min(half - 1, floor(t |o_i|)) (the
// half-integer nearest t |o_i|); pick t maximising <y, o> / |y|. t below 1/max|o_i| gives the
// sign code; search t on a log grid up to 4 * half / max|o_i|, then finely around the best.
double RaBitQ::QuantizeUnit(const float* o, uint8_t* u) const {
  const size_t d = padded_dim();
  const uint32_t half = 1u << (bits_ - 1);
  thread_local std::vector<float> abs_o;
  abs_o.resize(d);
  float max_abs = 0;
  for (size_t i = 0; i < d; ++i) {
    abs_o[i] = std::fabs(o[i]);
    max_abs = std::max(max_abs, abs_o[i]);
  }
  double best_t = 0;
  if (bits_ > 1 && max_abs > 0) {
    // <y, o> / |y| for the grid point of scale t: in float over 16 independent lanes, so that
    // the compiler vectorises it (t * a >= 0, so truncation is floor). Only the choice of t
    // depends on this; the stored factors are recomputed exactly below.
    const float top = static_cast<float>(half - 1);
    auto score = [&](double t) {
      constexpr size_t kLanes = 16;
      float dot[kLanes] = {}, sq[kLanes] = {};
      const float tf = static_cast<float>(t);
      for (size_t i = 0; i < d; i += kLanes) {  // d is a multiple of 64
        for (size_t l = 0; l < kLanes; ++l) {
          const float a = abs_o[i + l];
          const float k = std::min(top, static_cast<float>(static_cast<int32_t>(tf * a))) + 0.5f;
          dot[l] += a * k;
          sq[l] += k * k;
        }
      }
      double dot_sum = 0, sq_sum = 0;
      for (size_t l = 0; l < kLanes; ++l) dot_sum += dot[l], sq_sum += sq[l];
      return dot_sum / std::sqrt(sq_sum);
    };
    constexpr int kSteps = 40;
    const double lo = 1.0 / max_abs;
    const double ratio = std::pow(4.0 * half, 1.0 / kSteps);
    double best = -1;
    for (int s = 0; s <= kSteps; ++s) {
      const double t = lo * std::pow(ratio, s);
      const double f = score(t);
      if (f > best) best = f, best_t = t;
    }
    const double a = best_t / ratio;
    const double b = best_t * ratio;
    for (int s = 0; s <= kSteps; ++s) {
      const double t = a + (b - a) * s / kSteps;
      const double f = score(t);
      if (f > best) best = f, best_t = t;
    }
  }
  double dot = 0, sq = 0;
  for (size_t i = 0; i < d; ++i) {
    const double a = abs_o[i];
    const uint32_t k = static_cast<uint32_t>(std::min<double>(half - 1, std::floor(best_t * a)));
    u[i] = static_cast<uint8_t>(o[i] >= 0 ? half + k : half - 1 - k);
    dot += a * (k + 0.5);
    sq += (k + 0.5) * (k + 0.5);
  }
  return dot / std::sqrt(sq);  // <o_bar, o>
}

void RaBitQ::Encode(const float* x, const float* centroid, uint8_t* code) const {
  const size_t d = padded_dim();
  std::vector<float> o(d);
  std::vector<uint8_t> u(d);
  double norm_sq = 0;
  for (size_t i = 0; i < dim(); ++i) {
    o[i] = x[i] - centroid[i];
    norm_sq += double{o[i]} * o[i];
  }
  rotation_.Apply(o.data(), o.data());
  const double norm = std::sqrt(norm_sq);
  double a = 1, y_dot_o = 1;
  if (norm > 0) {
    for (size_t i = 0; i < d; ++i) o[i] = static_cast<float>(o[i] / norm);
    a = QuantizeUnit(o.data(), u.data());
    double y_sq = 0;
    for (size_t i = 0; i < d; ++i) {
      const double y = u[i] - ((1u << bits_) - 1) / 2.0;
      y_sq += y * y;
    }
    y_dot_o = a * std::sqrt(y_sq);
  } else {
    std::fill(u.begin(), u.end(), static_cast<uint8_t>(1u << (bits_ - 1)));
  }
  const size_t words = d / 64;
  for (uint32_t p = 0; p < bits_; ++p) {
    const uint32_t bit = bits_ - 1 - p;
    for (size_t w = 0; w < words; ++w) {
      uint64_t word = 0;
      for (size_t b = 0; b < 64; ++b) word |= uint64_t{(u[w * 64 + b] >> bit) & 1u} << b;
      std::memcpy(code + (p * words + w) * 8, &word, 8);
    }
  }
  double sum_u = 0;
  for (size_t i = 0; i < d; ++i) sum_u += u[i];
  const float factors[4] = {static_cast<float>(norm), static_cast<float>(norm / y_dot_o),
                            // max(0, ..): float rounding can put a a hair above 1.
                            static_cast<float>(norm_sq * std::max(0.0, 1 - a * a) / (a * a)),
                            static_cast<float>(sum_u)};
  std::memcpy(code + bits_ * words * 8, factors, sizeof(factors));
}

void RaBitQ::PrepareQuery(const float* q, const float* centroid, Query* out) const {
  out->rotated.resize(padded_dim());
  for (size_t i = 0; i < dim(); ++i) out->rotated[i] = q[i] - centroid[i];
  rotation_.Apply(out->rotated.data(), out->rotated.data());
  PrepareResidual(out->rotated.data(), nullptr, out);
}

void RaBitQ::PrepareRotated(const float* rotated_q, const float* rotated_c, Query* out) const {
  out->rotated.resize(padded_dim());
  PrepareResidual(rotated_q, rotated_c, out);
}

// P (q - c) = a - b (or a); normalises it into out->rotated, quantizes it to B_q bits and builds
// the lookup tables. The float sums run in 16 lanes; the results only scale the estimate and size
// the bound, whose rounding allowance covers float sums of this length.
void RaBitQ::PrepareResidual(const float* a, const float* b, Query* out) const {
  const size_t d = padded_dim();
  out->query_bits = query_bits();
  out->qu.resize(d);
  static const internal::RabitqQuantizeFn quantize_fn =
      internal::RabitqQuantizeFor(internal::RabitqActiveLevel());
  const size_t table_bytes = d / 4 * 16;
  out->luts.resize(lut_groups() * table_bytes);
  // One 6-bit group (B <= 3): the tables are written as the levels are cut.
  const bool fused = lut_groups() == 1;
  internal::RabitqQuantized r;
  quantize_fn(a, b, d, (1u << out->query_bits) - 1, out->rotated.data(), out->qu.data(),
              fused ? out->luts.data() : nullptr, &r);
  out->residual_norm = static_cast<float>(r.norm);
  out->lower = r.lo;
  out->delta = r.delta;  // the float step the levels were cut with
  out->sum_q_bar = out->lower * static_cast<double>(d) + out->delta * static_cast<double>(r.sum_qu);
  out->error_sq = r.error_sq;
  if (fused) return;
  static const internal::RabitqLutFn lut_fn = internal::RabitqLutFor(internal::RabitqActiveLevel());
  for (size_t g = 0; g < lut_groups(); ++g) {
    lut_fn(out->qu.data(), d, static_cast<uint32_t>(6 * g), out->luts.data() + g * table_bytes);
  }
}

internal::RabitqFinishConstants RaBitQ::Constants(const Query& q) const {
  const double qn = q.residual_norm;
  internal::RabitqFinishConstants k;
  k.delta = q.delta;
  k.lower = q.lower;
  k.offset = ((1u << bits_) - 1) / 2.0 * q.sum_q_bar;
  k.qn_sq = qn * qn;
  k.two_qn = 2 * qn;
  k.error_coef = 2 * qn * eps0_ / std::sqrt(padded_dim() - 1.0);
  k.error_sq = q.error_sq;
  return k;
}

RaBitQ::Estimate RaBitQ::EstimateOne(const Query& q, const uint8_t* code) const {
  const size_t d = padded_dim();
  const size_t words = d / 64;
  uint64_t dot = 0;
  for (size_t p = 0; p < bits_; ++p) {
    for (size_t i = 0; i < d; ++i) {
      uint64_t word;
      std::memcpy(&word, code + (p * words + i / 64) * 8, 8);
      if ((word >> (i % 64)) & 1) dot += uint64_t{q.qu[i]} << (bits_ - 1 - p);
    }
  }
  float f[4];
  std::memcpy(f, code + code_bytes_ - internal::kRabitqFactorBytes, sizeof(f));
  // Through the block routine, as the first of a block of one.
  float factors[4 * kScanBlock] = {};
  for (size_t t = 0; t < 4; ++t) factors[t * kScanBlock] = f[t];
  double dots[kScanBlock] = {static_cast<double>(dot)};
  float distance[kScanBlock], error[kScanBlock];
  internal::RabitqFinishScalar(Constants(q), factors, dots, 1, distance, error);
  return {distance[0], error[0]};
}

template <typename Emit>
void RaBitQ::ScanPacked(internal::KernelLevelId level, const Query& q, const uint8_t* packed,
                        size_t n, Emit&& emit) const {
  const internal::RabitqScanFn scan = internal::RabitqScanFor(level);
  const internal::RabitqFinishFn finish = internal::RabitqFinishFor(level);
  const size_t positions = padded_dim() / 4;
  const size_t groups = lut_groups();
  const internal::RabitqFinishConstants k = Constants(q);
  uint32_t sums[kScanBlock];  // one group's dot products, the planes weighted by the kernel
  // Exact integer dot products held in doubles (they stay far below 2^53), so that the float
  // part below is one loop the compiler vectorises.
  double dots[kScanBlock];
  float distance[kScanBlock], error[kScanBlock];
  for (size_t start = 0; start < n; start += kScanBlock) {
    const uint8_t* block = packed + start / kScanBlock * block_bytes();
    const size_t m = std::min(kScanBlock, n - start);
    if (groups == 1) {  // one 6-bit group: the sums are the dot products
      scan(q.luts.data(), positions, block, bits_, m, sums);
      for (size_t i = 0; i < kScanBlock; ++i) dots[i] = static_cast<double>(sums[i]);
    } else {
      std::fill(dots, dots + kScanBlock, 0.0);
      for (size_t g = 0; g < groups; ++g) {
        scan(q.luts.data() + g * positions * 16, positions, block, bits_, m, sums);
        const double weight = static_cast<double>(uint64_t{1} << (6 * g));  // group g's bits
        for (size_t i = 0; i < kScanBlock; ++i) dots[i] += static_cast<double>(sums[i]) * weight;
      }
    }
    const float* f = reinterpret_cast<const float*>(block + bits_ * positions * 16);
    finish(k, f, dots, m, distance, error);
    emit(start, m, distance, error);
  }
}

void RaBitQ::EstimatePackedWith(internal::KernelLevelId level, const Query& q,
                                const uint8_t* packed, size_t n, Estimate* out) const {
  ScanPacked(level, q, packed, n,
             [out](size_t start, size_t m, const float* distance, const float* error) {
               for (size_t i = 0; i < m; ++i) out[start + i] = {distance[i], error[i]};
             });
}

void RaBitQ::EstimatePacked(const Query& q, const uint8_t* packed, size_t n, Estimate* out) const {
  EstimatePackedWith(internal::RabitqActiveLevel(), q, packed, n, out);
}

void RaBitQ::EstimatePackedBounds(const Query& q, const uint8_t* packed, size_t n, float* lower,
                                  float* upper) const {
  ScanPacked(internal::RabitqActiveLevel(), q, packed, n,
             [lower, upper](size_t start, size_t m, const float* distance, const float* error) {
               for (size_t i = 0; i < m; ++i) {
                 lower[start + i] = distance[i] - error[i];
                 upper[start + i] = distance[i] + error[i];
               }
             });
}

void RaBitQ::EstimateBatch(const Query& q, const uint8_t* codes, size_t n, Estimate* out) const {
  thread_local std::vector<uint8_t> packed;
  packed.resize(PackedBytes(n));
  Pack(codes, n, packed.data());
  EstimatePacked(q, packed.data(), n, out);
}

void EstimatePackedAtLevel(const RaBitQ& rq, internal::KernelLevelId level, const RaBitQ::Query& q,
                           const uint8_t* packed, size_t n, RaBitQ::Estimate* out) {
  rq.EstimatePackedWith(level, q, packed, n, out);
}

std::string RaBitQ::Serialize() const {
  std::string out;
  Put<uint32_t>(&out, kRaBitQMagic);
  Put<uint32_t>(&out, kVersion);
  Put<uint32_t>(&out, bits_);
  Put<float>(&out, eps0_);
  out += rotation_.Serialize();
  AppendCrc(&out);
  return out;
}

absl::StatusOr<RaBitQ> RaBitQ::Deserialize(std::string_view bytes, const std::string& where) {
  absl::Status s = CheckFramed(bytes, kRaBitQBytes, kRaBitQMagic, where, "RaBitQ");
  if (!s.ok()) return s;
  absl::StatusOr<RandomRotation> rotation =
      RandomRotation::Deserialize(bytes.substr(16, kRotationBytes), where);
  if (!rotation.ok()) return rotation.status();
  const uint32_t bits = Get<uint32_t>(bytes, 8);
  const float eps0 = Get<float>(bytes, 12);
  absl::StatusOr<RaBitQ> rq = Create(rotation->dim(), bits, rotation->seed(), eps0);
  if (!rq.ok()) return absl::DataLossError(absl::StrCat(where, ": ", rq.status().message()));
  return rq;
}

}  // namespace shoal::index

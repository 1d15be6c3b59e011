// RandomRotation, RaBitQ encoding, query preparation and the float half of the estimator. The
// integer half (the popcount dot product) lives in rabitq_kernels_*.cc; everything after it is
// RaBitQ::Finish, shared by every kernel level so their estimates are bit-identical.
#include "index/rabitq.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/cpu_features.h"
#include "index/rabitq_internal.h"
#include "storage/crc32c.h"

namespace shoal::index {
namespace {

constexpr uint32_t kRotationMagic = 0x54525253;  // "SRRT"
constexpr uint32_t kRaBitQMagic = 0x51425253;    // "SRBQ"
constexpr uint32_t kVersion = 1;
constexpr size_t kRotationBytes = 28;
constexpr size_t kRaBitQBytes = 48;
constexpr size_t kMaxDim = size_t{1} << 20;
constexpr int kRounds = 3;
constexpr size_t kFactorBytes = 4 * sizeof(float);
constexpr double kRoundingSlack = 1e-5;

size_t PadTo64(size_t dim) { return (dim + 63) / 64 * 64; }

// Orthonormal in-place Walsh-Hadamard transform of n (a power of two) floats.
void Fht(float* v, size_t n) {
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
  code_bytes_ = bits_ * padded_dim() / 8 + kFactorBytes;
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
  PrepareResidual(out);
}

void RaBitQ::PrepareRotated(const float* rotated_q, const float* rotated_c, Query* out) const {
  out->rotated.resize(padded_dim());
  for (size_t i = 0; i < padded_dim(); ++i) out->rotated[i] = rotated_q[i] - rotated_c[i];
  PrepareResidual(out);
}

// out->rotated holds P (q - c); normalises it, quantizes it to B_q bits and lays out the planes.
void RaBitQ::PrepareResidual(Query* out) const {
  const size_t d = padded_dim();
  const size_t words = d / 64;
  const size_t code_words = bits_ * words;
  out->query_bits = query_bits();
  float* r = out->rotated.data();
  // Float sums in 16 independent lanes (vectorisable); the results only scale the estimate and
  // size the bound, whose rounding allowance covers float sums of this length.
  constexpr size_t kLanes = 16;
  float lane[kLanes] = {};
  for (size_t i = 0; i < d; i += kLanes) {  // d is a multiple of 64
    for (size_t l = 0; l < kLanes; ++l) lane[l] += r[i + l] * r[i + l];
  }
  double norm_sq = 0;
  for (float v : lane) norm_sq += v;
  const double norm = std::sqrt(norm_sq);
  out->residual_norm = static_cast<float>(norm);
  const float inv_norm = norm > 0 ? static_cast<float>(1 / norm) : 0.0f;
  float lo = r[0] * inv_norm, hi = lo;
  for (size_t i = 0; i < d; ++i) {
    r[i] *= inv_norm;
    lo = std::min(lo, r[i]);
    hi = std::max(hi, r[i]);
  }
  const uint32_t levels = (1u << out->query_bits) - 1;
  out->lower = lo;
  out->delta = (double{hi} - lo) / levels;
  const float delta = static_cast<float>(out->delta);
  const float inv_delta = delta > 0 ? 1 / delta : 0.0f;
  const float max_level = static_cast<float>(levels);
  out->qu.resize(d);
  float err_lane[kLanes] = {};
  uint32_t sum_lane[kLanes] = {};
  for (size_t i = 0; i < d; ++i) {
    const float level =
        std::min(std::max(std::nearbyint((r[i] - lo) * inv_delta), 0.0f), max_level);
    const auto u = static_cast<uint32_t>(level);
    out->qu[i] = static_cast<uint16_t>(u);
    sum_lane[i % kLanes] += u;
    const float e = lo + delta * level - r[i];
    err_lane[i % kLanes] += e * e;
  }
  uint64_t sum_qu = 0;
  double error_sq = 0;
  for (size_t l = 0; l < kLanes; ++l) {
    sum_qu += sum_lane[l];
    error_sq += err_lane[l];
  }
  out->delta = delta;  // the float step the levels were cut with
  out->sum_q_bar = out->lower * static_cast<double>(d) + out->delta * static_cast<double>(sum_qu);
  out->error_sq = error_sq;
  // Kernels read whole SIMD registers of query words: 8 words of slack after the last plane.
  out->planes.assign(out->query_bits * code_words + 8, 0);
  out->shifts.assign(out->query_bits * code_words + 8, 0);
  static const internal::RabitqPlanesFn planes_fn =
      internal::RabitqPlanesFor(internal::RabitqActiveLevel());
  planes_fn(out->qu.data(), d, out->query_bits, code_words, out->planes.data());
  for (uint32_t k = 0; k < out->query_bits; ++k) {
    // The plane once per code plane (see Query::planes).
    uint64_t* plane = &out->planes[k * code_words];
    for (size_t i = words; i < code_words; ++i) plane[i] = plane[i % words];
    for (size_t i = 0; i < code_words; ++i) {
      out->shifts[k * code_words + i] = (bits_ - 1 - i / words) + k;
    }
  }
}

RaBitQ::QueryConstants RaBitQ::Constants(const Query& q) const {
  const double qn = q.residual_norm;
  QueryConstants k;
  k.delta = q.delta;
  k.lower = q.lower;
  k.offset = ((1u << bits_) - 1) / 2.0 * q.sum_q_bar;
  k.qn_sq = qn * qn;
  k.two_qn = 2 * qn;
  k.error_coef = 2 * qn * eps0_ / std::sqrt(padded_dim() - 1.0);
  k.error_sq = q.error_sq;
  return k;
}

RaBitQ::Estimate RaBitQ::Finish(const QueryConstants& k, const uint8_t* code, uint64_t dot) const {
  float f[4];
  std::memcpy(f, code + code_bytes_ - kFactorBytes, sizeof(f));
  const double norm_sq = double{f[0]} * f[0];
  // <y, q_bar> = sum u_i q_bar_i - (2^B - 1)/2 sum q_bar_i.
  const double y_dot_q = k.delta * static_cast<double>(dot) + k.lower * f[3] - k.offset;
  const double distance = norm_sq + k.qn_sq - k.two_qn * f[1] * y_dot_q;
  const double spread = std::max(0.0, f[2] + (f[2] + norm_sq) * k.error_sq);
  // Plus a float-rounding allowance (the rotation and the factors are float): without it a vector
  // at its centroid, whose statistical error is 0, would be "outside" its bound by 1 ulp.
  const double error = k.error_coef * std::sqrt(spread) + kRoundingSlack * (norm_sq + k.qn_sq);
  return {static_cast<float>(distance), static_cast<float>(error)};
}

RaBitQ::Estimate RaBitQ::EstimateOne(const Query& q, const uint8_t* code) const {
  uint64_t dot = 0;
  const internal::RabitqDotArgs args = {q.planes.data(), q.shifts.data(), q.query_bits,
                                        bits_ * padded_dim() / 64, code_bytes_};
  internal::RabitqDotScalar(args, code, 1, &dot);
  return Finish(Constants(q), code, dot);
}

void RaBitQ::EstimateBatchWith(internal::KernelLevelId level, const Query& q, const uint8_t* codes,
                               size_t n, Estimate* out) const {
  const internal::RabitqDotFn fn = internal::RabitqDotFor(level);
  const internal::RabitqDotArgs args = {q.planes.data(), q.shifts.data(), q.query_bits,
                                        bits_ * padded_dim() / 64, code_bytes_};
  constexpr size_t kBlock = 128;
  uint64_t dots[kBlock];
  const QueryConstants k = Constants(q);
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t m = std::min(kBlock, n - start);
    const uint8_t* block = codes + start * code_bytes_;
    fn(args, block, m, dots);
    for (size_t i = 0; i < m; ++i) out[start + i] = Finish(k, block + i * code_bytes_, dots[i]);
  }
}

void RaBitQ::EstimateBatch(const Query& q, const uint8_t* codes, size_t n, Estimate* out) const {
  EstimateBatchWith(internal::RabitqActiveLevel(), q, codes, n, out);
}

void EstimateBatchAtLevel(const RaBitQ& rq, internal::KernelLevelId level, const RaBitQ::Query& q,
                          const uint8_t* codes, size_t n, RaBitQ::Estimate* out) {
  rq.EstimateBatchWith(level, q, codes, n, out);
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

// ---- Kernel dispatch ----

namespace internal {

bool RabitqLevelSupported(KernelLevelId level) {
  if (level == KernelLevelId::kAvx512 && !base::Cpu().avx512vpopcntdq) return false;
  return LevelSupported(level);
}

RabitqDotFn RabitqDotFor(KernelLevelId level) {
  switch (level) {
    case KernelLevelId::kAvx512:
      return RabitqDotAvx512;
    case KernelLevelId::kAvx2:
      return RabitqDotAvx2;
    case KernelLevelId::kScalar:
      break;
  }
  return RabitqDotScalar;
}

RabitqPlanesFn RabitqPlanesFor(KernelLevelId level) {
  return level == KernelLevelId::kAvx512 ? RabitqPlanesAvx512 : RabitqPlanesScalar;
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

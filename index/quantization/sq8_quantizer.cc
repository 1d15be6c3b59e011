#include "index/quantization/sq8_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/cpu_features.h"

namespace shoal::index {
namespace internal {
float Sq8WeightedL2Avx512(const float* qs, const float* step2, const uint8_t* code, size_t dim);
}  // namespace internal
namespace {

constexpr char kMagic[] = "shoal-sq8-v1";

// |q' - c|^2 in quantized units, weighted back by step^2: the squared distance from the
// (pre-shifted) query to the dequantized residual. Portable version.
float WeightedL2Portable(const float* qs, const float* step2, const uint8_t* code, size_t dim) {
  float acc = 0;
  for (size_t j = 0; j < dim; ++j) {
    const float diff = qs[j] - static_cast<float>(code[j]);
    acc += step2[j] * diff * diff;
  }
  return acc;
}

using WeightedL2Fn = float (*)(const float*, const float*, const uint8_t*, size_t);

WeightedL2Fn WeightedL2() {
  static const WeightedL2Fn fn =
      base::Cpu().avx512bw ? internal::Sq8WeightedL2Avx512 : WeightedL2Portable;
  return fn;
}

}  // namespace

Sq8Quantizer::Sq8Quantizer(size_t dim) : dim_(dim), min_(dim, 0.0f), step_(dim, 1.0f) {
  DeriveFromSteps();
}

void Sq8Quantizer::DeriveFromSteps() {
  inv_step_.resize(dim_);
  step_sq_.resize(dim_);
  for (size_t j = 0; j < dim_; ++j) {
    inv_step_[j] = 1.0f / step_[j];
    step_sq_[j] = step_[j] * step_[j];
  }
}

void Sq8Quantizer::Train(const float* residuals, size_t n) {
  std::vector<float> lo(dim_, std::numeric_limits<float>::infinity());
  std::vector<float> hi(dim_, -std::numeric_limits<float>::infinity());
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < dim_; ++j) {
      lo[j] = std::min(lo[j], residuals[i * dim_ + j]);
      hi[j] = std::max(hi[j], residuals[i * dim_ + j]);
    }
  }
  for (size_t j = 0; j < dim_; ++j) {
    if (n == 0) lo[j] = hi[j] = 0;
    min_[j] = lo[j];
    step_[j] = std::max((hi[j] - lo[j]) / 255.0f, 1e-12f);
  }
  DeriveFromSteps();
}

void Sq8Quantizer::Encode(const float* x, const float* centroid, uint8_t* code) const {
  // Values outside the trained range clamp; the stored error norm keeps the bound honest.
  double err2 = 0;
  for (size_t j = 0; j < dim_; ++j) {
    const float r = x[j] - centroid[j];
    const float level = std::clamp(std::nearbyint((r - min_[j]) / step_[j]), 0.0f, 255.0f);
    code[j] = static_cast<uint8_t>(level);
    const double back = static_cast<double>(min_[j]) + static_cast<double>(step_[j]) * level;
    err2 += (r - back) * (r - back);
  }
  // Rounded up so float rounding in Estimate never makes the bound too tight.
  const float err = static_cast<float>(std::sqrt(err2)) * (1 + 1e-5f) + 1e-6f;
  std::memcpy(code + dim_, &err, sizeof err);
}

void PostingQuantizer::Prepare(const float* v, float* out) const { std::copy(v, v + dim(), out); }

void PostingQuantizer::Bounds(const float* prepared_query, const float* prepared_centroid,
                              const QuantizedPosting& posting, float* lower, float* upper) const {
  Estimate(prepared_query, prepared_centroid, posting, lower, upper);
  for (size_t i = 0; i < posting.size(); ++i) {
    const float e = lower[i], r = upper[i];
    lower[i] = e - r;
    upper[i] = e + r;
  }
}

void Sq8Quantizer::Estimate(const float* query, const float* centroid,
                            const QuantizedPosting& posting, float* estimate, float* error) const {
  const uint8_t* codes = posting.codes.data();
  const size_t n = posting.size();
  // Shift and scale the query once per posting: qs_j = (q_j - c_j - min_j) / step_j.
  thread_local std::vector<float> qs;
  qs.resize(dim_);
  for (size_t j = 0; j < dim_; ++j) qs[j] = (query[j] - centroid[j] - min_[j]) * inv_step_[j];
  const size_t stride = code_bytes();
  const WeightedL2Fn kernel = WeightedL2();
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* code = codes + i * stride;
    float e = 0;
    std::memcpy(&e, code + dim_, sizeof e);
    const float d2 = kernel(qs.data(), step_sq_.data(), code, dim_);
    const float d = std::sqrt(d2);
    // |q - x| in [d - e, d + e]; squared: [max(0, d - e)^2, (d + e)^2]. Centre and half-width:
    const float lo = std::max(0.0f, d - e), hi = d + e;
    estimate[i] = d2;
    error[i] = std::max(d2 - lo * lo, hi * hi - d2) * (1 + 1e-4f) + 1e-6f * (1 + d2);
  }
}

std::string Sq8Quantizer::Serialize() const {
  std::string out(kMagic);
  const uint32_t d = static_cast<uint32_t>(dim_);
  out.append(reinterpret_cast<const char*>(&d), sizeof d);
  out.append(reinterpret_cast<const char*>(min_.data()), dim_ * sizeof(float));
  out.append(reinterpret_cast<const char*>(step_.data()), dim_ * sizeof(float));
  return out;
}

absl::StatusOr<std::unique_ptr<Sq8Quantizer>> Sq8Quantizer::Deserialize(const std::string& bytes,
                                                                        const std::string& where) {
  const size_t head = sizeof(kMagic) - 1;
  uint32_t d = 0;
  if (bytes.size() >= head + 4) std::memcpy(&d, bytes.data() + head, 4);
  // d == 0: no vectors have no dimensions (and memcpy into the empty arrays' null data is UB).
  if (bytes.compare(0, head, kMagic) != 0 || d == 0 || bytes.size() != head + 4 + 8 * size_t{d}) {
    return absl::DataLossError(
        absl::StrCat(where, ": corrupt sq8 quantizer (", bytes.size(), " bytes)"));
  }
  auto q = std::make_unique<Sq8Quantizer>(d);
  std::memcpy(q->min_.data(), bytes.data() + head + 4, d * sizeof(float));
  std::memcpy(q->step_.data(), bytes.data() + head + 4 + d * sizeof(float), d * sizeof(float));
  for (size_t j = 0; j < d; ++j) {
    if (!(q->step_[j] > 0) || !std::isfinite(q->step_[j]) || !std::isfinite(q->min_[j])) {
      return absl::DataLossError(
          absl::StrCat(where, ": corrupt sq8 quantizer (dimension ", j, ": bad min or step)"));
    }
  }
  q->DeriveFromSteps();
  return q;
}

absl::StatusOr<std::unique_ptr<PostingQuantizer>> MakeQuantizer(const std::string& spec, size_t dim,
                                                                uint64_t seed) {
  if (spec == "sq8") return std::unique_ptr<PostingQuantizer>(new Sq8Quantizer(dim));
  if (spec.rfind("rabitq", 0) == 0) return MakeRabitqQuantizer(spec, dim, seed);
  return absl::InvalidArgumentError(
      absl::StrCat("spec.quant: unknown quantizer '", spec, "' (none, sq8, rabitq:bits=N)"));
}

absl::StatusOr<std::unique_ptr<PostingQuantizer>> DeserializeQuantizer(const std::string& bytes,
                                                                       const std::string& where) {
  if (bytes.rfind(kMagic, 0) == 0) {
    auto q = Sq8Quantizer::Deserialize(bytes, where);
    if (!q.ok()) return q.status();
    return std::unique_ptr<PostingQuantizer>(std::move(*q));
  }
  if (bytes.rfind("shoal-rabitq", 0) == 0) return DeserializeRabitqQuantizer(bytes, where);
  return absl::DataLossError(absl::StrCat(where, ": unknown quantizer format"));
}

}  // namespace shoal::index

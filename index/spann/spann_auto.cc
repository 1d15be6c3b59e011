#include "index/spann/spann_auto.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace shoal::index {
namespace {

// Vectors per posting: 64, and 128 from kLargePostingDim dimensions. A posting's fixed cost
// per query (navigating to its centroid: a dim-long half-precision distance; preparing the query
// against it: dim values quantized and dim / 4 x 16 table entries) grows with dim like a code's
// scan, but from 1024-d the codes have 2 bits and so cost less each: at 1536-d a third of a
// query's search samples were navigation at 64 per posting. Measured at 1536-d angular
// (n = 50,000, docs/PERFORMANCE.md): 128 per posting reached recall 0.96 with 30 postings and
// 6,900 codes scanned vs 72 postings and 6,700 codes at 64 (p50 471 vs 661 us, same load); 32 per
// posting scanned fewer codes (5,900) from 102 postings and was slower (p50 1,052 us). At 784-d
// (Fashion-MNIST, 3-bit codes) 128 per posting needed ~40% more codes for recall 0.95 and was
// slower: below 1024-d it stays 64.
constexpr double kVectorsPerPosting = 64;
constexpr double kVectorsPerLargePosting = 128;
constexpr size_t kLargePostingDim = 1024;

// RAM of the resident codes: per entry its code (bits * dim / 8 + 16 bytes of factors), id
// and norm, times the replicas each vector is written to (about `replicas` on average with the
// RNG rule rejecting a few).
double CodeBytes(const DataShape& s, uint32_t bits, uint32_t replicas) {
  const double code = bits * ((s.dim + 63) / 64 * 64) / 8.0 + 16 + 8 + 4;
  return static_cast<double>(s.n) * replicas * code;
}

}  // namespace

SpannOptions AutoSpannOptions(const DataShape& s) {
  SpannOptions o;
  const double per_posting =
      s.dim >= kLargePostingDim ? kVectorsPerLargePosting : kVectorsPerPosting;
  o.centroid_ratio = std::clamp(1.0 / per_posting, 1e-6, 0.5);
  o.replicas = 4;
  if (s.dim < 32) {
    o.quant = "none";
    return o;
  }
  uint32_t bits = s.dim < 192 ? 5 : s.dim < 640 ? 4 : s.dim < 1024 ? 3 : 2;
  if (s.ram_budget_bytes > 0) {
    const double half = s.ram_budget_bytes / 2.0;
    if (CodeBytes(s, bits, o.replicas) > half) o.replicas = 2;
    while (bits > 1 && CodeBytes(s, bits, o.replicas) > half) --bits;
  }
  o.quant = absl::StrCat("rabitq:bits=", bits);
  return o;
}

absl::StatusOr<SpannOptions> ResolveSpannSpec(const std::string& spec, const DataShape& shape) {
  if (!IsAutoSpec(spec)) return ParseSpannSpec(spec);
  const SpannOptions base = AutoSpannOptions(shape);
  if (spec.rfind("spann:", 0) != 0) return base;  // "" or "auto"
  return ParseSpannSpec(spec, base);
}

}  // namespace shoal::index

#include "index/spann/spann_auto.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace shoal::index {
namespace {

// Vectors per posting: 64, and 256 from kLargePostingDim dimensions. A posting's fixed cost per
// query (navigating to its centroid: a dim-long distance; preparing the query against it: dim
// values quantized and dim / 4 x 16 table entries) grows with dim like a code's scan, but from
// 1024-d the codes have 2 bits and so cost less each: at 1536-d with 64 per posting a third of a
// query's search samples were navigation. Measured at 1536-d angular (n = 50,000, same load,
// docs/PERFORMANCE.md), postings / codes scanned / p50 at recall ~0.96: 32 per posting 102 /
// 5,900 / 1,052 us; 64: 72 / 6,700 / 661 us; 128: 30 / 6,900 / 471 us; 256: 20 / 5,850 /
// 287 us. The codes needed barely move with the posting size there; the postings do. At 784-d
// (Fashion-MNIST, 3-bit codes) 128 per posting needed 12-35% more codes for the same recall and
// was slower: below 1024-d it stays 64. Only one set of the suite is >= 1024-d.
constexpr double kVectorsPerPosting = 64;
// The calibration samples kCalibrationQueries queries whatever n and dimension: the recall it
// measures must be precise enough for the target, and a sample's standard error does not shrink
// with n. Per-query recall@10 near 0.95 spreads by ~0.07-0.08, so 200 queries left a standard
// error of ~0.0055 and 1000 leave ~0.0024; with 200, target 0.95 landed 0.0045 low at 10M x 128
// on sampling error alone (docs/PERFORMANCE.md, "Target-recall calibration at 10M"), and chose
// rows 0.01-0.02 off at 784-d ("calibration on 1000 queries at every dimension").
// The ground truth's cost, 1000 x n x dim multiply-adds, grows with n like the build itself; on
// the fused kernel (spann_calibration.h) 1000 queries cost about what 200 did in the scan.
constexpr uint32_t kCalibrationQueries = 1000;
constexpr double kVectorsPerLargePosting = 256;
// Codes on the SSD: two bits fewer than the dimension's, at least 2 (spann_auto.h).
constexpr uint32_t kSsdFewerBits = 2, kSsdMinBits = 2;
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
  o.centroids_from_data = true;  // the ratio above is the fallback for too few vectors
  o.replicas = 4;
  if (s.dim < 32) {
    o.quant = "none";
    return o;
  }
  uint32_t bits = s.dim < 192 ? 5 : s.dim < 640 ? 4 : s.dim < 1024 ? 3 : 2;
  if (s.ram_budget_bytes > 0) {
    const double half = s.ram_budget_bytes / 2.0;
    if (CodeBytes(s, bits, o.replicas) > half) o.replicas = 2;
    if (CodeBytes(s, 1, o.replicas) <= half) {
      while (bits > 1 && CodeBytes(s, bits, o.replicas) > half) --bits;
    } else {
      // Codes that cannot be held even at one bit stay on the SSD (SpannIndex reads them with
      // their postings): fewer bits read fewer posting pages, down to where looser bounds send
      // more candidates to a full-vector read than they save. Pages, not CPU, decide the
      // posting size there too: the rule's, not the measured one.
      bits = std::max(kSsdMinBits, bits - std::min(bits, kSsdFewerBits));
      o.centroids_from_data = false;
    }
  }
  o.quant = absl::StrCat("rabitq:bits=", bits);
  o.calibration_queries = kCalibrationQueries;
  return o;
}

absl::StatusOr<SpannOptions> ResolveSpannSpec(const std::string& spec, const DataShape& shape) {
  if (!IsAutoSpec(spec)) return ParseSpannSpec(spec);
  const SpannOptions base = AutoSpannOptions(shape);
  if (spec.rfind("spann:", 0) != 0) return base;  // "" or "auto"
  return ParseSpannSpec(spec, base);
}

}  // namespace shoal::index

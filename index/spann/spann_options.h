// SpannOptions: the knobs of the SSD-resident index (after SPANN), parsed from an index spec
// string, and the manifest that records a built index.
//
//   SHOAL_ASSIGN_OR_RETURN(SpannOptions o, ParseSpannSpec("spann:centroid_ratio=0.02,replicas=4"));
//
// Spec keys (all optional):
//   centroid_ratio  postings per vector (0 < r <= 0.5)                       default 0.02
//   centroids       ratio (centroid_ratio as given) | data (the build measures the posting
//                   size on regions of the data: index/spann/posting_size.h)  default ratio
//   replicas        max postings a vector is written to (1..16)             default 4
//   rng_factor      boundary replication: accept posting c only if no accepted c' has
//                   rng_factor * d(c, c') <= d(x, c)   (> 0)                default 1.0
//   closure         replica candidates are postings within closure * d(x, nearest) (>= 1)
//                                                                           default 1.5
//   posting_cap     max entries per posting; 0 = 4x the mean                default 0
//   max_postings    default SearchParams::max_postings                      default 32
//   pruning_ratio   default SearchParams::pruning_ratio (0 = off, else >= 1; off, a
//                   target-recall search takes the calibrated pruning: PrunedCalibration)
//                                                                           default 0
//   navigator       flat | tree | auto (flat up to 256 postings; above, per
//                   query the cheaper for its max_postings: DescentCost)    default auto
//   beam            tree navigator: nodes kept per level (at least the
//                   number of postings asked for)                           default 8
//   branching       centroid tree fan-out                                   default 32
//   iterations      k-means iterations per tree node                        default 10
//   seed            clustering seed                                         default 1
//   quant           none | sq8 | rabitq:bits=B — with a quantizer, postings hold ids + codes
//                   kept in RAM, full vectors are read from vectors.dat only for candidates
//                   whose lower bound can still enter the top-k                default none
//   target_recall   default SearchParams::target_recall: searches that set neither
//                   max_postings nor target_recall scan the fewest postings that reached this
//                   recall@10 in the build's calibration (0 = off: use max_postings;
//                   an index without a calibration table uses max_postings)   default 0.95
//   calibration_queries  sampled vectors the build calibrates target recall on (0 = none)
//                                                                           default 200
//
// "auto" (the spec "", "auto", "spann:auto" or "spann:auto,key=value,...") asks the build to
// choose the keys from the data (index/spann/spann_auto.h); keys given after it override the
// choice. Pure functions; thread-safe.
#ifndef SHOAL_INDEX_SPANN_SPANN_OPTIONS_H_
#define SHOAL_INDEX_SPANN_SPANN_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "index/distance/distance.h"

namespace shoal::index {

struct SpannOptions {
  double centroid_ratio = 0.02;
  bool centroids_from_data = false;  // spec centroids=data (index/spann/posting_size.h)
  uint32_t replicas = 4;
  float rng_factor = 1.0f;
  float closure = 1.5f;
  uint32_t posting_cap = 0;
  uint32_t max_postings = 32;
  float pruning_ratio = 0;
  std::string navigator = "auto";
  uint32_t beam = 8;
  uint32_t branching = 32;
  uint32_t iterations = 10;
  uint64_t seed = 1;
  std::string quant = "none";
  float target_recall = 0.95f;
  uint32_t calibration_queries = 200;
};

// Does `spec` ask for automatically chosen options ("", "auto", "spann:auto[,key=value...]")?
bool IsAutoSpec(const std::string& spec);

// InvalidArgument naming the key ("spec.replicas: 0 is not in 1..16") for unknown keys, bad
// numbers or values out of range; `spec` must start with "spann".
// An "auto" item is accepted and ignored (IsAutoSpec tells the caller to choose options).
absl::StatusOr<SpannOptions> ParseSpannSpec(const std::string& spec);
// Same, applying the spec's keys on top of `base` instead of the defaults.
absl::StatusOr<SpannOptions> ParseSpannSpec(const std::string& spec, const SpannOptions& base);
// The canonical spec string of `o` (every key, fixed order); ParseSpannSpec round-trips it.
std::string SpannSpecString(const SpannOptions& o);

// One row of a build's calibration: searching the `max_postings` nearest postings gave recall@10
// `recall` on the build's sampled queries: their mean less one standard error of it since the
// finer ladder of 2026-11-26, the plain mean before (index/spann/spann_calibration.h).
struct CalibrationPoint {
  uint32_t max_postings = 0;
  float recall = 0;
  friend bool operator==(const CalibrationPoint&, const CalibrationPoint&) = default;
};

// The calibration of searches restricted to a random `density` of the vectors (a filter that
// passes each id with that probability, by a hash of the id): recall@10 among the passing
// vectors at each max_postings (index/spann/spann_calibration.h, CalibrateRestricted). A tenant's
// search reads how many candidates it takes at the density it meets (SpannIndex::ScopeBudgetFor).
struct DensityCalibration {
  float density = 1;
  std::vector<CalibrationPoint> table;
  friend bool operator==(const DensityCalibration&, const DensityCalibration&) = default;
};

// The calibration of query-aware pruning (SearchParams::pruning_ratio) at one `ratio`: per
// max_postings, the recall@10 reached and the mean postings a query scanned (pruning stops a
// query short of max_postings where the next centroid is over ratio x the nearest's squared
// distance; CalibrateSpann's pruned ladders, index/spann/spann_calibration.h). A target-recall
// search takes the pruning of the fewest postings scanned when that is fewer than its unpruned
// max_postings.
struct PrunedPoint {
  uint32_t max_postings = 0;
  float recall = 0;
  float postings = 0;
  friend bool operator==(const PrunedPoint&, const PrunedPoint&) = default;
};
struct PrunedCalibration {
  float ratio = 0;
  std::vector<PrunedPoint> table;  // ascending max_postings
  friend bool operator==(const PrunedCalibration&, const PrunedCalibration&) = default;
};

// What a built index is: written to RocksDB with the posting directory. Format versions:
// "shoal-spann-v1" (no calibration) is still read; "shoal-spann-v2" adds the calibration line.
struct SpannManifest {
  SpannOptions options;
  uint32_t dimension = 0;
  Metric metric = Metric::kL2;
  uint64_t generation = 0;     // names the index directory
  uint64_t num_vectors = 0;    // vectors indexed
  uint64_t indexed_below = 0;  // internal ids < this existed at build time
  uint32_t num_postings = 0;
  uint32_t posting_cap = 0;  // resolved cap
  // Ascending max_postings; empty for indexes built before calibration (or with
  // calibration_queries=0).
  std::vector<CalibrationPoint> calibration;
  // Descending density, each below 1; empty for indexes built before it (an optional line of
  // v2: a weighted scope then needs a quarter of CandidateBudget at every density).
  std::vector<DensityCalibration> restricted;
  // Ascending ratio; empty for indexes built before it (an optional line of v2: searches then
  // never prune unless asked).
  std::vector<PrunedCalibration> pruned;
};

std::string EncodeManifest(const SpannManifest& m);
// DataLoss naming `where` when malformed.
absl::StatusOr<SpannManifest> DecodeManifest(const std::string& text, const std::string& where);

}  // namespace shoal::index

#endif  // SHOAL_INDEX_SPANN_SPANN_OPTIONS_H_

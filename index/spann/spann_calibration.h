// Target-recall calibration of a built SPANN index: which max_postings reaches which recall@10.
//
//   CalibrationInput in{&index, ids, vectors, dim, Metric::kL2, num_postings};
//   SHOAL_ASSIGN_OR_RETURN(std::vector<CalibrationPoint> table, CalibrateSpann(in));
//   uint32_t m = MaxPostingsForRecall(table, 0.95f);  // what a search at target 0.95 scans
//
// Queries are `queries` vectors sampled (seeded) from the indexed set itself. Each is held out
// of its own answer: the exact ground truth is a brute-force top-10 over every other vector,
// and the index's answer (asked for 11) drops the query's own id. The index is then searched at
// each max_postings of a ladder (1, 2, 3, ... 16, 17, ... 32, 34, ..., steps of about 1/16, up to
// the number of postings) until the mean recall@10 reaches 0.999. A hit counts when its distance
// is within the 10th true distance (+ 1e-4 relative, so ties do not count as misses) + hit_epsilon,
// ann-benchmarks' rule: a cosine collection passes 1e-3, ann-benchmarks' epsilon on the cosine
// distance 1 - cos, which on its unit vectors differs from -<q, x> by a constant. Without it the
// calibration was ~10x stricter on cosine sets than the recall the suite reports, and overshot:
// target 0.95 gave 0.963 held out at 100-d angular, 0.969 at 256-d, 0.983 at 1536-d. (On L2 and
// inner product the data's scale is arbitrary, so an absolute epsilon is left at 0.)
//
// Each row's recall is the sample's mean less one standard error of that mean (the per-query
// recalls' spread / sqrt(queries)): a target is met by the smallest max_postings whose mean sits
// one standard error above it, so held-out queries land at or just above the target rather than
// half the time below it (measured before the margin, 200 queries: 128-d euclidean 0.942 held
// out at target 0.95). The margin shrinks as sqrt(queries): more queries cost fewer postings.
//
// Cost: queries x n x dim multiply-adds for the ground truth plus the ladder's searches, where a
// query that found all its 10 is not searched again (more postings only add candidates; its row
// counts it as 1). With a `backend` and the L2 metric (or unit-length vectors, where the L2
// order is the inner product's) the ground truth is the clustering backend's fused top-m kernel
// (the queries as points, the indexed vectors as centroids, in blocks of backend_block_rows), its
// 10th distance recomputed exactly; otherwise a scan blocked over 16 queries at a time, split over
// `threads`. The kernel costs ~4x less CPU per query than the scan (docs/PERFORMANCE.md,
// "Target-recall calibration at 10M").
//
// Thread safety: pure given a const index; `index` may serve other searches meanwhile.
#ifndef SHOAL_INDEX_SPANN_SPANN_CALIBRATION_H_
#define SHOAL_INDEX_SPANN_SPANN_CALIBRATION_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "index/clustering/kmeans.h"
#include "index/distance/distance.h"
#include "index/spann/spann_options.h"
#include "index/vector_index.h"

namespace shoal::index {

struct CalibrationInput {
  const VectorIndex* index = nullptr;  // searched with SearchParameters::max_postings
  std::span<const uint64_t> ids;       // the indexed ids, one per row of `vectors`
  const float* vectors = nullptr;      // ids.size() x dim, index form
  size_t dim = 0;
  Metric metric = Metric::kL2;
  uint32_t num_postings = 0;  // the ladder's end
  uint32_t queries = 200;     // sampled query vectors (at most ids.size() - 1)
  uint64_t seed = 1;
  uint32_t threads = 1;
  float hit_epsilon = 0;  // added to the 10th true distance (see above)
  // Every vector has unit length (a cosine collection's index form): the nearest by inner product
  // are then the nearest by L2, and the ground truth may take the L2 kernel (see Cost above).
  bool unit_norm = false;
  // The L2 ground truth's kernel (see Cost above); nullptr: the scan. Its errors (e.g. a
  // non-finite vector) fall back to the scan.
  ClusteringBackend* backend = nullptr;
  size_t backend_block_rows = size_t{1} << 18;  // indexed rows per kernel call (its packed copy)
};

// Mean of per-query recalls and the standard error of that mean (0 below 2 queries).
struct RecallEstimate {
  double mean = 0;
  double se = 0;
};
RecallEstimate EstimateRecall(std::span<const double> per_query);

// The measured (max_postings, recall) rows, ascending max_postings (recall: mean less one
// standard error, as above). Empty when there is nothing
// to calibrate on (queries = 0, or fewer than 12 vectors). Errors: the index's search errors.
//
// With `pruned` (nullable), also the pruned ladders (PrunedCalibration, spann_options.h) on the
// same queries and ground truth: for each of `pruning_ratios` (ascending, each >= 1) the ladder
// searched with that pruning_ratio, each query on its own so that the postings it scanned are
// counted. A query that pruning stopped short of max_postings scans and finds the same at every
// larger one: it is not searched again, and a ladder ends once every query is so stopped, at
// recall 0.999, or once its recall stayed flat over 4 rungs (later rows would scan more for the
// same recall). Cost: per ratio about as many searches as the unpruned ladder's (a query that
// found its 10 is searched again until stopped).
absl::StatusOr<std::vector<CalibrationPoint>> CalibrateSpann(
    const CalibrationInput& in, std::span<const float> pruning_ratios = {},
    std::vector<PrunedCalibration>* pruned = nullptr);

// The same ladder for searches restricted to a random part of the vectors (what a tenant's or a
// filter's search sees): for each of `densities` (in (0, 1); those leaving fewer than
// kMinRestrictedIds vectors are skipped), `queries` of the sampled vectors are searched with a
// filter that passes each id with that probability (a hash of the id, so the densities' ids
// nest), and scored against the exact top-10 among the passing vectors. Descending density.
// Cost: queries x n x dim for the ground truths of every density in one scan, then the ladders;
// a sparser density's ladder climbs farther (a search of m postings meets about m x density x
// the mean posting of passing vectors).
inline constexpr size_t kMinRestrictedIds = 1024;
inline constexpr float kRestrictedDensities[] = {1.0f / 4, 1.0f / 16, 1.0f / 64, 1.0f / 256};
absl::StatusOr<std::vector<DensityCalibration>> CalibrateRestricted(
    const CalibrationInput& in, std::span<const float> densities, uint32_t queries);

// Query-aware pruning's ratios a build calibrates (CalibrateSpann's pruning_ratios).
inline constexpr float kPruningRatios[] = {1.3f, 1.45f, 1.7f};

// What a target-recall search scans: the unpruned max_postings `unpruned` (ratio 0), or the
// pruned row that reached `target` with the fewest postings scanned on average, when fewer.
struct PruningChoice {
  uint32_t max_postings = 0;
  float ratio = 0;     // 0: no pruning
  float postings = 0;  // mean postings scanned at the calibration
};
PruningChoice ChoosePruning(std::span<const PrunedCalibration> pruned, float target,
                            uint32_t unpruned);

// The smallest max_postings whose measured recall reached `target`; the row of the best recall
// when none did; 0 for an empty table.
uint32_t MaxPostingsForRecall(std::span<const CalibrationPoint> table, float target);
// The same, fractional: between the row below the target and the first row that reached it,
// linear in recall (a candidate budget need not be a whole number of postings; the rows of a
// small index are coarse: 128-d, 387 postings, 0.86 at 2 and 0.96 at 3).
double PostingsForRecall(std::span<const CalibrationPoint> table, float target);

}  // namespace shoal::index

#endif  // SHOAL_INDEX_SPANN_SPANN_CALIBRATION_H_

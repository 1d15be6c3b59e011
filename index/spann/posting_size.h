// ChoosePostingSize: the number of postings measured on the data (spec `centroids=data`; issue 18,
// "K from the data"), instead of AutoSpannOptions' fixed rule (64 vectors per posting, 256 from
// 1024-d).
//
//   SHOAL_ASSIGN_OR_RETURN(PostingSizeChoice c, ChoosePostingSize(backend, x, n, dim, metric, o));
//   o.centroid_ratio = c.centroid_ratio;
//
// On a seeded sample of the vectors (at most kPostingSizeSample) it tries each candidate posting
// size (32 to 512 vectors, powers of two, while the sample still gives 16 postings): the build's
// k-means cuts the sample into postings of that mean size, and 200 held-out sample vectors, as
// queries, rank the postings by centroid distance. It measures how many postings P and entries C
// a query scans before the mean recall@10 within the sample reaches the target recall, and
// models the search's cost as
//     P x (kPostingNs + kPostingNsPerDim x dim)   per posting: its listing, bounds and candidate
//                                                 checks, and the query prepared against its
//                                                 centroid (quantized, lookup tables built)
//   + C x kEntryNsPerBit x dim x bits             per entry: the code scan (bits per dimension
//                                                 of a code with its factors; 32 unquantized)
// The cheapest size wins (ties: the larger posting). The constants are fitted to the suite's
// measured differences between posting sizes (docs/PERFORMANCE.md, "K from the data"): a
// posting cost ~2 µs at 256-d and ~3.5 µs at 784-d, an entry ~12.5 ps per code bit.
// Navigation is left out. Deterministic for a given seed; primary assignment only (replicas
// raise every size's recall alike).
//
// Thread-safe (no shared state). Errors: InvalidArgument (n == 0, dim == 0), the backend's.
#ifndef SHOAL_INDEX_SPANN_POSTING_SIZE_H_
#define SHOAL_INDEX_SPANN_POSTING_SIZE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "index/clustering/kmeans.h"
#include "index/distance/distance.h"
#include "index/spann/spann_options.h"

namespace shoal::index {

struct PostingSizeCandidate {
  uint32_t vectors_per_posting = 0;
  uint32_t postings = 0;  // P: postings a query scans for the target recall
  double entries = 0;     // C: entries it scans there (mean over queries)
  double recall = 0;      // the mean recall@10 reached
  double cost = 0;        // the modelled multiply-adds
};

struct PostingSizeChoice {
  double centroid_ratio = 0;  // 1 / the chosen vectors per posting
  std::vector<PostingSizeCandidate> candidates;
};

inline constexpr size_t kPostingSizeSample = 8192;

// `vectors` n x dim in index form; `o` gives quant, target_recall, seed, iterations, beam and
// branching.
absl::StatusOr<PostingSizeChoice> ChoosePostingSize(ClusteringBackend& backend,
                                                    const float* vectors, size_t n, size_t dim,
                                                    Metric metric, const SpannOptions& o);

}  // namespace shoal::index

#endif  // SHOAL_INDEX_SPANN_POSTING_SIZE_H_

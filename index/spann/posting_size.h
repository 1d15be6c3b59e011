// ChoosePostingSize: the number of postings measured on the data (spec `centroids=data`; issue 18,
// "K from the data"), instead of AutoSpannOptions' fixed rule (64 vectors per posting, 256 from
// 1024-d).
//
//   SHOAL_ASSIGN_OR_RETURN(PostingSizeChoice c, ChoosePostingSize(backend, x, n, dim, metric, o));
//   o.centroid_ratio = c.centroid_ratio;
//
// It tries each candidate posting size (32 to 512 vectors, powers of two, while a region still
// gives 8 postings) on rows of the data at the data's own density: all of it when it
// has at most kPostingSizeSample vectors (400 seeded random ones ask), else kPostingSizeRegions
// regions, each the kPostingSizeRegionRows vectors nearest a seeded random vector, whose asking
// vectors (50 a region) come from the quarter nearest that vector, so that their 10 neighbours
// within the region are their true ones. (A random sample thins the data: its 10 neighbours are
// the data's ~10 n/s nearest, and on data with fine structure it under-counts what small
// postings cost: on embedding:n=50000,d=384,seed=7 it chose 32 per posting, which took 154
// postings a query at recall 0.95 where 512 took 10; docs/PERFORMANCE.md, "Posting sizes
// measured at the data's own density".) In each region the build's k-means cuts the rows into
// postings of that mean size, and the asking vectors rank the postings by centroid distance. It
// measures how many postings P and entries C a query scans before the mean recall@10 reaches the
// target recall (the last posting counted in the share of its hits that the target still
// needed), and models the search's cost as
//     P x (kPostingNs + kPostingNsPerDim x dim)   per posting: its listing, bounds and candidate
//                                                 checks, and the query prepared against its
//                                                 centroid (quantized, lookup tables built)
//   + C x kEntryNsPerBit x dim x bits             per entry: the code scan (bits per dimension
//                                                 of a code with its factors; 32 unquantized)
// The cheapest size wins, but a smaller one only when it is kPostingSizeSmallerGain cheaper than
// the best larger one: a size's modelled cost moves by ~10% between seeds of the measurement,
// and a posting too small costs far more than one too large (at 960-d, 64 per posting gave half
// the QPS of 256; 256 and 512 were within 15%). The constants are fitted to the suite's
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
  double postings = 0;  // P: postings a query scans for the target recall
  double entries = 0;   // C: entries it scans there (mean over queries)
  double recall = 0;    // the mean recall@10 reached
  double cost = 0;      // the modelled multiply-adds
};

struct PostingSizeChoice {
  double centroid_ratio = 0;  // 1 / the chosen vectors per posting
  std::vector<PostingSizeCandidate> candidates;
};

inline constexpr size_t kPostingSizeSample = 8192;
// Past kPostingSizeSample vectors: the regions measured and the vectors in each.
inline constexpr size_t kPostingSizeRegions = 8, kPostingSizeRegionRows = 4096;
inline constexpr double kPostingSizeSmallerGain = 0.1;

// `vectors` n x dim in index form; `o` gives quant, target_recall, seed, iterations, beam and
// branching.
absl::StatusOr<PostingSizeChoice> ChoosePostingSize(ClusteringBackend& backend,
                                                    const float* vectors, size_t n, size_t dim,
                                                    Metric metric, const SpannOptions& o);

}  // namespace shoal::index

#endif  // SHOAL_INDEX_SPANN_POSTING_SIZE_H_

// AutoSpannOptions: the index options a build picks by itself from the data's shape (the spec
// "auto", or none), so that a user who knows no knobs gets a fast index.
//
//   SHOAL_ASSIGN_OR_RETURN(SpannOptions o,
//                          ResolveSpannSpec("auto", {.n = 60000, .dim = 784, .metric = kL2}));
//
// Rules (measured on Fashion-MNIST and the synthetic embedding suite of `shoal_bench ann
// --suite`, docs/PERFORMANCE.md "Defaults that need no tuning"):
//   quant           RaBitQ codes held in RAM (full vectors only re-rank) for dim >= 32, with
//                   more bits at low dimension, where RaBitQ's estimate is looser
//                   (error ~ 2^-B / sqrt(dim)): 5 bits below 192-d, 4 below 640-d, 3 below
//                   1024-d, else 2 (at 1536-d the scan of 3-bit codes is memory-bound: 2 bits
//                   gave p50 598 us vs 867 us at recall 0.98 with the same postings scanned;
//                   1 bit was slower, 924 us, from re-ranking ~4x more full vectors).
//                   Up to 5 bits the query has one 6-bit lookup-table group (rabitq.h), so
//                   each block is scanned once; at 100-d 3 and 4 bits were no faster than 5
//                   (they re-rank 5x / 2x more vectors), docs/PERFORMANCE.md "one lookup-table
//                   group". Below 32-d: no quantizer (a full vector is barely larger than a code).
//   centroids       data: the build measures the posting size at the data's own density
//                   (posting_size.h; docs/PERFORMANCE.md "K from the data" and "Posting sizes
//                   measured at the data's own density": 256-512 per posting on the generated
//                   sets, 64 on Fashion-MNIST) — unless the codes stay on the SSD (below):
//                   the measurement models CPU, and there the pages read decide (at 2M x 128 it
//                   chose 128 per posting: 87 reads per query against the rule's 73).
//                   centroid_ratio, the rule, also the fallback when the sample is too small to
//                   compare sizes: about 64 vectors per posting (1/64), 256 from
//                   1024-d (where a posting's fixed cost, navigation and query preparation over
//                   dim values, outweighs the scan of its 2-bit codes), at least 1 posting.
//   replicas        4; 2 when the codes of 4 would take over half the RAM budget.
//   bits            one fewer (down to 1) while the codes still take over half the budget —
//                   unless even 1-bit codes would: then the codes stay on the SSD, read with
//                   their postings (SpannIndex), and take two bits fewer than in RAM, at least
//                   2: a query reads its postings' pages (bytes per code) plus a 4-KiB page per
//                   re-ranked candidate (more with looser bounds). At 2M x 128 reads per query
//                   at recall 0.95 were 75 / 62 / 67 / 73 for 2 / 3 / 4 / 5 bits
//                   (docs/PERFORMANCE.md, SSD regime).
//   posting_cap, navigator, beam: the defaults (4x the mean posting; the navigator
//                   chosen per query by cost above 256 postings).
//   target_recall   0.95, calibrated at build time (index/spann/spann_calibration.h): the
//                   max_postings, and query-aware pruning where it scans fewer postings for the
//                   target (on the generated sets and Fashion-MNIST it did: docs/PERFORMANCE.md,
//                   "Query-aware pruning chosen by the calibration").
//   calibration_queries  1000, whatever n and dimension (a sample's standard error does not
//                   shrink with n: 200 left ~0.0055 at recall 0.95, and chose rows 0.01-0.03
//                   above the target at 784-1536-d). The calibration's safety margin is one
//                   standard error of its mean recall, so more queries cost fewer postings at
//                   the same confidence.
// Pure; thread-safe.
#ifndef SHOAL_INDEX_SPANN_SPANN_AUTO_H_
#define SHOAL_INDEX_SPANN_SPANN_AUTO_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "index/distance/distance.h"
#include "index/spann/spann_options.h"

namespace shoal::index {

struct DataShape {
  uint64_t n = 0;  // vectors to index
  size_t dim = 0;
  Metric metric = Metric::kL2;
  size_t ram_budget_bytes = 0;  // 0 = no bound (Options::index_ram_bytes_limit)
};

SpannOptions AutoSpannOptions(const DataShape& shape);

// The options a build uses for `spec`: for an auto spec (IsAutoSpec) AutoSpannOptions with the
// spec's explicit keys applied over them, else ParseSpannSpec(spec). InvalidArgument as
// ParseSpannSpec.
absl::StatusOr<SpannOptions> ResolveSpannSpec(const std::string& spec, const DataShape& shape);

}  // namespace shoal::index

#endif  // SHOAL_INDEX_SPANN_SPANN_AUTO_H_

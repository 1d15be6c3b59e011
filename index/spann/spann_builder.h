// BuildSpann: builds the SSD-resident index (after SPANN) of a set of vectors into a directory.
//
//   SpannBuildInput in{ids, vectors, dim, Metric::kL2, /*indexed_below=*/next_id,
//   /*generation=*/3}; SHOAL_ASSIGN_OR_RETURN(SpannBuildOutput out, BuildSpann(in, options, dir,
//   backend, threads));
//   // then commit out.manifest + out.postings to RocksDB, then SpannIndex::Open(dir, ...)
//
// Steps: balanced hierarchical k-means tree (index/clustering/centroid_tree.h) with one leaf per
// posting; each vector joins up to `replicas` postings chosen by the RNG rule among the leaves
// within `closure` x its nearest leaf distance; postings over the cap drop their farthest replicas
// (never a vector's primary posting); then in `dir`:
//   postings.dat    posting lists as checksummed 4 KiB page extents (storage/pages/posting_file.h)
//   vectors.dat     every vector once, addressed by internal id (storage/pages/vector_file.h)
//   centroids.ckpt  the serialized centroid tree
//   quantizer.bin   the trained quantizer (spec quant != none; postings then hold codes)
// all written through `input.fs` and fsynced before BuildSpann returns (the directory's entries
// are the caller's: it syncs the directory and publishes it). The caller commits the posting
// directory afterwards, so a crash mid-build leaves only an unreferenced directory.
//
// Thread-safe (no shared state). Errors: InvalidArgument (empty input), I/O errors from storage.
#ifndef SHOAL_INDEX_SPANN_SPANN_BUILDER_H_
#define SHOAL_INDEX_SPANN_SPANN_BUILDER_H_

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "index/clustering/kmeans.h"
#include "index/spann/spann_options.h"
#include "storage/io/file_system.h"
#include "storage/records/record_store.h"

namespace shoal::index {

struct SpannBuildInput {
  std::span<const uint64_t> ids;   // internal ids, one per vector
  const float* vectors = nullptr;  // ids.size() x dim, index form (unit length for cosine)
  size_t dim = 0;
  Metric metric = Metric::kL2;
  uint64_t indexed_below = 0;
  uint64_t generation = 0;
  // Where the files are written (not owned): the POSIX one, or a fault-injecting one in tests.
  storage::FileSystem* fs = storage::FileSystem::Default();
  // Called as each phase starts ("clustering", "assigning", "encoding", "writing") and as it
  // advances, with the fraction of that phase done (0..1). May be empty.
  std::function<void(std::string_view phase, double done)> progress;
};

struct SpannBuildOutput {
  SpannManifest manifest;
  std::vector<storage::PostingRow> postings;
  double seconds_clustering = 0;
  double seconds_writing = 0;
};

absl::StatusOr<SpannBuildOutput> BuildSpann(const SpannBuildInput& input,
                                            const SpannOptions& options, const std::string& dir,
                                            ClusteringBackend& backend, uint32_t threads);

// File names inside an index directory.
inline constexpr char kPostingFileName[] = "postings.dat";
inline constexpr char kVectorFileName[] = "vectors.dat";
inline constexpr char kCentroidFileName[] = "centroids.ckpt";
inline constexpr char kQuantizerFileName[] = "quantizer.bin";

}  // namespace shoal::index

#endif  // SHOAL_INDEX_SPANN_SPANN_BUILDER_H_

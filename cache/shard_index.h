// ShardIndex: the vectors of one semantic-cache shard (one partition x category) in RAM, searched
// exactly while the shard is small and through a clustered (IVF) index once it is large.
//
//   ShardIndex index(/*dimension=*/384, index::Metric::kInnerProduct);
//   index.Add(/*id=*/7, vector);                   // copied
//   std::vector<index::Neighbor> near = index.Search(query, /*k=*/8);
//
// Layout: every vector stays in an index::FlatIndex (the exact path, and the rerank source).
// Once a shard holds Options::cluster_at vectors, they are clustered by k-means
// (index/clustering) into about 4·√n lists; each list holds its entries' SQ8 codes
// (index/quantization) of the residual to its centroid. A search ranks the centroids, scans the
// codes of the `probes` nearest lists, and reranks the best `rerank` candidates exactly against
// the full vectors: every distance returned is exact, only whether the true nearest vector was
// among the candidates is approximate (measured in docs/PERFORMANCE.md).
//
// Upkeep: Add assigns a vector to its nearest centroid and encodes it; Remove drops its code.
// The clustering is redone once the shard has grown `regrow`x since the last build and dropped
// once it shrinks under cluster_at / 2. While auto-clustering is off (SetAutoCluster, for bulk
// loads) Add and Remove never start a rebuild; turning it back on starts one when due.
//
// Rebuilds run in the background, never under the caller's exclusive access: the caller's
// exclusive call that finds one due (Add, SetAutoCluster, Rebuild) copies the vectors (a
// snapshot: dimension x 4 bytes each, held until the build ends) and starts a thread that
// trains k-means on a sample of it and assigns and encodes every snapshot vector into new lists.
// Meanwhile searches use the current clustering (or the exact scan before the first one), and
// Add and Remove keep it current and also note the ids they change (the delta log; once the
// new centroids are trained Add also notes the new list of its vector). The next exclusive call
// after the build finished (Add, Remove, AdoptRebuild) swaps the new clustering in, first
// replaying the delta log into it (one SQ8 encode per changed id; ids changed before the
// centroids were trained also pay one centroid scan). A rebuild of 1M x 384 takes minutes of
// one core in the background; the swap costs milliseconds per thousand changed ids.
//
// Distances are "smaller is closer" (index::Distance): squared L2, or the negative inner product.
// Thread safety: Search, SearchExact, size, clustered, lists, rebuilding and rebuild_ready may
// run concurrently with each other (the cache's reader lock); every other method needs
// exclusive access (the cache's writer lock). The background build thread shares no state
// with them but its own (the snapshot and the new clustering); the destructor waits for it.
#ifndef SHOAL_CACHE_SHARD_INDEX_H_
#define SHOAL_CACHE_SHARD_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "index/clustering/kmeans.h"
#include "index/flat/flat_index.h"
#include "index/postings/posting_entries.h"
#include "index/quantization/sq8_quantizer.h"
#include "index/vector_index.h"

namespace shoal::cache {

class ShardIndex {
 public:
  struct Options {
    size_t cluster_at = 4096;  // vectors from which a shard is clustered
    size_t probes = 16;        // lists scanned per search
    size_t rerank = 32;        // candidates reranked exactly per search (at least k)
    double regrow = 2.0;       // rebuild once size() reaches regrow x the size at the last build
    uint64_t seed = 1;         // k-means seed
    // Tests: called on the build thread with "start" (before any work) and "trained" (once
    // the new centroids are final), to hold a build in flight at either point.
    std::function<void(std::string_view stage)> build_hook;
  };

  ShardIndex(size_t dimension, index::Metric metric) : ShardIndex(dimension, metric, Options{}) {}
  ShardIndex(size_t dimension, index::Metric metric, const Options& options);
  ~ShardIndex();  // waits for a background build
  ShardIndex(const ShardIndex&) = delete;
  ShardIndex& operator=(const ShardIndex&) = delete;

  size_t size() const { return vectors_.size(); }
  bool clustered() const { return !live_.lists.empty(); }
  size_t lists() const { return live_.lists.size(); }
  // A background build is in flight (started, not yet swapped in) / has finished (the next
  // exclusive call swaps it in).
  bool rebuilding() const { return build_ != nullptr; }
  bool rebuild_ready() const;
  const Options& options() const { return options_; }
  // Bytes of RAM held: vectors, codes, centroids, maps.
  size_t MemoryBytes() const;

  // Adds (or replaces) the vector of `id`: dimension() floats, copied.
  void Add(uint64_t id, const float* vector);
  // Removes `id`; false if it was absent.
  bool Remove(uint64_t id);
  bool Contains(uint64_t id) const { return vectors_.Contains(id); }
  // Off: Add and Remove never rebuild. On: rebuilds now when one is due.
  void SetAutoCluster(bool on);
  // Starts a background rebuild of all vectors now (when size() >= cluster_at and none is in
  // flight; under cluster_at / 2 returns to exact search).
  void Rebuild();
  // Swaps a finished background build in (replaying the delta log); false when none finished.
  // Starts the next rebuild if one is already due.
  bool AdoptRebuild();
  // The clustering as bytes (centroids, SQ8 quantizer, each list's ids; host byte order) for a
  // later ImportModel; "" while exact. generation() counts the clusterings swapped in or
  // dropped, so the owner knows when to save again.
  std::string ExportModel() const;
  uint64_t generation() const { return generation_; }
  // A saved model for the next build (after a reopen): its centroids and quantizer are used
  // instead of training, and the ids it lists go to their saved lists without a centroid scan
  // (codes are always made from the current vectors; ids it lacks are assigned as usual; ids
  // it lists that are gone are skipped). A stale model only costs recall, never a wrong
  // distance. DataLoss (nothing kept) when the bytes are not a model of this dimension.
  absl::Status ImportModel(std::string_view bytes);
  // Waits for background builds and swaps them in until none is in flight (tests, benches;
  // blocks the caller's exclusive access meanwhile).
  void WaitForRebuild();

  // Up to k vectors near `query`, closest first (ties: smaller id), with exact distances:
  // exact search while not clustered, the probed lists' best candidates reranked otherwise.
  std::vector<index::Neighbor> Search(const float* query, size_t k) const;
  // The exact k nearest (a flat scan of every vector).
  std::vector<index::Neighbor> SearchExact(const float* query, size_t k) const;

 private:
  // A trained clustering: ~4 sqrt(n) lists of SQ8 codes of residuals to their centroids.
  struct Clustering {
    std::vector<float> centroids;  // lists x dimension
    std::unique_ptr<index::Sq8Quantizer> quantizer;
    std::vector<index::QuantizedPosting> lists;                         // ids, |x|^2, codes
    absl::flat_hash_map<uint64_t, std::pair<uint32_t, uint32_t>> slot;  // id -> (list, at)
    size_t built_size = 0;                                              // vectors at the build
  };
  struct Build;  // a background rebuild (shard_index.cc)
  // An imported model (ImportModel).
  struct Hint {
    std::vector<float> centroids;
    std::unique_ptr<index::Sq8Quantizer> quantizer;
    absl::flat_hash_map<uint64_t, uint32_t> list_of;
    size_t built_size = 0;
  };

  void RebuildIfDue();
  // Appends the code of `vector` to list `list` of `c` / drops the code of `id` (false: none).
  void Encode(Clustering* c, uint64_t id, const float* vector, uint32_t list) const;
  static bool Drop(Clustering* c, uint64_t id);
  uint32_t NearestList(const Clustering& c, const float* vector) const;
  // The build thread's work: trains on the snapshot and encodes it into b->next (false: failed
  // or cancelled).
  void RunBuild(Build* b) const;
  bool Train(Build* b) const;
  bool TrainCentroids(Build* b, index::ClusteringBackend& backend) const;
  // Notes a change of `id` in the delta log of the build in flight (if any).
  void Touch(uint64_t id, const float* vector);
  // The approximate rank of every code in the probed lists, the best `want` kept.
  std::vector<std::pair<float, uint64_t>> Candidates(const float* query, size_t want) const;

  const size_t dimension_;
  const index::Metric metric_;
  const Options options_;
  bool auto_cluster_ = true;
  index::FlatIndex vectors_;
  Clustering live_;               // empty while exact
  std::unique_ptr<Build> build_;  // in flight (or finished, not yet swapped in)
  size_t failed_size_ = 0;        // snapshot size of the last build, when it failed
  std::unique_ptr<Hint> hint_;    // for the next build
  uint64_t generation_ = 0;
};

}  // namespace shoal::cache

#endif  // SHOAL_CACHE_SHARD_INDEX_H_

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
// The clustering is redone (Rebuild) once the shard has grown `regrow`x since the last build and
// dropped once it shrinks under cluster_at / 2. While auto-clustering is off (SetAutoCluster, for
// bulk loads) Add and Remove never rebuild; turning it back on rebuilds when due.
// A rebuild runs k-means on a sample and assigns every vector (one core): at 1M x 384 it takes
// tens of seconds, under the caller's exclusive access.
//
// Distances are "smaller is closer" (index::Distance): squared L2, or the negative inner product.
// Thread safety: Search and SearchExact are const and may run concurrently with each other; Add,
// Remove, Rebuild and SetAutoCluster need exclusive access (the cache's writer lock).
#ifndef SHOAL_CACHE_SHARD_INDEX_H_
#define SHOAL_CACHE_SHARD_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
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
  };

  ShardIndex(size_t dimension, index::Metric metric) : ShardIndex(dimension, metric, Options{}) {}
  ShardIndex(size_t dimension, index::Metric metric, const Options& options);

  size_t size() const { return vectors_.size(); }
  bool clustered() const { return !lists_.empty(); }
  size_t lists() const { return lists_.size(); }
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
  // Clusters all vectors now (when size() >= cluster_at; otherwise returns to exact search).
  void Rebuild();

  // Up to k vectors near `query`, closest first (ties: smaller id), with exact distances:
  // exact search while not clustered, the probed lists' best candidates reranked otherwise.
  std::vector<index::Neighbor> Search(const float* query, size_t k) const;
  // The exact k nearest (a flat scan of every vector).
  std::vector<index::Neighbor> SearchExact(const float* query, size_t k) const;

 private:
  void Unclustered();
  // Appends the code of `vector` to list `list`.
  void Encode(uint64_t id, const float* vector, uint32_t list);
  uint32_t NearestList(const float* vector) const;
  void RebuildIfDue();
  // The approximate rank of every code in the probed lists, the best `want` kept.
  std::vector<std::pair<float, uint64_t>> Candidates(const float* query, size_t want) const;

  const size_t dimension_;
  const index::Metric metric_;
  const Options options_;
  bool auto_cluster_ = true;
  index::FlatIndex vectors_;
  std::unique_ptr<index::ClusteringBackend> backend_;  // one thread
  // Clustered state (all empty while exact):
  std::vector<float> centroids_;  // lists() x dimension
  std::unique_ptr<index::Sq8Quantizer> quantizer_;
  std::vector<index::QuantizedPosting> lists_;                         // ids, |x|^2 and SQ8 codes
  absl::flat_hash_map<uint64_t, std::pair<uint32_t, uint32_t>> slot_;  // id -> (list, position)
  size_t built_size_ = 0;
};

}  // namespace shoal::cache

#endif  // SHOAL_CACHE_SHARD_INDEX_H_

// ShardIndex: the vectors of one semantic-cache shard (one partition x category) in RAM, searched
// exactly while the shard is small and through a clustered (IVF) index once it is large.
//
//   ShardIndex index(/*dimension=*/384, index::Metric::kInnerProduct);
//   index.Add(/*id=*/7, vector);                   // copied
//   std::vector<index::Neighbor> near = index.Search(query, /*k=*/8);
//
// Layout: every vector stays in an index::FlatIndex (the exact path, and the rerank source).
// Once a shard holds Options::cluster_at vectors, they are clustered by k-means
// (index/clustering) into about 2·√n lists; each list holds its entries' 1-bit RaBitQ codes
// (index/quantization/rabitq.h: 64 bytes at 384-d) of the residual to its centroid, in the
// fast-scan form (32 codes per block, scored through in-register lookup tables). A search ranks
// the centroids, scores the codes of the `probes` nearest lists, and reranks the best `rerank`
// candidates exactly against the full vectors: every distance returned is exact, only whether
// the true nearest vector was among the candidates is approximate (measured in
// docs/PERFORMANCE.md).
//
// Upkeep: Add assigns a vector to its nearest centroid and encodes it; Remove drops its code.
// The clustering is redone once the shard has grown `regrow`x since the last build and dropped
// once it shrinks under cluster_at / 2. While auto-clustering is off (SetAutoCluster, for bulk
// loads) Add and Remove never start a rebuild; turning it back on starts one when due.
//
// Rebuilds run in the background, never under the caller's exclusive access: the caller's
// exclusive call that finds one due (Add, SetAutoCluster, Rebuild) notes the row count and
// starts a thread, which reads the rows itself in chunks of 1,024 (copied under an internal
// mutex that Add and Remove also take while they change a row: no snapshot of the whole shard
// is copied under the caller's lock), trains k-means on a sample of them and assigns and
// encodes every row into new lists. A row changed or moved (a removal moves the last row into
// the hole) after the build started is in the delta log below, so a walk of rows that change
// underneath it still ends with every vector encoded once.
// At most MaxConcurrentBuilds() builds of the whole process train or encode at once; the others
// wait for a slot. Meanwhile searches use the current clustering (or the exact scan before the
// first one), and Add and Remove keep it current and also note the ids they change (the delta
// log; once the new centroids are trained Add also notes the new list of its vector). The next
// exclusive call after the build finished (Add, Remove, AdoptRebuild) replays the delta log:
// when it holds more than kSwapRemainder ids, in a second background round (the build thread
// reads the changed vectors under the internal mutex and encodes them while a fresh delta log
// collects what changes meanwhile; at most two such rounds), and the small remainder under the
// caller's exclusive access, which then swaps the new clustering in. A build that fails (k-means
// refused its input) is counted (build_failures(), last_build_error()) and retried once the shard
// has grown by an eighth since; it never blocks searches, which keep the clustering they had.
//
// Distances are "smaller is closer" (index::Distance): squared L2, or the negative inner product.
// Thread safety: Search, SearchExact, size, clustered, lists, rebuilding, rebuild_ready,
// build_failures and last_build_error may run concurrently with each other (the cache's reader
// lock); every other method needs exclusive access (the cache's writer lock). The background
// build thread reads the stored vectors under rows_mu_ (which Add and Remove take while they
// change them; searches, under the caller's shared lock, never run beside those) and otherwise
// owns only its new clustering; the destructor cancels and waits for it.
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
#include "absl/synchronization/mutex.h"
#include "base/aligned_vector.h"
#include "base/sharded_hash.h"
#include "index/clustering/kmeans.h"
#include "index/flat/flat_index.h"
#include "index/quantization/rabitq.h"
#include "index/topk.h"
#include "index/vector_index.h"

namespace shoal::cache {

class ShardIndex {
 public:
  struct Options {
    size_t cluster_at = 4096;  // vectors from which a shard is clustered
    size_t probes = 16;        // lists scanned per search
    size_t rerank = 32;        // candidates reranked exactly per search (at least k)
    // A build makes lists_per_sqrt x sqrt(n) lists. 2: with 64-byte codes the centroid ranking
    // (dimension x 4 bytes per list) costs more than scanning twice the codes
    // (docs/PERFORMANCE.md).
    double lists_per_sqrt = 2;
    double regrow = 2.0;  // rebuild once size() reaches regrow x the size at the last build
    uint64_t seed = 1;    // k-means seed
    // Tests: called on the build thread with "start" (before any work), "trained" (once the
    // new centroids are final) and "chunk" (after each chunk of rows encoded, before the
    // next), to hold a build in flight at any of those points.
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
  // Background builds that failed since construction, and the last one's error (OK if none).
  uint64_t build_failures() const { return build_failures_; }
  absl::Status last_build_error() const { return last_build_error_; }
  // Process-wide: how many builds (of every ShardIndex) may train and encode at once (default
  // half the hardware threads, at least 1). Set before builds start; 0 is taken as 1.
  static void SetMaxConcurrentBuilds(size_t n);
  static size_t MaxConcurrentBuilds();
  // Delta-log ids a swap replays under the caller's exclusive access before it hands them to a
  // background round instead.
  static constexpr size_t kSwapRemainder = 1024;
  const Options& options() const { return options_; }
  // Bytes of RAM held: vectors, codes, centroids, maps.
  size_t MemoryBytes() const;

  // Adds (or replaces) the vector of `id`: dimension() floats, copied.
  void Add(uint64_t id, const float* vector);
  // Removes `id`; false if it was absent.
  bool Remove(uint64_t id);
  bool Contains(uint64_t id) const { return vectors_.Contains(id); }
  // The stored vector of `id` (valid until the next Add or Remove); nullptr when absent.
  const float* Vector(uint64_t id) const { return vectors_.Vector(id); }
  // Off: Add and Remove never rebuild. On: rebuilds now when one is due.
  void SetAutoCluster(bool on);
  // Starts a background rebuild of all vectors now (when size() >= cluster_at and none is in
  // flight; under cluster_at / 2 returns to exact search).
  void Rebuild();
  // Swaps a finished background build in (replaying the delta log); false when none finished.
  // Starts the next rebuild if one is already due.
  bool AdoptRebuild();
  // The clustering as bytes (centroids, each list's ids; host byte order) for a
  // later ImportModel; "" while exact. generation() counts the clusterings swapped in or
  // dropped, so the owner knows when to save again.
  std::string ExportModel() const;
  uint64_t generation() const { return generation_; }
  // A saved model for the next build (after a reopen): its centroids are used
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
  // The same into *out (cleared first): with the thread's scratch buffers, a clustered search
  // allocates nothing once *out and the buffers are warm.
  void Search(const float* query, size_t k, std::vector<index::Neighbor>* out) const;
  // The exact k nearest (a flat scan of every vector).
  std::vector<index::Neighbor> SearchExact(const float* query, size_t k) const;
  void SearchExact(const float* query, size_t k, std::vector<index::Neighbor>* out) const;

 private:
  // One list: its entries' ids, |x|^2 (for inner-product ranking) and RaBitQ codes in the
  // fast-scan form (RaBitQ::PackAt; slot i is entry i).
  struct List {
    std::vector<uint64_t> ids;
    std::vector<float> sq_norms;
    base::AlignedVector<uint8_t> codes;
    size_t MemoryBytes() const {
      return sizeof(*this) + ids.capacity() * sizeof(uint64_t) +
             sq_norms.capacity() * sizeof(float) + codes.capacity();
    }
  };
  // A trained clustering: ~2 sqrt(n) lists of RaBitQ codes of residuals to their centroids.
  struct Clustering {
    std::vector<float> centroids;          // lists x dimension
    std::unique_ptr<index::RaBitQ> codec;  // 1 bit per dimension, seeded (data-oblivious)
    std::vector<float> rotated;            // lists x codec->padded_dim(): each centroid rotated
    std::vector<List> lists;
    // id -> (list, at); sharded so that growing it never rehashes every id under the lock.
    base::ShardedHashMap<uint64_t, std::pair<uint32_t, uint32_t>> slot;
    size_t built_size = 0;  // vectors at the build
  };
  struct Build;  // a background rebuild (shard_index.cc)
  // An imported model (ImportModel).
  struct Hint {
    std::vector<float> centroids;
    absl::flat_hash_map<uint64_t, uint32_t> list_of;
    size_t built_size = 0;
  };

  void RebuildIfDue();
  // Back to the exact scan (a shard shrunk below its clustering size).
  void Unclustered() {
    if (!clustered()) return;
    live_ = Clustering{};
    ++generation_;
  }
  // Appends the code of `vector` to list `list` of `c` / drops the code of `id` (false: none).
  void Encode(Clustering* c, uint64_t id, const float* vector, uint32_t list) const;
  static bool Drop(Clustering* c, uint64_t id);
  uint32_t NearestList(const Clustering& c, const float* vector) const;
  // Sets c->codec and c->rotated from c->centroids, and makes one empty list per centroid.
  void MakeCodec(Clustering* c) const;
  // The build thread's work: trains on a sample of the rows and encodes them into b->next (status:
  // failed or cancelled), then (RunReplay) a handed-over delta log.
  void RunBuild(Build* b) const;
  void RunReplay(Build* b) const;
  // Hands the delta log of the finished build to a background round (AdoptRebuild).
  void StartReplay();
  absl::Status Train(Build* b) const;
  absl::Status TrainCentroids(Build* b, index::ClusteringBackend& backend) const;
  // Assigns and encodes rows [begin, begin + 1,024) of the shard into b->next; *more = false
  // once the rows (as many as the build started with, or the shard holds now) are all read.
  absl::Status EncodeChunk(Build* b, index::ClusteringBackend& backend, size_t begin,
                           bool* more) const;
  // Copies rows [begin, min(end, size())) (ids and vectors) under rows_mu_; returns how many.
  size_t CopyRows(size_t begin, size_t end, uint64_t* ids, float* rows) const;
  // Notes a change of `id` in the delta log of the build in flight (if any).
  void Touch(uint64_t id, const float* vector);
  // The approximate rank of every code in the probed lists, the best `want` kept, closest
  // first (the calling thread's buffer: valid until its next Candidates call).
  const std::vector<index::TopK<uint64_t>::Entry>& Candidates(const float* query,
                                                              size_t want) const;

  const size_t dimension_;
  const index::Metric metric_;
  const Options options_;
  bool auto_cluster_ = true;
  // Held by Add and Remove while they change vectors_, and (shared) by the build thread while
  // it copies rows; searches read vectors_ under the caller's shared lock only.
  mutable absl::Mutex rows_mu_;
  index::FlatIndex vectors_;
  Clustering live_;               // empty while exact
  std::unique_ptr<Build> build_;  // in flight (or finished, not yet swapped in)
  size_t failed_size_ = 0;        // snapshot size of the last build, when it failed
  uint64_t build_failures_ = 0;
  absl::Status last_build_error_;
  std::unique_ptr<Hint> hint_;  // for the next build
  uint64_t generation_ = 0;
};

}  // namespace shoal::cache

#endif  // SHOAL_CACHE_SHARD_INDEX_H_

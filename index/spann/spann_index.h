// SpannIndex: searches a built SSD-resident index (see spann_builder.h). Leaf centroids and the
// centroid tree stay in RAM; posting lists are read from postings.dat through a BlockReader
// (io_uring with O_DIRECT, or pread) — all of one query's missing postings in one batch — and
// decoded postings are kept in a byte-budgeted LRU cache.
//
// Query: navigator (flat scan of leaf centroids, or best-first descent of the tree) -> the
// max_postings nearest postings -> query-aware pruning (keep posting i if d_i <= ratio * d_1,
// squared L2 to the centroids) -> cached or read postings -> exact distances (replicas
// deduplicated, `skip` ids ignored) -> top-k, ties to the smaller id.
//
// Quantized tier (spec quant=sq8|rabitq): every posting's ids and codes are loaded into RAM at
// Open, in the quantizer's scan form (RaBitQ: 32-code fast-scan blocks), unless they do not fit
// ram_limit_bytes; a query estimates distances from the codes with error bounds, drops a code at
// once when its lower bound passes the running k-th upper bound, and reranks exactly only the
// candidates whose lower bound is at most the final k-th smallest upper bound — no rerank depth
// to tune — from a storage::VectorCache or else one batch from vectors.dat.
//
// Updates: the posting set is a PostingDirectory (index/postings/posting_directory.h) that a
// SpannUpdater replaces whole; each Search call reads the version current when it starts. The
// SpannIndex is searched through index::VectorIndex (vector_index.h); the hooks the updater changes
// it through are private to SpannUpdater and UpdateWork, so the query API stays apart from them.
//
// Thread safety: Search and MemoryBytes may run concurrently with each other and with
// PublishDirectory; caches are internally synchronised.
// Errors: DataLoss (a page fails its checksum: names the file and offset), I/O errors.
#ifndef SHOAL_INDEX_SPANN_SPANN_INDEX_H_
#define SHOAL_INDEX_SPANN_SPANN_INDEX_H_

#include <array>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "base/paged_id_set.h"
#include "index/clustering/centroid_tree.h"
#include "index/flat/flat_index.h"
#include "index/id_filter.h"
#include "index/postings/posting_directory.h"
#include "index/postings/posting_entries.h"
#include "index/postings/posting_navigator.h"
#include "index/quantization/quantizer.h"
#include "index/spann/spann_options.h"
#include "index/topk.h"
#include "index/vector_index.h"
#include "shoal/types.h"
#include "storage/caches/lru_cache.h"
#include "storage/caches/vector_cache.h"
#include "storage/io/block_reader.h"
#include "storage/pages/posting_file.h"
#include "storage/pages/vector_file.h"
#include "storage/records/record_store.h"

namespace shoal::index {

class CandidateIntervals;  // index/spann/candidate_intervals.h

struct SpannRuntimeOptions {
  storage::IoBackend io = storage::IoBackend::kAuto;
  size_t posting_cache_bytes = 256u << 20;
  // 0 = unbounded. Quantized tier: when every code would not fit in it beside the centroids,
  // codes stay in postings.dat and are read per query like full-vector postings (cached).
  size_t ram_limit_bytes = 0;
  // Quantized tier: what vectors.dat is opened through (online inserts write it); null = POSIX.
  storage::FileSystem* fs = nullptr;
};

// The candidates (a weighted scope's vectors) a query covers before it stops, by the density of
// those vectors in the leaves it took (covered / (leaves x vectors per leaf)): measured at a few
// densities, interpolated in log density and log candidates between them; above the densest,
// its value, below the sparsest, the sparsest's. Fixed size: made per query without allocating.
class ScopeBudget {
 public:
  static constexpr size_t kMaxLevels = 6;
  // Densities in descending order; extra levels are dropped.
  void Add(double density, double candidates) {
    if (n_ < kMaxLevels) levels_[n_++] = {density, std::max(1.0, candidates)};
  }
  bool empty() const { return n_ == 0; }
  double At(double density) const;

 private:
  std::array<std::pair<double, double>, kMaxLevels> levels_{};
  size_t n_ = 0;
};

struct SpannKnobs {
  uint32_t max_postings = 0;            // 0 = from target_recall
  float target_recall = 0;              // 0 = the manifest's; used when max_postings is 0
  float pruning_ratio = -1;             // < 0 = the manifest's default; 0 = off
  const PostingScope* scope = nullptr;  // postings a query may scan (null: all)
  // Set by SearchWithKnobs for a weighted scope, before max_postings is resolved (the budget is
  // read at the target recall, not at the recall of the whole postings it resolves to).
  ScopeBudget scope_budget;
};

class SpannIndex final : public VectorIndex {
 public:
  static absl::StatusOr<std::unique_ptr<SpannIndex>> Open(
      const std::string& dir, const SpannManifest& manifest,
      std::span<const storage::PostingRow> postings, const SpannRuntimeOptions& options);

  const SpannManifest& manifest() const { return manifest_; }
  // Quantized tier: are all codes held in RAM (else read per query from postings.dat)?
  bool codes_resident() const { return codes_resident_; }
  // Whether quantized postings keep each vector's |x|^2: only inner-product distances read it.
  bool keeps_norms() const { return manifest_.metric == Metric::kInnerProduct; }
  // Installs the build's calibration table (index/spann/spann_calibration.h) into the manifest.
  // Only before the index is shared: searches read the manifest without a lock.
  void SetCalibration(std::vector<CalibrationPoint> table,
                      std::vector<DensityCalibration> restricted = {},
                      std::vector<PrunedCalibration> pruned = {}) {
    manifest_.calibration = std::move(table);
    manifest_.restricted = std::move(restricted);
    manifest_.pruned = std::move(pruned);
  }
  // The target recall of a search with these knobs: theirs, else the manifest's (0: none).
  float TargetRecall(const SpannKnobs& knobs) const {
    return knobs.target_recall > 0 ? knobs.target_recall : manifest_.options.target_recall;
  }
  // The max_postings a search with these knobs scans: knobs.max_postings; else the calibrated
  // value for the target recall (the knobs', else the manifest's); else the manifest's
  // max_postings (no calibration table, or target_recall 0).
  uint32_t ResolveMaxPostings(const SpannKnobs& knobs) const;
  // A target-recall search of every vector (no max_postings, pruning_ratio, scope or filter of its
  // own, the manifest's pruning off) takes the pruning that reached its target with the fewest
  // postings scanned in the build's pruned calibration, when fewer than `resolved`'s
  // max_postings (ChoosePruning): sets resolved->max_postings and pruning_ratio.
  void ResolvePruning(const SpannKnobs& knobs, bool filtered, SpannKnobs* resolved) const;
  // The vectors a query with these knobs sees: ResolveMaxPostings x the mean vectors per posting
  // at build time.
  size_t CandidateBudget(const SpannKnobs& knobs) const {
    return size_t{ResolveMaxPostings(knobs)} * manifest_.num_vectors /
           std::max<uint64_t>(1, manifest_.num_postings);
  }
  // A weighted scope's query (PostingScope::weighted) scans postings until they hold this many of
  // the scope's vectors, read at the density of the scope's vectors in the leaves it took: from
  // the restricted calibration (manifest().restricted), the candidates a search restricted to a
  // random part of that density met at the max_postings that reached the target there; at
  // density 1, CandidateBudget. An index built without it needs CandidateBudget /
  // kWeightedBudgetDivisor at every density (measured on Fashion-MNIST's tenants,
  // docs/PERFORMANCE.md: it over-serves sparse tenants and under-serves dense ones).
  static constexpr size_t kWeightedBudgetDivisor = 4;
  ScopeBudget WeightedScopeBudget(const SpannKnobs& knobs) const;
  // Is answering a weighted scope exactly over `ids` of its vectors (SearchAmong, or its
  // records without a vector file) cheaper than its scoped search with these knobs? A cost model
  // in bytes touched: the exact path's ids x a full vector, against the postings its scoped
  // search is expected to scan at its mean density (what sizes its first descent) x the mean
  // posting's bytes (or, members first, its ids and the scope's share of its full vectors when
  // fewer), plus the centroids its descent scores (half precision) and the rerank's first slice
  // of full vectors. (Measured before it, a size cap: at 1M x 128, tenants of
  // 2,048-4,096 vectors scanned 117 postings for 794 us; at 784-d, exact paths over 1,000-2,048
  // read full vectors for 310-380 us against 100-210 scoped; docs/PERFORMANCE.md.)
  bool ExactIsCheaper(size_t ids, size_t k, const PostingScope& scope,
                      const SpannKnobs& knobs) const;
  // The same for a filter's `ids` against an unscoped search of `postings` postings, where codes
  // are resident and the vector cache can hold every vector (else false): ids x a full vector
  // against postings x the mean posting's codes. (At 1M x 32, a 0.5% Range scanned 1,040
  // postings, 572k codes, for 3.3 ms: docs/PERFORMANCE.md.)
  bool FilterExactIsCheaper(size_t ids, size_t postings) const;
  // Mean vectors per tree leaf at build (what a density's candidates are counted in).
  double VectorsPerLeaf() const {
    return static_cast<double>(manifest_.num_vectors) /
           static_cast<double>(std::max<uint64_t>(1, manifest_.num_postings));
  }
  const CentroidTree& tree() const { return tree_; }
  const std::string& io_backend() const { return io_backend_; }

  // ---- VectorIndex ----
  size_t dimension() const override { return manifest_.dimension; }
  // Top-k of each of `n` queries (index form, row-major): the navigator picks each query's
  // max_postings nearest postings that params.scope allows (descending farther when it rejects
  // some), pruned by pruning_ratio; their entries are scanned skipping params.skip and ids
  // params.filter rejects. Adds what it did to *params.stats; fills params.visited_leaves (the
  // tree leaves the scanned postings descend from, so the caller can search a leaf-bucketed
  // buffer without a second descent).
  absl::StatusOr<std::vector<std::vector<Neighbor>>> Search(
      const float* queries, size_t n, const SearchParameters& params) const override;
  // FailedPrecondition: a SpannIndex changes only through its SpannUpdater.
  absl::Status Add(std::span<const uint64_t> ids, const float* vectors,
                   std::span<const uint32_t> leaves) override;
  absl::Status Remove(std::span<const uint64_t> ids) override;

  // Exact top-k of `q` (index form) among `ids`, every one a vector of this index, read from the
  // full-vector cache or else in one batch from vectors.dat; nothing else is scored, so an id
  // outside `ids` never comes back. For a few known ids (a tenant's shortlist, a selective
  // filter's ids) without touching the postings. FailedPrecondition without a vector file
  // (quant=none keeps vectors only in the postings: see has_vector_file()); DataLoss for an id
  // the file does not hold.
  absl::Status SearchAmong(const float* q, size_t k, std::span<const uint64_t> ids,
                           std::vector<Neighbor>* out, SearchStats* stats) const;
  bool has_vector_file() const { return directory()->vectors != nullptr; }

  // RAM held now: centroid tree + posting directory + cached postings.
  size_t MemoryBytes() const override;
  // RAM without the cache (what a RAM bound must leave room for).
  size_t FixedMemoryBytes() const;
  // Splits `bytes` between the caches this tier uses: decoded postings (full vectors or, when
  // codes are not resident, codes) and full vectors for the quantized tier's rerank.
  void SetCacheBudget(size_t bytes);
  // The posting set searches read now.
  std::shared_ptr<const PostingDirectory> directory() const {
    absl::MutexLock lock(&dir_mu_);
    return dir_;
  }

 private:
  // ---- Hooks for online updates (SpannUpdater, UpdateWork), kept out of the query API ----
  friend class SpannUpdater;
  friend class UpdateWork;
  // Makes `next` the version later searches read (the updater's commit point in RAM).
  void PublishDirectory(std::shared_ptr<const PostingDirectory> next) {
    absl::MutexLock lock(&dir_mu_);
    dir_ = std::move(next);
  }
  // Online updates: posting extent `old_serial` was rewritten as `new_serial` (0 = a posting new
  // in this change). When the search cache holds the old extent (searches read that posting) or
  // the posting is new, the rewritten entries — made by `entries` only then — are cached under
  // the new serial, so a rewrite does not send the posting's next reader to the SSD. Full-vector
  // tier: decoded postings; quantized tier with codes not resident: codes (else a no-op).
  void RecacheRewritten(uint64_t old_serial, uint64_t new_serial,
                        const std::function<DecodedPosting()>& entries) const;
  void RecacheRewrittenCodes(uint64_t old_serial, uint64_t new_serial,
                             const std::function<QuantizedPosting()>& entries) const;
  // Online updates, quantized tier: the full vectors of fresh inserts go into the rerank cache as
  // they are written to vectors.dat (ids `skip` rejects are left out), so a search that finds a
  // fresh vector among its candidates does not read it back from the SSD (measured: during
  // shoal_bench updates, rerank-cache hits fell from 11 to 1-3 per query and searches read
  // 30-56 KiB each). A no-op for the full-vector tier or without a rerank cache budget.
  void CacheFreshVectors(std::span<const uint64_t> ids, const float* vectors,
                         const std::function<bool(uint64_t)>& skip) const;
  // The posting cached under extent `serial` (full-vector tier: decoded entries; quantized tier
  // with codes not resident: codes, maybe in the scan form), or null: the updater reads a posting
  // it changes from here before going to the SSD.
  std::shared_ptr<const DecodedPosting> CachedPosting(uint64_t serial) const {
    return cache_.Lookup(serial);
  }
  std::shared_ptr<const QuantizedPosting> CachedCodes(uint64_t serial) const {
    return code_cache_.Lookup(serial);
  }
  // Drops the cached extents `serials` (replaced in a directory published since).
  void Uncache(std::span<const uint64_t> serials) const;
  // Quantized tier only (null otherwise): the codec. (The vector file rerank reads is the
  // directory's: PostingDirectory::vectors.)
  const PostingQuantizer* quantizer() const { return quantizer_.get(); }
  storage::BlockReader* posting_reader() const { return reader_.get(); }
  const std::string& posting_path() const { return posting_path_; }

  SpannIndex(SpannManifest manifest, CentroidTree tree,
             std::unique_ptr<storage::BlockReader> reader, std::string path, size_t cache_bytes);
  // Top-k of each query with the knobs given (Search's body).
  absl::StatusOr<std::vector<std::vector<Neighbor>>> SearchWithKnobs(
      const float* queries, size_t n, size_t k, const SpannKnobs& knobs, size_t threads,
      const base::PagedIdSet* skip, const IdFilter* allow, SearchStats* stats,
      std::vector<std::vector<uint32_t>>* leaves) const;
  // The postings to scan for one query, nearest first.
  void Navigate(const PostingDirectory& dir, const float* q, const SpannKnobs& knobs,
                std::vector<uint32_t>* postings) const;
  // Ids the scan must not return: stale (`skip`) or rejected by the request's filter.
  struct Exclusion {
    const base::PagedIdSet* skip;
    const IdFilter* allow;
    bool Excludes(uint64_t id) const {
      return (skip != nullptr && skip->Contains(id)) || (allow != nullptr && !allow->Allows(id));
    }
  };
  absl::Status SearchOne(const PostingDirectory& dir, const float* q, size_t k,
                         const SpannKnobs& knobs, const Exclusion& ex, std::vector<Neighbor>* out,
                         SearchStats* stats, std::vector<uint32_t>* leaves) const;
  // Posting p's centroid in the quantizer's prepared form: the directory's, or with codes on
  // the SSD (prepare_on_scan_) prepared now into thread-local scratch valid until the next call.
  const float* PreparedCentroid(const PostingDirectory& dir, uint32_t p) const;
  // Scans `postings` (Navigate's choice) through their codes, or for a weighted scope the
  // postings where it holds few vectors through those vectors (TakeMembers).
  absl::Status SearchQuantized(const PostingDirectory& dir, const float* q, size_t k,
                               std::span<const uint32_t> postings, const Exclusion& ex,
                               const PostingScope* scope, std::vector<Neighbor>* out,
                               SearchStats* stats) const;
  // Whether a query of `scope` may take postings members first (TakeMembers): a weighted scope
  // (a tenant) with a filter, and a vector cache that holds every vector.
  bool MembersFirst(const PostingScope* scope, const Exclusion& ex) const;
  // Whether the vector cache's budget holds every indexed vector (members first needs it).
  bool CachesEveryVector() const { return vector_cache_.capacity() >= manifest_.num_vectors; }
  // Members first (when MembersFirst): when the scope lists its vectors by leaf and those
  // placed in p's leaf weigh less than p's codes (ListedMembersFirst), appends them (less
  // `ex.skip`'s) to *members and returns true: the codes are not scanned, p's ids not read.
  // Else, when the full vectors of the scope's expected vectors in posting p (its count in p's
  // leaf at that leaf's density, times the posting's entries) weigh less than p's packed codes
  // and prepared centroid, appends the ids of p that `ex` lets through and returns true; false,
  // leaving *members as it was, when more of them pass than that (the codes weigh less after
  // all) or the expectation says so.
  // The bytes behind TakeMembers' choice for a posting of n entries: the codes' path reads the
  // prepared centroid and every packed code (and the ids of the few codes its bounds keep); the
  // members' path every id and the full vector of each member, `density` of the entries.
  double FullBytes() const { return static_cast<double>(manifest_.dimension) * sizeof(float); }
  double CodesBytes(size_t n) const {
    return static_cast<double>(quantizer_->prepared_dim() * sizeof(float) +
                               quantizer_->PackedBytes(n));
  }
  double MembersBytes(double n, double density) const {
    return n * (sizeof(uint64_t) + density * FullBytes());
  }
  bool TakeMembers(const PostingDirectory& dir, uint32_t p, const QuantizedPosting& qp,
                   const PostingScope& scope, const Exclusion& ex,
                   std::vector<uint64_t>* members) const;
  // Whether TakeMembers takes a posting of n entries in `leaf` from the scope's lists
  // (PostingScope::ListsMembers): when the full vectors of the scope's vectors placed in the
  // leaf weigh less than the posting's codes (no id of the posting is read).
  bool ListedMembersFirst(const PostingScope& scope, uint32_t leaf, size_t n) const {
    return scope.ListsMembers() && scope.LeafWeight(leaf) * FullBytes() < CodesBytes(n);
  }
  // Starts loading what the scan of resident posting p reads first: nothing when TakeMembers
  // takes it from the lists of `listed` (the scope, when it goes members first and lists its
  // vectors), else its codes and ids (PrefetchResident).
  void PrefetchScan(const PostingDirectory& dir, uint32_t p, const PostingScope* listed,
                    size_t prepared_dim) const;
  // Scores the listed members exactly (replicas once; full vectors as Rerank reads them) and
  // offers the k nearest to *cands as exact candidates.
  absl::Status ScoreMembers(const PostingDirectory& dir, const float* q, size_t k,
                            std::vector<uint64_t>* members, CandidateIntervals* cands,
                            SearchStats* stats) const;
  // The k nearest of `ids` by exact distance (full vectors from the rerank cache, else one
  // batch from vectors.dat), into *out.
  absl::Status Rerank(const PostingDirectory& dir, const float* q, size_t k,
                      std::span<const uint64_t> ids, std::vector<Neighbor>* out,
                      SearchStats* stats) const;
  // Pushes the exact distance of each of `ids` into *top (vectors as Rerank reads them).
  absl::Status ScoreExactly(const PostingDirectory& dir, const float* q,
                            std::span<const uint64_t> ids, TopK<uint64_t>* top,
                            SearchStats* stats) const;
  // Same for ids the vector cache does not hold: one batch from vectors.dat (then cached).
  absl::Status ReadAndScore(const PostingDirectory& dir, const float* q,
                            std::span<const uint64_t> fetch, TopK<uint64_t>* top,
                            SearchStats* stats) const;
  // Rerank of the scan's survivors, given as (lower bound of the distance, id) ascending: the
  // cached vectors in slices, nearest bound first, stopping once the next bound exceeds the k-th
  // exact distance (nothing after it can enter the top k), so that a survivor kept only by a
  // loose interval is not scored at all; then the uncached ones met on the way whose bound is
  // still below it, read from vectors.dat in the same order in at most four rounds (one batch
  // each, growing: each round's distances lower the threshold the next one reads below).
  // `exact`: (distance, id) of candidates already scored exactly (ScoreMembers), none of them
  // in by_lower.
  absl::Status RerankByLowerBound(const PostingDirectory& dir, const float* q, size_t k,
                                  std::span<const std::pair<float, uint64_t>> by_lower,
                                  std::span<const std::pair<float, uint64_t>> exact,
                                  std::vector<Neighbor>* out, SearchStats* stats) const;
  absl::Status LoadQuantized(storage::FileSystem& fs, const std::string& dir,
                             size_t ram_limit_bytes, PostingDirectory* directory);
  // Reads and decodes the postings `ids` (codes) in one batch, calling scan(i, posting).
  absl::Status ReadQuantized(const PostingDirectory& dir, std::span<const uint32_t> ids,
                             const std::function<void(size_t, const QuantizedPosting&)>& scan,
                             SearchStats* stats) const;

  SpannManifest manifest_;  // changed only by SetCalibration, before the index is shared
  const CentroidTree tree_;
  mutable absl::Mutex dir_mu_;
  // Extents, centroids, in-RAM codes (PostingDirectory::codes, when resident) and prepared
  // centroids (PostingQuantizer::Prepare form) of every posting.
  std::shared_ptr<const PostingDirectory> dir_ ABSL_GUARDED_BY(dir_mu_);
  const std::unique_ptr<storage::BlockReader> reader_;
  const std::string posting_path_;
  std::string io_backend_;
  // navigator: "flat", or "auto" with at most kFlatNavigatorMaxPostings postings: always the
  // flat scan. "auto" above it: per query, the flat scan where it costs less than the descent
  // for the query's max_postings (DescentCost), unless a scope restricts the postings (its
  // sub-tree prunes the descent); else the tree.
  bool flat_navigator_ = true;
  bool navigator_by_cost_ = false;
  const DescentCost descent_cost_;
  // Decoded postings by extent serial (PostingDirectory::serials): a rewritten posting gets a
  // new key, so a stale copy is never served.
  mutable storage::ByteLruCache<uint64_t, DecodedPosting> cache_;
  // Quantized tier only.
  std::unique_ptr<PostingQuantizer> quantizer_;
  bool codes_resident_ = true;
  // Codes not resident: posting centroids are prepared as their postings are scanned (the
  // directory keeps none: prepared_dim 0).
  bool prepare_on_scan_ = false;
  mutable storage::ByteLruCache<uint64_t, QuantizedPosting> code_cache_;  // by extent serial
  mutable storage::VectorCache vector_cache_;
};

}  // namespace shoal::index

#endif  // SHOAL_INDEX_SPANN_SPANN_INDEX_H_

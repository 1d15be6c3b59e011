// VectorIndex: the one interface db/ sees for every search structure — the exact FlatIndex, the
// buffer's LeafBuckets and the SSD-resident SpannIndex. Like FAISS's Index with its
// SearchParameters and IDSelector: vectors go in and out in batches, and what a query may return
// or visit travels in the search parameters, never in the index.
//
//   index::SearchParameters p;
//   p.k = 10;
//   p.filter = &allowed_ids;        // IdFilter: only these ids come back
//   p.scope = &tenant_postings;     // PostingScope: only these postings / tree leaves are scanned
//   SHOAL_ASSIGN_OR_RETURN(auto hits, index->Search(queries, n, p));
//
// Ids are the DB's internal ids; vectors are in index form (unit length for cosine) and
// row-major, dimension() floats each. Distances are "smaller is closer" (see Neighbor).
//
// Thread safety: Search and the other const methods may run concurrently with each other;
// Add and Remove need exclusive access (SpannIndex: Search may also run beside its updater).
// Errors: Search returns DataLoss / I/O errors from structures on disk; Add and Remove return
// InvalidArgument for malformed input and FailedPrecondition where the structure is changed by
// other means (a SpannIndex changes through its SpannUpdater: index/spann/spann_updater.h).
#ifndef SHOAL_INDEX_VECTOR_INDEX_H_
#define SHOAL_INDEX_VECTOR_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/paged_id_set.h"
#include "index/id_filter.h"
#include "shoal/types.h"

namespace shoal::index {

// One search result: an internal id and its distance ("smaller is closer": squared L2, -<q,x>).
struct Neighbor {
  uint64_t id = 0;
  float distance = 0;
};

// Which postings a query may scan — and so which parts of the centroid tree it may descend into
// (multi-tenancy restricts a tenant's queries to the postings that hold its vectors). Checked by
// the navigator per tree node it would descend into and per candidate posting; a query then
// scans its max_postings nearest allowed ones — or, for a weighted scope, as many of the nearest
// allowed ones as it takes to cover a candidate budget (below).
class PostingScope {
 public:
  virtual ~PostingScope() = default;
  // `posting`: its number in the posting directory; `leaf`: the build-time tree leaf it descends
  // from (a split's new posting descends from its parent's leaf).
  virtual bool AllowsPosting(uint32_t posting, uint32_t leaf) const = 0;
  // May the navigator's descent of the build's centroid tree enter `node` (a CentroidTree node
  // id)? A "no" prunes the node's whole subtree, so it must hold no allowed posting's leaf.
  virtual bool AllowsNode(uint32_t /*node*/) const { return true; }
  // A weighted scope knows how many of the vectors it selects lie in each tree leaf (a tenant's
  // per-leaf counts). Its query scans the nearest allowed postings until their leaves hold a
  // candidate budget of them (after Curator; SpannIndex::WeightedScopeBudget: what a search
  // restricted to a random part of the vectors as dense as the scope's in those leaves needed
  // at build), so a scope sparse near the query scans farther than one that fills its leaves;
  // at most kMaxWidening x max_postings postings.
  static constexpr uint32_t kMaxWidening = 16;
  virtual bool weighted() const { return false; }
  virtual uint32_t LeafWeight(uint32_t /*leaf*/) const { return 0; }
  // A weighted scope's size: its vectors and the leaves that hold any of them ({0, 0}: unknown).
  // Its mean density sizes a query's first descent (about as many postings as it takes at that
  // density, instead of max_postings and descending again).
  virtual std::pair<uint64_t, uint32_t> Extent() const { return {0, 0}; }
  // The tree leaves holding any of its vectors (a weighted scope's, any order), when it lists them
  // (empty: it does not). The navigator may then score just those leaves' postings, flat, instead
  // of descending the tree (SpannIndex::Navigate: when that costs no more than the descent).
  virtual std::span<const uint32_t> Leaves() const { return {}; }
  // A weighted scope may list its vectors by the tree leaf each was placed in (not by the
  // postings its replicas went to). A members-first scan of a posting then takes its leaf's
  // listed vectors instead of checking the posting's ids (SpannIndex::TakeMembers).
  virtual bool ListsMembers() const { return false; }
  // Appends the scope's vectors placed in `leaf` (when ListsMembers) and returns true; false
  // when it cannot list them after all (nothing appended).
  virtual bool AppendLeafMembers(uint32_t /*leaf*/, std::vector<uint64_t>* /*out*/) const {
    return false;
  }
};

struct SearchParameters {
  size_t k = 10;
  size_t threads = 1;  // for batches of queries; a structure may use fewer
  // Ids a query may return (null: all), checked during the scan: a rejected id is never scored.
  const IdFilter* filter = nullptr;
  // Ids never returned (tombstones: deleted or replaced), checked like `filter`.
  const base::PagedIdSet* skip = nullptr;
  // SPANN: postings a query may scan (null: all).
  const PostingScope* scope = nullptr;
  // LeafBuckets: per query, the tree leaves whose buckets to scan (null: every bucket). The
  // SpannIndex reports them through `visited_leaves` so that the buffer is searched as if its
  // vectors were already in the postings the query scanned.
  const std::vector<std::vector<uint32_t>>* leaves = nullptr;
  // SPANN, out (when not null): per query, the tree leaves the scanned postings descend from
  // (distinct, nearest posting's first).
  std::vector<std::vector<uint32_t>>* visited_leaves = nullptr;
  uint32_t max_postings = 0;  // SPANN: 0 = chosen for target_recall
  // SPANN, used when max_postings is 0: scan the fewest postings that reached this recall@10 in
  // the build's calibration (0 = the manifest's target; no table: its max_postings).
  float target_recall = 0;
  float pruning_ratio = -1;      // SPANN: < 0 = the manifest's default; 0 = off
  SearchStats* stats = nullptr;  // added to when not null
};

class VectorIndex {
 public:
  virtual ~VectorIndex() = default;

  virtual size_t dimension() const = 0;
  // RAM held now.
  virtual size_t MemoryBytes() const = 0;
  // Adds (or replaces) ids[i] with row i of `vectors`. `leaves` (empty, or one per id): each
  // vector's nearest tree leaf, for structures grouped by leaf (LeafBuckets requires it).
  virtual absl::Status Add(std::span<const uint64_t> ids, const float* vectors,
                           std::span<const uint32_t> leaves) = 0;
  // Removes the ids it holds; absent ids are ignored.
  virtual absl::Status Remove(std::span<const uint64_t> ids) = 0;
  // The min(k, candidates) nearest of each of `n` queries, closest first, ties to the smaller id.
  virtual absl::StatusOr<std::vector<std::vector<Neighbor>>> Search(
      const float* queries, size_t n, const SearchParameters& params) const = 0;
};

// `filter` minus `skip`: how a structure that checks one IdFilter honours both.
class ExcludingFilter final : public IdFilter {
 public:
  ExcludingFilter(const IdFilter* filter, const base::PagedIdSet* skip)
      : filter_(filter), skip_(skip) {}
  bool Allows(uint64_t id) const override {
    return (filter_ == nullptr || filter_->Allows(id)) &&
           (skip_ == nullptr || !skip_->Contains(id));
  }
  // The single filter to check for (filter, skip): null when neither is set, `filter` alone
  // when there is nothing to skip, else *this.
  const IdFilter* Effective() const {
    if (skip_ == nullptr || skip_->empty()) return filter_;
    return this;
  }

 private:
  const IdFilter* filter_;
  const base::PagedIdSet* skip_;
};

}  // namespace shoal::index

#endif  // SHOAL_INDEX_VECTOR_INDEX_H_

// SearchPlanner: how a collection answers a batch of queries — which structures to search, how
// a metadata filter is applied, and how their answers merge.
//  - No SSD index: the write buffer holds every vector; it is searched exactly (FlatIndex), the
//    filter's id bitmap checked row by row.
//  - SSD index: the SpannIndex (tombstoned ids skipped) merged with the write buffer — scanned
//    whole while small, else only its buckets of the tree leaves the SpannIndex's postings for
//    that query descend from (so the buffer is searched as if already in those postings).
//  - A tenant (SearchParams::tenant): a filter passing the ids it sees (state.access); over an
//    SSD index, its SPANN search keeps to its sub-tree (tenants::TenantTree: the descent enters
//    only its nodes, or its own leaves are scanned flat where that costs less) and scans the
//    nearest of its leaves' postings until they hold its candidate budget (TenantScope is a
//    weighted index::PostingScope); a tenant whose exact search touches fewer bytes than its
//    scoped one is expected to (SpannIndex::ExactIsCheaper; always one of at most the shortlist
//    cap, which has no node counts) is searched exactly.
//  - SSD index and a filter passing few ids (<= max(kExactFilterIds, 64 k)): exact brute force
//    over the passing ids — the buffer's rows in place, the others read back from the records.
//    With many passing ids, the filtered SPANN search; a query left with fewer than
//    min(k, passing) hits (its nearest postings held too few passing ids) is answered exactly.
// Every structure is searched through index::VectorIndex; the filter travels in its
// SearchParameters.
//
//   SearchPlanner planner(store, collection_id, dim, metric);
//   absl::ReaderMutexLock lock(&state.mu);
//   SHOAL_ASSIGN_OR_RETURN(auto found, planner.Search(state, q, n, params, threads));
//
// Thread safety: const and stateless beyond its configuration; the caller holds the state's
// mutex (shared) for the whole call. The exact path reads records from the store under it; a
// write committed but not yet applied may then show its new vector with the old attributes.
// Errors: the structures' (DataLoss, I/O) and the record store's.
#ifndef SHOAL_DB_SEARCH_PLANNER_H_
#define SHOAL_DB_SEARCH_PLANNER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "db/collection_state.h"
#include "index/vector_index.h"
#include "shoal/types.h"
#include "storage/records/record_store.h"

namespace shoal::db {

// Merges `extra` into `found` query by query, keeping the k closest (ties: smaller id), each id
// once: a drained vector leaves the buffer in slices after the postings holding it are published,
// so both may return it meanwhile.
void MergeNeighbors(std::vector<std::vector<index::Neighbor>>* found,
                    const std::vector<std::vector<index::Neighbor>>& extra, size_t k);

class SearchPlanner {
 public:
  // A filtered search over an SSD index is answered exactly when at most max(this, 64 k) ids
  // pass: reading that many records back costs about what a SPANN query does.
  static constexpr size_t kExactFilterIds = 2048;

  // `store` (not owned) must outlive the planner.
  SearchPlanner(storage::RecordStore* store, uint32_t collection_id, Metric metric,
                size_t dimension)
      : store_(store), id_(collection_id), metric_(metric), dimension_(dimension) {}

  // The top-k of each of `n` queries (index form, row-major) over `state`.
  // With `tenant`, only ids the tenant sees (state.access) are scored and returned: searched
  // like a filter passing exactly those ids (ANDed with params.filter).
  absl::StatusOr<std::vector<std::vector<index::Neighbor>>> Search(
      const CollectionState& state, const float* q, size_t n, const SearchParams& params,
      size_t threads, tenants::TenantId tenant = tenants::kNoTenant) const
      ABSL_SHARED_LOCKS_REQUIRED(state.mu);

 private:
  // The SSD index (skipping tombstones) merged with the buffer, or the buffer alone; `allow`
  // (nullable) is checked during every scan.
  // `scope` (nullable): the postings the SSD index may scan (a tenant's sub-tree).
  absl::StatusOr<std::vector<std::vector<index::Neighbor>>> SearchIndexes(
      const CollectionState& state, const float* q, size_t n, const SearchParams& params,
      size_t threads, const index::IdFilter* allow,
      const index::PostingScope* scope = nullptr) const ABSL_SHARED_LOCKS_REQUIRED(state.mu);
  // `allow`: what passes, checked during scans; `passing`: how many pass (an upper bound);
  // `list_allowed`: appends the same ids ascending, called only by the exact path.
  absl::StatusOr<std::vector<std::vector<index::Neighbor>>> SearchFiltered(
      const CollectionState& state, const float* q, size_t n, const SearchParams& params,
      size_t threads, const index::IdFilter& allow, size_t passing,
      absl::FunctionRef<void(std::vector<uint64_t>*)> list_allowed,
      const index::PostingScope* scope = nullptr) const ABSL_SHARED_LOCKS_REQUIRED(state.mu);
  // Exact top-k over the ids `allowed` (ascending; the ones `allow` passes): buffer rows in
  // place, the others' vectors read back.
  absl::StatusOr<std::vector<std::vector<index::Neighbor>>> SearchAllowedExactly(
      const CollectionState& state, const float* q, size_t n, size_t k, size_t threads,
      std::span<const uint64_t> allowed, const index::IdFilter& allow, SearchStats* stats) const
      ABSL_SHARED_LOCKS_REQUIRED(state.mu);

  storage::RecordStore* const store_;
  const uint32_t id_;
  const Metric metric_;
  const size_t dimension_;
};

}  // namespace shoal::db

#endif  // SHOAL_DB_SEARCH_PLANNER_H_

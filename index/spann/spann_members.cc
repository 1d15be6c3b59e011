// SpannIndex's members-first scan of a weighted scope (a tenant): which postings it takes through
// the scope's own vectors instead of their codes, scoring those vectors, and the planner's
// choice between that scoped search and an exact one (see spann_index.h).
#include <algorithm>
#include <memory>

#include "base/drop_repeats.h"
#include "base/status_macros.h"
#include "index/postings/posting_prefetch.h"
#include "index/spann/candidate_intervals.h"
#include "index/spann/spann_index.h"

namespace shoal::index {
namespace {

// Drops the ids `skip` (tombstones; nullable) holds from (*members)[before, end).
void DropSkipped(const base::PagedIdSet* skip, size_t before, std::vector<uint64_t>* members) {
  if (skip == nullptr) return;
  members->erase(std::remove_if(members->begin() + static_cast<ptrdiff_t>(before), members->end(),
                                [&](uint64_t id) { return skip->Contains(id); }),
                 members->end());
}

}  // namespace

bool SpannIndex::ExactIsCheaper(size_t ids, size_t k, const PostingScope& scope,
                                const SpannKnobs& knobs) const {
  const auto [vectors, leaves] = scope.Extent();
  const std::shared_ptr<const PostingDirectory> dir = directory();
  if (!scope.weighted() || vectors == 0 || leaves == 0 || dir->size() == 0) return true;
  const double full = FullBytes();
  const size_t m = ResolveMaxPostings(knobs);
  const double mean_density = vectors / (leaves * VectorsPerLeaf());
  const double postings =
      std::clamp(WeightedScopeBudget(knobs).At(mean_density) * leaves / vectors,
                 static_cast<double>(m), static_cast<double>(m * PostingScope::kMaxWidening));
  // Bytes of the mean posting: its resident codes, else its extent on the SSD (the mean of at
  // most 64 rows spread over the directory: this runs per query). With members first (the
  // vector cache holds every vector), a posting costs at most the full vectors of the scope's
  // vectors in its leaf when the scope lists them, else its ids and the full vectors of the
  // scope's share of its entries (TakeMembers).
  const bool members_first = CachesEveryVector();
  const bool listed = members_first && scope.ListsMembers();
  double extents = 0, entries = 0, sampled = 0;
  if (dir->codes_bytes == 0 || (members_first && !listed)) {  // else neither is read
    const size_t stride = std::max<size_t>(1, dir->size() / 64);
    for (size_t p = 0; p < dir->size(); p += stride, ++sampled) {
      extents += dir->rows[p].bytes;
      entries += dir->rows[p].count;
    }
  }
  double posting_bytes = dir->codes_bytes != 0 ? static_cast<double>(dir->codes_bytes) / dir->size()
                                               : extents / sampled;
  if (listed) {
    posting_bytes = std::min(posting_bytes, static_cast<double>(vectors) / leaves * FullBytes());
  } else if (members_first) {
    posting_bytes = std::min(posting_bytes, MembersBytes(entries / sampled, mean_density));
  }
  const double descent =
      descent_cost_.ChildrenScored(static_cast<size_t>(postings), manifest_.options.beam) *
      manifest_.dimension * 2;
  const double rerank = (2.0 * k + 8) * full;  // RerankByLowerBound's first slice
  // Members first from postings' ids, the scoped bytes count 1.5x: descents, id scans and
  // widening steps are work they leave out (at 1x, 1M x 128's 401-999 band went scoped and
  // slower; docs/PERFORMANCE.md). From the scope's lists, no id is scanned.
  const double scoped_weight = members_first && !listed ? 1.5 : 1.0;
  return ids * full <= scoped_weight * (postings * posting_bytes + descent + rerank);
}

bool SpannIndex::FilterExactIsCheaper(size_t ids, size_t postings) const {
  const std::shared_ptr<const PostingDirectory> dir = directory();
  if (dir->codes_bytes == 0 || dir->size() == 0 || !CachesEveryVector()) return false;
  const double posting_bytes = static_cast<double>(dir->codes_bytes) / dir->size();
  return static_cast<double>(ids) * FullBytes() <= static_cast<double>(postings) * posting_bytes;
}

void SpannIndex::PrefetchScan(const PostingDirectory& dir, uint32_t p, const PostingScope* listed,
                              size_t prepared_dim) const {
  // A posting taken from the lists is not read at all (asking for its ids and codes anyway, ~80
  // lines at 1M x 128, took half of a small tenant's scan: docs/PERFORMANCE.md).
  if (listed != nullptr && ListedMembersFirst(*listed, dir.origin[p], dir.codes[p]->size())) return;
  PrefetchResident(dir, p, prepared_dim);
}

bool SpannIndex::MembersFirst(const PostingScope* scope, const Exclusion& ex) const {
  // The members' full vectors come from the vector cache: only when it holds every vector. Read
  // from vectors.dat (a page each) they would cost far more than the codes they spare.
  return scope != nullptr && scope->weighted() && ex.allow != nullptr && CachesEveryVector();
}

bool SpannIndex::TakeMembers(const PostingDirectory& dir, uint32_t p, const QuantizedPosting& qp,
                             const PostingScope& scope, const Exclusion& ex,
                             std::vector<uint64_t>* members) const {
  const size_t n = qp.size();
  const double codes = CodesBytes(n);
  const uint32_t leaf = dir.origin[p];
  if (ListedMembersFirst(scope, leaf, n)) {
    // The scope's vectors placed in p's leaf, from its lists: no id of p is read. (Where a
    // leaf's postings split, each of them lists the leaf's: ScoreMembers drops the repeats.)
    const size_t before = members->size();
    if (scope.AppendLeafMembers(leaf, members)) {
      DropSkipped(ex.skip, before, members);
      return true;
    }
  }
  if (MembersBytes(n, scope.LeafWeight(leaf) / VectorsPerLeaf()) >= codes) return false;
  const double ids = static_cast<double>(n * sizeof(uint64_t));
  const size_t most = static_cast<size_t>((codes - ids) / FullBytes());
  const size_t before = members->size();
  // One call lists the posting's ids through the filter (MembersFirst: there is one).
  ex.allow->AppendAllowed(qp.ids, members);
  DropSkipped(ex.skip, before, members);
  if (members->size() - before > most) {  // the codes weigh less after all
    members->resize(before);
    return false;
  }
  return true;
}

absl::Status SpannIndex::ScoreMembers(const PostingDirectory& dir, const float* q, size_t k,
                                      std::vector<uint64_t>* members, CandidateIntervals* cands,
                                      SearchStats* stats) const {
  // A member two postings list (a replica) is scored once; the order does not matter (TopK
  // breaks ties by id).
  base::DropRepeats(members);
  stats->vectors_scored += members->size();
  TopK<uint64_t> top(k);
  SHOAL_RETURN_IF_ERROR(ScoreExactly(dir, q, *members, &top, stats));
  for (const auto& e : top.TakeSorted()) cands->OfferExact(e.id, e.distance);
  return absl::OkStatus();
}

}  // namespace shoal::index

#include "db/search_planner.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "absl/base/call_once.h"
#include "absl/container/flat_hash_set.h"
#include "base/spare_vector.h"
#include "base/status_macros.h"
#include "db/index_form.h"
#include "index/distance/distance.h"
#include "index/flat/flat_index.h"

namespace shoal::db {

void MergeNeighbors(std::vector<std::vector<index::Neighbor>>* found,
                    const std::vector<std::vector<index::Neighbor>>& extra, size_t k) {
  for (size_t i = 0; i < found->size(); ++i) {
    auto& f = (*found)[i];
    f.insert(f.end(), extra[i].begin(), extra[i].end());
    std::sort(f.begin(), f.end(), [](const index::Neighbor& a, const index::Neighbor& b) {
      return a.distance < b.distance || (a.distance == b.distance && a.id < b.id);
    });
    absl::flat_hash_set<uint64_t> seen;
    auto dup = [&](const index::Neighbor& nb) { return !seen.insert(nb.id).second; };
    f.erase(std::remove_if(f.begin(), f.end(), dup), f.end());
    if (f.size() > k) f.resize(k);
  }
}

namespace {

// The ids a tenant sees (state.access), and when set an attribute filter's ids: checked id by id
// during a scan, so that a large tenant's search never materialises its id set.
// The tenant's two id sets are looked up once, not per candidate (AccessTable::Visible hashes
// the tenant id at each call). A tenant with at least kMinWindowIds ids gets them as a bitmap
// over [its smallest, its largest id] on the call's first check (none on the exact path): when
// they span at most kWindowFloorIds ids (a 256 KiB window), or at most kMaxIdsPerId per id it
// holds (32 bytes per id; internal ids are dense). A candidate's check is then one load, not a
// search of a CompactIdSet block: at 1M x 128, tenants of 2,048-4,095 of the ids spent ~30% of
// their scoped searches there before the floor (docs/PERFORMANCE.md).
// Per thread, the window words of the last TenantFilter destroyed (base/spare_vector.h).
thread_local std::vector<uint64_t> spare_window;

class TenantFilter final : public index::IdFilter {
 public:
  static constexpr size_t kMinWindowIds = 512;
  static constexpr uint64_t kMaxIdsPerId = 256, kWindowFloorIds = uint64_t{1} << 21;

  // attributes: the request's filter (a MatchFilter), null for none.
  TenantFilter(const tenants::AccessTable* access, tenants::TenantId tenant,
               const index::IdFilter* attributes)
      : owned_(access->Owned(tenant)), granted_(access->Granted(tenant)), attributes_(attributes) {}
  ~TenantFilter() override { base::GiveBackSpare(built_, spare_window); }
  TenantFilter(const TenantFilter&) = delete;  // window_ may point into built_
  TenantFilter& operator=(const TenantFilter&) = delete;
  // The tenant first: its check is a load, the filter's may be a few lookups (MatchFilter).
  bool Allows(uint64_t id) const override {
    return Sees(id) && (attributes_ == nullptr || attributes_->Allows(id));
  }
  // With the window and no attribute filter: the window's bits tested by the distance kernels'
  // SelectIdsInWindow, eight ids a step where the CPU has AVX-512, no call or branch per id (a
  // large tenant lists whole postings' ids through here, SpannIndex::TakeMembers).
  void AppendAllowed(std::span<const uint64_t> ids, std::vector<uint64_t>* out) const override {
    const std::span<const uint64_t> window = Window();
    if (window.empty() || attributes_ != nullptr) return IdFilter::AppendAllowed(ids, out);
    const size_t before = out->size();
    out->resize(before + ids.size());
    const size_t n = index::SelectIdsInWindow(ids.data(), ids.size(), first_, window.data(),
                                              window.size(), out->data() + before);
    out->resize(before + n);
  }

 private:
  bool Sees(uint64_t id) const {
    if (const std::span<const uint64_t> window = Window(); !window.empty()) {
      const uint64_t at = id - first_;  // wraps past the window's end below first_
      return id >= first_ && (at >> 6) < window.size() && ((window[at >> 6] >> (at & 63)) & 1);
    }
    return (owned_ != nullptr && owned_->contains(id)) ||
           (granted_ != nullptr && granted_->contains(id));
  }
  // The window, made on the first check (a tenant answered exactly checks none): bit (id -
  // first_), empty when the sets are checked instead.
  std::span<const uint64_t> Window() const {
    absl::call_once(made_, [this] { MakeWindow(); });
    return window_;
  }
  void MakeWindow() const {
    // The sets' extent, looked at here: a search that checks no id (a tenant's listed members)
    // does not read their cold blocks.
    const auto [lo, hi, n] = tenants::CompactIdSet::ExtentOf({owned_, granted_});
    if (n < kMinWindowIds || ((hi - lo) / kMaxIdsPerId > n && hi - lo > kWindowFloorIds)) {
      return;
    }
    // Ids in one set of one bitmap block (a tenant dense in a collection of under 2^16 ids):
    // tested in place, nothing to build.
    for (const auto* ids : {owned_, granted_}) {
      if (ids != nullptr && ids->size() == n) window_ = ids->SingleBitmap(&first_);
    }
    if (!window_.empty()) return;
    first_ = lo & ~uint64_t{63};
    base::TakeSpare(spare_window, built_);
    built_.assign((hi - first_) / 64 + 1, 0);
    for (const auto* ids : {owned_, granted_}) {
      if (ids != nullptr) ids->OrInto(first_, built_);
    }
    window_ = built_;
  }

  const tenants::AccessTable::IdSet* owned_;
  const tenants::AccessTable::IdSet* granted_;
  const index::IdFilter* attributes_;
  mutable absl::once_flag made_;
  mutable uint64_t first_ = 0;
  // A bitmap block's words, or built_.
  mutable std::span<const uint64_t> window_;
  mutable std::vector<uint64_t> built_;
};

// A filter's reach, estimated from kSamples live ids spread over the id space: how many of a
// tenant's `visible` ids pass (the filter taken as independent of the tenant), and how many ids
// its leaves match together (what Evaluate, which makes each leaf's bitmap, reads). What picks a
// large tenant's path (exact or scanned) and its listing without a bitmap over every id.
struct FilterReach {
  size_t passing = 0;
  double leaf_ids = 0;
};
FilterReach EstimateReach(const AttributeIndex& attrs, const AttributeIndex::Checker& checker,
                          size_t visible) {
  constexpr size_t kSamples = 128, kMaxProbes = 4 * kSamples;
  const uint64_t bound = attrs.id_bound();
  if (bound == 0) return {};
  // Ids at a golden-ratio stride: spread over the space, the same for every search.
  const uint64_t stride = 0x9E3779B97F4A7C15ull % bound;
  uint64_t at = 0;
  size_t live = 0, passing = 0, leaf_hits = 0;
  for (size_t probe = 0; probe < kMaxProbes && live < kSamples; ++probe) {
    at = (at + stride) % bound;
    if (!attrs.Live(at)) continue;
    ++live;
    passing += checker.Matches(at) ? 1 : 0;
    leaf_hits += checker.LeavesMatching(at);
  }
  if (live == 0) return {};
  const double share = static_cast<double>(passing) / static_cast<double>(live);
  return {.passing = static_cast<size_t>(std::ceil(static_cast<double>(visible) * share)),
          .leaf_ids = static_cast<double>(attrs.size()) * static_cast<double>(leaf_hits) /
                      static_cast<double>(live)};
}

// A filter checked id by id against the attribute index (an AttributeIndex::Checker), where the
// ids checked are few beside the collection: a tenant's listing and scan candidates
// (SearchPlanner::Search).
class MatchFilter final : public index::IdFilter {
 public:
  MatchFilter(const AttributeIndex& attrs, const Filter& filter)
      : checker_(attrs.MakeChecker(filter)) {}
  bool Allows(uint64_t id) const override { return checker_.Matches(id); }
  const AttributeIndex::Checker& checker() const { return checker_; }

 private:
  const AttributeIndex::Checker checker_;
};

// A filter bounded by one set of ids the attribute index keeps as such (AttributeIndex::LeafIds:
// a tag's, or a string's or a boolean's of an Eq), answered from it: that leaf alone (the
// commonest filters: a partition or tenant key), or an And of which one such operand holds few
// ids (a tag and a range, say). Its ids are the set's sorted ids, each also checked against the
// whole filter (an AttributeIndex::Checker) when the filter is more than the leaf; a candidate of a
// scan is checked the same way, a posting's ids against the set at once. Evaluate's bitmap over
// every id cost, at 1M ids, 16k words to clear, count and walk per search: about half of a small
// tag's filtered search; and an And through Evaluate passed over every record holding each of
// its leaves' attributes (docs/PERFORMANCE.md).
class SetFilter final : public index::IdFilter {
 public:
  // An And's set drives it while it holds at most this fraction of the live ids: the listing
  // checks each of its ids against the whole filter, where Evaluate passes over every id.
  static constexpr size_t kDrivingShare = 64;

  // The filter's driving set: the filter's own when it is such a leaf, else the And operand's
  // with the fewest ids when that is few enough; false when there is none. *ids: the set (null:
  // no live record is in it).
  static bool DrivingSet(const AttributeIndex& attrs, const Filter& filter,
                         const tenants::CompactIdSet** ids) {
    if (attrs.LeafIds(filter, ids)) return true;
    if (filter.op != Filter::Op::kAnd) return false;
    bool found = false;
    for (const Filter& f : filter.operands) {
      const tenants::CompactIdSet* set = nullptr;
      if (!attrs.LeafIds(f, &set)) continue;
      if (!found || set == nullptr || (*ids != nullptr && set->size() < (*ids)->size())) {
        *ids = set;
      }
      found = true;
    }
    return found && (*ids == nullptr || (*ids)->size() <= attrs.size() / kDrivingShare);
  }

  SetFilter(const AttributeIndex& attrs, const Filter& filter, const tenants::CompactIdSet* ids)
      : checker_(attrs.MakeChecker(filter)), ids_(ids), alone_(filter.op != Filter::Op::kAnd) {}
  bool Allows(uint64_t id) const override {
    return ids_ != nullptr && ids_->contains(id) && (alone_ || checker_.Matches(id));
  }
  void AppendAllowed(std::span<const uint64_t> ids, std::vector<uint64_t>* out) const override {
    if (ids_ == nullptr) return;
    thread_local std::vector<uint8_t> found;
    found.assign(ids.size(), 0);
    ids_->ContainsEach(ids, found.data());
    for (size_t i = 0; i < ids.size(); ++i) {
      if (found[i] && (alone_ || checker_.Matches(ids[i]))) out->push_back(ids[i]);
    }
  }
  size_t Count() const { return alone_ ? (ids_ != nullptr ? ids_->size() : 0) : Passing().size(); }
  // The ids that pass, ascending.
  void List(std::vector<uint64_t>* out) const {
    if (!alone_) {
      out->insert(out->end(), Passing().begin(), Passing().end());
    } else if (ids_ != nullptr) {
      ids_->ForEach([out](uint64_t id) { out->push_back(id); });
    }
  }

 private:
  // Not alone: the set's ids that pass the whole filter, listed on first use.
  const std::vector<uint64_t>& Passing() const {
    absl::call_once(listed_, [this] {
      if (ids_ == nullptr) return;
      ids_->ForEach([this](uint64_t id) { passing_.push_back(id); });
      checker_.KeepMatching(&passing_);
    });
    return passing_;
  }

  const AttributeIndex::Checker checker_;
  const tenants::CompactIdSet* ids_;
  const bool alone_;
  mutable absl::once_flag listed_;
  mutable std::vector<uint64_t> passing_;
};

}  // namespace

absl::StatusOr<std::vector<std::vector<index::Neighbor>>> SearchPlanner::Search(
    const CollectionState& state, const float* q, size_t n, const SearchParams& params,
    size_t threads, tenants::TenantId tenant) const {
  if (params.filter == nullptr && tenant == tenants::kNoTenant) {
    return SearchIndexes(state, q, n, params, threads, nullptr);
  }
  const tenants::CompactIdSet* driving = nullptr;
  if (tenant == tenants::kNoTenant &&
      SetFilter::DrivingSet(state.attrs, *params.filter, &driving)) {
    const SetFilter allow(state.attrs, *params.filter, driving);
    return SearchFiltered(state, q, n, params, threads, allow, allow.Count(),
                          [&](std::vector<uint64_t>* out) { allow.List(out); });
  }
  if (tenant == tenants::kNoTenant) {
    const index::IdBitmap attributes = state.attrs.Evaluate(*params.filter);
    return SearchFiltered(state, q, n, params, threads, attributes, attributes.Count(),
                          [&](std::vector<uint64_t>* out) {
                            attributes.ForEach([&](uint64_t id) { out->push_back(id); });
                          });
  }
  // A tenant: its visible ids (ANDed with the filter's). How many pass picks the path; the ids
  // are listed only for the exact path (a tenant of few vectors), straight from its sorted id
  // sets (no bitmap over every id to build and walk). A filter is checked id by id on the scan's
  // candidates (MatchFilter): its bitmap over every id cost ~1-5 ms at 1M ids (a Range, an
  // And), 60-300x a tenant's search (docs/PERFORMANCE.md). A tenant of at most 1/kDrivingShare
  // of the live ids counts all its ids as passing and lists them through the filter id by id
  // (the exact path, which its size picks anyway); a larger one estimates how many pass (it is
  // listed only when few do), and lists them through the filter's bitmap where the filter's
  // leaves match few ids, else id by id (EstimateReach).
  size_t passing = state.access.VisibleCount(tenant);
  std::optional<MatchFilter> matches;
  bool list_by_checker = true;  // else through the filter's bitmap
  if (params.filter != nullptr) {
    matches.emplace(state.attrs, *params.filter);
    if (passing > state.attrs.size() / SetFilter::kDrivingShare) {
      const FilterReach reach = EstimateReach(state.attrs, matches->checker(), passing);
      // A check costs about what Evaluate spends on two of the ids its leaves match (1M ids:
      // 100,000 checked ~2.5 ms; an And whose leaves match 600,000 evaluated ~6.7 ms).
      list_by_checker = 2.0 * static_cast<double>(passing) < reach.leaf_ids;
      passing = reach.passing;
    }
  }
  const TenantFilter allow(&state.access, tenant, matches.has_value() ? &*matches : nullptr);
  auto list = [&](std::vector<uint64_t>* out) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    const size_t first = out->size();
    for (const auto* ids : {state.access.Owned(tenant), state.access.Granted(tenant)}) {
      if (ids == nullptr) continue;
      const size_t sorted = out->size();
      ids->ForEach([&](uint64_t id) { out->push_back(id); });
      std::inplace_merge(out->begin() + first, out->begin() + sorted, out->end());
    }
    // (An id is owned or granted, not both; were it both, it would come once.)
    out->erase(std::unique(out->begin() + first, out->end()), out->end());
    if (!matches.has_value()) return;
    if (list_by_checker) return matches->checker().KeepMatching(out, first);
    const index::IdBitmap passes = state.attrs.Evaluate(*params.filter);
    out->erase(std::remove_if(out->begin() + first, out->end(),
                              [&](uint64_t id) { return !passes.Test(id); }),
               out->end());
  };
  // The tenant's lists hold the buffer's ids too: the SSD index's search leaves them to the
  // buffer's (they have no vector in its file).
  std::function<bool(uint64_t)> unindexed;
  if (state.buffer.size() > 0) {
    unindexed = [&state](uint64_t id)
                    ABSL_NO_THREAD_SAFETY_ANALYSIS { return state.buffer.Contains(id); };
  }
  const tenants::TenantScope scope(&state.tenant_tree, tenant, std::move(unindexed));
  return SearchFiltered(state, q, n, params, threads, allow, passing, list, &scope);
}

absl::StatusOr<std::vector<std::vector<index::Neighbor>>> SearchPlanner::SearchIndexes(
    const CollectionState& state, const float* q, size_t n, const SearchParams& params,
    size_t threads, const index::IdFilter* allow, const index::PostingScope* scope) const {
  index::SearchParameters p;
  p.k = params.k;
  p.threads = threads;
  p.filter = allow;
  p.stats = params.stats;
  const WriteBuffer& buffer = state.buffer;
  if (state.spann == nullptr) return buffer.Search(q, n, p);  // every vector, exactly
  index::SearchParameters ssd = p;
  ssd.skip = &state.stale;
  ssd.scope = scope;
  ssd.max_postings = params.max_postings;
  ssd.target_recall = params.target_recall;
  if (params.pruning_ratio > 0) ssd.pruning_ratio = params.pruning_ratio;
  // A large buffer is searched through the buckets of the tree leaves the SpannIndex navigated
  // to (write_buffer.h).
  std::vector<std::vector<uint32_t>> leaves;
  if (buffer.bucketed()) ssd.visited_leaves = &leaves;
  const index::VectorIndex& spann = *state.spann;
  SHOAL_ASSIGN_OR_RETURN(auto found, spann.Search(q, n, ssd));
  if (buffer.size() > 0) {
    if (buffer.bucketed()) p.leaves = &leaves;
    SHOAL_ASSIGN_OR_RETURN(auto extra, buffer.Search(q, n, p));
    MergeNeighbors(&found, extra, params.k);
  }
  return found;
}

absl::StatusOr<std::vector<std::vector<index::Neighbor>>> SearchPlanner::SearchFiltered(
    const CollectionState& state, const float* q, size_t n, const SearchParams& params,
    size_t threads, const index::IdFilter& allow, size_t passing,
    absl::FunctionRef<void(std::vector<uint64_t>*)> list_allowed,
    const index::PostingScope* scope) const {
  const size_t k = params.k;
  // Without an SSD index the buffer's scan is exact already.
  if (state.spann == nullptr) return SearchIndexes(state, q, n, params, threads, &allow);
  // A tenant is searched exactly when that touches fewer bytes than its scoped search is
  // expected to (SpannIndex::ExactIsCheaper: always for one without node counts, at most the
  // shortlist cap); a filter below (after its widening).
  const index::SpannKnobs knobs{.max_postings = params.max_postings,
                                .target_recall = params.target_recall};
  // The build calibrated target recall on unfiltered searches. A filter that passes a fraction s
  // of the vectors leaves about s of each posting's entries, so a search at the default scan
  // depth widens it by 1/s (at most 4x). (A tenant's scope already keeps the navigator to
  // postings that hold its vectors.)
  SearchParams widened = params;
  if (params.max_postings == 0 && scope == nullptr) {
    const double s = std::clamp(
        static_cast<double>(passing) / static_cast<double>(std::max<size_t>(1, state.id_of.size())),
        0.25, 1.0);
    const uint32_t m = state.spann->ResolveMaxPostings({.target_recall = params.target_recall});
    widened.max_postings = static_cast<uint32_t>(std::ceil(m / s));
  }
  // A filter goes exact while few ids pass, or while their full vectors weigh less than the codes
  // its widened scan reads.
  const bool exactly = scope != nullptr
                           ? state.spann->ExactIsCheaper(passing, k, *scope, knobs)
                           : passing <= std::max(kExactFilterIds, 64 * k) ||
                                 state.spann->FilterExactIsCheaper(passing, widened.max_postings);
  std::vector<uint64_t> allowed;  // listed for the exact path only
  if (exactly) {
    list_allowed(&allowed);
    return SearchAllowedExactly(state, q, n, k, threads, allowed, allow, params.stats);
  }
  SHOAL_ASSIGN_OR_RETURN(auto found, SearchIndexes(state, q, n, widened, threads, &allow, scope));
  // Queries whose nearest postings held fewer than k passing ids: answer them exactly.
  const size_t want = std::min(k, passing);
  std::vector<size_t> short_queries;
  std::vector<float> redo;
  for (size_t i = 0; i < n; ++i) {
    if (found[i].size() >= want) continue;
    short_queries.push_back(i);
    redo.insert(redo.end(), q + i * dimension_, q + (i + 1) * dimension_);
  }
  if (short_queries.empty()) return found;
  list_allowed(&allowed);
  SHOAL_ASSIGN_OR_RETURN(auto exact,
                         SearchAllowedExactly(state, redo.data(), short_queries.size(), k, threads,
                                              allowed, allow, params.stats));
  for (size_t j = 0; j < short_queries.size(); ++j) found[short_queries[j]] = std::move(exact[j]);
  return found;
}

absl::StatusOr<std::vector<std::vector<index::Neighbor>>> SearchPlanner::SearchAllowedExactly(
    const CollectionState& state, const float* q, size_t n, size_t k, size_t threads,
    std::span<const uint64_t> allowed, const index::IdFilter& allow, SearchStats* stats) const {
  // The buffer's rows are searched in place; only the SSD index's are read back.
  std::vector<uint64_t> to_read;
  to_read.reserve(allowed.size());
  for (uint64_t id : allowed) {
    if (!state.buffer.Contains(id)) to_read.push_back(id);
  }
  std::vector<std::vector<index::Neighbor>> found;
  if (state.spann != nullptr && state.spann->has_vector_file()) {
    // The quantized tier's full vectors: its RAM cache, else one batched read of vectors.dat
    // (not the records: RocksDB decodes whole records, attributes and tags included).
    found.resize(n);
    for (size_t i = 0; i < n; ++i) {
      SHOAL_RETURN_IF_ERROR(
          state.spann->SearchAmong(q + i * dimension_, k, to_read, &found[i], stats));
    }
  } else {
    index::FlatIndex passing(dimension_, IndexMetric(metric_));
    std::vector<float> scratch;
    // One batched read (a tenant's shortlist, or a selective filter's ids).
    SHOAL_ASSIGN_OR_RETURN(std::vector<std::optional<Record>> records,
                           store_->GetRecords(id_, to_read));
    for (size_t i = 0; i < to_read.size(); ++i) {
      if (records[i].has_value())
        passing.Add(to_read[i], IndexForm(metric_, records[i]->vector, &scratch));
    }
    if (stats != nullptr) stats->vectors_scored += n * allowed.size();
    found = passing.Search(q, n, k, threads);
  }
  if (state.buffer.size() > 0) {
    index::SearchParameters p;
    p.k = k;
    p.threads = threads;
    p.filter = &allow;
    SHOAL_ASSIGN_OR_RETURN(auto extra, state.buffer.Search(q, n, p));
    MergeNeighbors(&found, extra, k);
  }
  return found;
}

}  // namespace shoal::db

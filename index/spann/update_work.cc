#include "index/spann/update_work.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "index/postings/posting_navigator.h"
#include "index/postings/posting_split.h"

namespace shoal::index {
namespace {

// Keeps the entries whose `keep(i)` holds, in order.
template <typename Keep>
size_t Filter(WorkEntries* e, size_t dim, size_t code_bytes, Keep keep) {
  size_t out = 0;
  const size_t n = e->size();
  const bool full = !e->vecs.empty();
  const bool quant = !e->q.codes.empty();
  for (size_t i = 0; i < n; ++i) {
    if (!keep(i)) continue;
    if (out != i) {
      e->q.ids[out] = e->q.ids[i];
      if (full) std::copy_n(e->vecs.data() + i * dim, dim, e->vecs.data() + out * dim);
      if (quant) {
        e->q.sq_norms[out] = e->q.sq_norms[i];
        std::copy_n(e->q.codes.data() + i * code_bytes, code_bytes,
                    e->q.codes.data() + out * code_bytes);
      }
    }
    ++out;
  }
  e->q.ids.resize(out);
  if (full) e->vecs.resize(out * dim);
  if (quant) {
    e->q.sq_norms.resize(out);
    e->q.codes.resize(out * code_bytes);
  }
  e->has_idset = false;
  e->idset.clear();
  if (out != n) e->appendable = false;
  return n - out;
}

}  // namespace

UpdateWork::UpdateWork(SpannUpdater* up, const PostingDirectory& current, const DeadFn& dead,
                       SweepGc gc)
    : up_(up), index_(*up->index_), cur_(current), dead_(dead), gc_(gc), dim_(current.dim) {
  next_ = NextVersion(current);
}

size_t UpdateWork::live_postings() const {
  return std::count(next_->live.begin(), next_->live.end(), 1);
}

void UpdateWork::DeadHeld(std::vector<uint64_t>* out) const {
  // Every entry is looked at, not only postings with `dead` set: a tombstone erased while a
  // posting still holds it would let a search meet a deleted vector.
  auto held = [&](const std::vector<uint64_t>& ids) {
    for (uint64_t id : ids) {
      if (dead_(id)) out->push_back(id);
    }
  };
  for (const auto& [p, e] : touched_) {
    if (!next_->live[p]) continue;
    if (e.head != nullptr) e.head->ForEachSegment([&](const DecodedPosting& s) { held(s.ids); });
    held(e.q.ids);
  }
}

std::vector<std::vector<uint32_t>>& UpdateWork::MutableByLeaf() {
  if (by_leaf_ == nullptr) {
    by_leaf_ = std::make_shared<std::vector<std::vector<uint32_t>>>(*next_->by_leaf);
    next_->by_leaf = by_leaf_;
  }
  next_->reshaped = true;
  return *by_leaf_;
}

void UpdateWork::Whole(WorkEntries* e) const {
  if (e->head == nullptr) return;
  // With room for the entries a drain step appends, so that they do not reallocate it.
  WorkEntries whole;
  whole.q.ids.reserve(e->size() + AppendHeadroom(e->size()));
  whole.vecs.reserve(whole.q.ids.capacity() * dim_);
  auto add = [&](const std::vector<uint64_t>& ids, const std::vector<float>& vecs) {
    whole.q.ids.insert(whole.q.ids.end(), ids.begin(), ids.end());
    whole.vecs.insert(whole.vecs.end(), vecs.begin(), vecs.end());
  };
  e->head->ForEachSegment([&](const DecodedPosting& s) { add(s.ids, s.vectors); });
  add(e->q.ids, e->vecs);
  e->q.ids = std::move(whole.q.ids);
  e->vecs = std::move(whole.vecs);
  e->head = nullptr;
  e->head_n = 0;
}

void UpdateWork::DropDead(WorkEntries* e) {
  if (e->dead == 0) return;
  Whole(e);
  stats_.gc_entries +=
      Filter(e, dim_, e->q.code_bytes, [&](size_t i) { return !dead_(e->q.ids[i]); });
  e->dead = 0;
  e->dirty = true;
}

void UpdateWork::Encode(uint32_t p, const float* x, uint8_t* code) const {
  index_.quantizer()->Encode(x, next_->centroid(p), code);
}

absl::Status UpdateWork::Append(uint32_t p, uint64_t id, const float* x, bool known_new) {
  // Fresh vectors only go at the end: the entries before them need not be copied.
  SHOAL_ASSIGN_OR_RETURN(WorkEntries * e, Load(p, /*share=*/known_new));
  if (!known_new) {
    if (!e->has_idset) {
      e->idset.insert(e->q.ids.begin(), e->q.ids.end());
      e->has_idset = true;
    }
    if (!e->idset.insert(id).second) return absl::OkStatus();
  } else if (e->has_idset) {
    e->idset.insert(id);
  }
  e->q.ids.push_back(id);
  if (index_.quantizer() == nullptr) {
    e->vecs.insert(e->vecs.end(), x, x + dim_);
  } else {
    e->q.sq_norms.push_back(InnerProduct(x, x, dim_));
    e->q.codes.resize(e->q.codes.size() + e->q.code_bytes);
    Encode(p, x, e->q.codes.data() + e->q.codes.size() - e->q.code_bytes);
  }
  e->dirty = true;
  return absl::OkStatus();
}

absl::Status UpdateWork::Pace() {
  return up_->options_.yield ? up_->options_.yield() : absl::OkStatus();
}

void UpdateWork::Choose(const float* x, std::vector<uint32_t>* out) const {
  const SpannOptions& o = index_.manifest().options;
  const size_t m = std::max<size_t>(2 * o.replicas, 8);
  std::vector<std::pair<float, uint32_t>> cands;
  // A beam of m, as a search navigates: the build's wider 16 changed no recall after churn
  // (shoal_bench updates: 0.9972 at 100k, 0.9398 at 400k either way) and cost 15% of the
  // sustained insert rate (20.6k vs 23.9k/s at 400k).
  NearestPostings(index_.tree(), *next_, x, m, /*beam=*/m, next_->size() <= 256, &cands);
  out->clear();
  if (cands.empty()) return;
  out->push_back(cands[0].second);
  const float limit = o.closure * std::max(cands[0].first, 1e-12f);
  for (size_t j = 1; j < cands.size() && out->size() < o.replicas; ++j) {
    if (cands[j].first > limit) break;
    const float* cj = next_->centroid(cands[j].second);
    bool accept = true;
    for (uint32_t c : *out) {
      if (o.rng_factor * L2Sqr(cj, next_->centroid(c), dim_) <= cands[j].first) {
        accept = false;
        break;
      }
    }
    if (accept) out->push_back(cands[j].second);
  }
}

absl::Status UpdateWork::VectorsOf(const WorkEntries& e, std::vector<float>* out) {
  const size_t n = e.size();
  if (index_.quantizer() == nullptr) {
    *out = e.vecs;
    return absl::OkStatus();
  }
  out->resize(n * dim_);
  std::vector<uint64_t> missing;
  std::vector<size_t> where;
  for (size_t i = 0; i < n; ++i) {
    if (auto it = fresh_.find(e.q.ids[i]); it != fresh_.end()) {
      std::copy_n(it->second, dim_, out->data() + i * dim_);
    } else {
      missing.push_back(e.q.ids[i]);
      where.push_back(i);
    }
  }
  if (missing.empty()) return absl::OkStatus();
  return next_->vectors->ReadBatch(missing, [&](size_t i, const float* v) {
    std::copy_n(v, dim_, out->data() + where[i] * dim_);
    return absl::OkStatus();
  });
}

void UpdateWork::Assign(uint32_t p, std::vector<uint64_t> ids, const std::vector<float>& vecs) {
  WorkEntries& e = touched_[p];
  const PostingQuantizer* quant = index_.quantizer();
  e.q.ids = std::move(ids);
  e.has_idset = false;
  e.idset.clear();
  e.dirty = true;
  e.appendable = false;
  if (quant == nullptr) {
    e.vecs = vecs;
    return;
  }
  const size_t n = e.q.ids.size();
  e.q.code_bytes = quant->code_bytes();
  e.q.sq_norms.resize(n);
  e.q.codes.resize(n * e.q.code_bytes);
  for (size_t i = 0; i < n; ++i) {
    const float* x = vecs.data() + i * dim_;
    e.q.sq_norms[i] = InnerProduct(x, x, dim_);
    Encode(p, x, e.q.codes.data() + i * e.q.code_bytes);
  }
}

void UpdateWork::SetCentroid(uint32_t p, const float* centroid) {
  PostingDirectory& n = *next_;
  n.SetCentroid(p, centroid);
  if (n.prepared_dim != 0) {
    index_.quantizer()->Prepare(centroid, n.prepared.data() + size_t{p} * n.prepared_dim);
  }
}

uint32_t UpdateWork::AddPosting(uint32_t origin, const float* centroid) {
  PostingDirectory& n = *next_;
  const uint32_t q = static_cast<uint32_t>(n.size());
  n.own_slot.push_back(PostingDirectory::kTreeCentroid);
  n.prepared.resize(n.prepared.size() + n.prepared_dim);
  SetCentroid(q, centroid);
  storage::PostingRow row;
  row.posting = q;
  n.rows.push_back(row);
  n.serials.push_back(0);
  n.origin.push_back(origin);
  n.live.push_back(1);
  n.reserved.push_back(0);
  n.codes.push_back(nullptr);
  MutableByLeaf()[origin].push_back(q);
  touched_[q].dirty = true;
  return q;
}

absl::Status UpdateWork::SplitOverfull() {
  std::vector<uint32_t> over;
  for (const auto& [p, e] : touched_) {
    if (next_->live[p] && e.size() > up_->cap_) over.push_back(p);
  }
  for (uint32_t p : over) SHOAL_RETURN_IF_ERROR(Split(p, 0));
  return absl::OkStatus();
}

absl::Status UpdateWork::Split(uint32_t p, uint32_t depth) {
  SHOAL_ASSIGN_OR_RETURN(WorkEntries * e, Load(p));
  DropDead(e);
  const size_t n = e->size();
  if (n <= up_->cap_ || n < 2) return absl::OkStatus();
  std::vector<float> vecs;
  SHOAL_RETURN_IF_ERROR(VectorsOf(*e, &vecs));
  const std::vector<uint64_t> ids = e->q.ids;
  const std::vector<float> c0(next_->centroid(p), next_->centroid(p) + dim_);
  TwoMeans tm = BalancedTwoMeans(vecs.data(), n, dim_, /*iterations=*/8, /*balance=*/0.25f);
  SetCentroid(p, tm.centroid[0].data());
  MutableByLeaf();
  const uint32_t q = AddPosting(next_->origin[p], tm.centroid[1].data());
  ++stats_.splits;
  splits_.push_back({p, q});
  // LIRE condition 1: a vector no farther from the old centroid than from both new ones may now
  // belong to another posting altogether.
  std::vector<uint64_t> half_ids[2];
  std::vector<float> half_vecs[2];
  std::vector<std::pair<uint64_t, size_t>> moving;
  std::vector<uint32_t> chosen;
  for (size_t i = 0; i < n; ++i) {
    const float* x = vecs.data() + i * dim_;
    const float d0 = L2Sqr(x, c0.data(), dim_);
    if (d0 <= L2Sqr(x, tm.centroid[0].data(), dim_) &&
        d0 <= L2Sqr(x, tm.centroid[1].data(), dim_)) {
      Choose(x, &chosen);
      if (!chosen.empty() && chosen[0] != p && chosen[0] != q) {
        moving.emplace_back(chosen[0], i);
        continue;
      }
    }
    half_ids[tm.side[i]].push_back(ids[i]);
    half_vecs[tm.side[i]].insert(half_vecs[tm.side[i]].end(), x, x + dim_);
  }
  Assign(p, std::move(half_ids[0]), half_vecs[0]);
  Assign(q, std::move(half_ids[1]), half_vecs[1]);
  for (const auto& [target, i] : moving) {
    SHOAL_RETURN_IF_ERROR(Append(target, ids[i], vecs.data() + i * dim_, /*known_new=*/false));
    ++stats_.reassigned;
    moves_.push_back({ids[i], p, static_cast<uint32_t>(target)});
  }
  SHOAL_RETURN_IF_ERROR(ReassignNeighbours(p, q, c0, depth));
  if (depth + 1 >= up_->options_.max_cascade) return absl::OkStatus();
  std::vector<uint32_t> over;
  for (const auto& [t, te] : touched_) {
    if (next_->live[t] && te.size() > up_->cap_) over.push_back(t);
  }
  for (uint32_t t : over) SHOAL_RETURN_IF_ERROR(Split(t, depth + 1));
  return absl::OkStatus();
}

// LIRE condition 2: a vector of a nearby posting moves to the nearer half when a new centroid is
// closer to it than its own posting's centroid.
absl::Status UpdateWork::ReassignNeighbours(uint32_t p, uint32_t q,
                                            const std::vector<float>& old_centroid,
                                            uint32_t depth) {
  std::vector<std::pair<float, uint32_t>> near;
  NearestPostings(index_.tree(), *next_, old_centroid.data(), up_->options_.reassign_postings + 2,
                  16, next_->size() <= 256, &near);
  const float* c[2] = {next_->centroid(p), next_->centroid(q)};
  for (const auto& [unused, b] : near) {
    if (b == p || b == q) continue;
    SHOAL_ASSIGN_OR_RETURN(WorkEntries * e, Load(b));
    if (e->size() == 0) continue;
    std::vector<float> vecs;
    SHOAL_RETURN_IF_ERROR(VectorsOf(*e, &vecs));
    const float* cb = next_->centroid(b);
    std::vector<uint8_t> move(e->size(), 0);
    std::vector<std::pair<uint32_t, size_t>> moves;
    for (size_t i = 0; i < e->size(); ++i) {
      const float* x = vecs.data() + i * dim_;
      if (e->dead > 0 && dead_(e->q.ids[i])) continue;  // dropped when b is rewritten
      const float db = L2Sqr(x, cb, dim_);
      const float d1 = L2Sqr(x, c[0], dim_), d2 = L2Sqr(x, c[1], dim_);
      if (std::min(d1, d2) < db) {
        move[i] = 1;
        moves.emplace_back(d1 <= d2 ? p : q, i);
      }
    }
    if (moves.empty()) continue;
    std::vector<uint64_t> ids = e->q.ids;
    Filter(e, dim_, e->q.code_bytes, [&](size_t i) { return !move[i]; });
    e->dirty = true;
    for (const auto& [target, i] : moves) {
      SHOAL_RETURN_IF_ERROR(Append(target, ids[i], vecs.data() + i * dim_, /*known_new=*/false));
      ++stats_.reassigned;
      moves_.push_back({ids[i], b, target});
    }
  }
  (void)depth;
  return absl::OkStatus();
}

absl::Status UpdateWork::Merge(uint32_t p) {
  SHOAL_ASSIGN_OR_RETURN(WorkEntries * e, Load(p));
  DropDead(e);
  std::vector<float> vecs;
  SHOAL_RETURN_IF_ERROR(VectorsOf(*e, &vecs));
  const std::vector<uint64_t> ids = e->q.ids;
  next_->live[p] = 0;
  auto& siblings = MutableByLeaf()[next_->origin[p]];
  siblings.erase(std::remove(siblings.begin(), siblings.end(), p), siblings.end());
  touched_.erase(p);
  removed_.push_back(p);
  ++stats_.merges;
  std::vector<uint32_t> chosen;
  for (size_t i = 0; i < ids.size(); ++i) {
    const float* x = vecs.data() + i * dim_;
    Choose(x, &chosen);
    for (uint32_t t : chosen) {
      SHOAL_RETURN_IF_ERROR(Append(t, ids[i], x, /*known_new=*/false));
      moves_.push_back({ids[i], p, t});
    }
    ++stats_.reassigned;
  }
  return absl::OkStatus();
}

void UpdateWork::Recache(uint64_t old_serial, uint64_t new_serial, WorkEntries& e) const {
  // The entries are written and not needed again: the cache takes them, copied only when they
  // carry much unused capacity (the cache charges capacity); appended ones chain onto the posting
  // as cached before (a few segments at most). Init-captures: clang 14 cannot capture a
  // structured binding.
  if (index_.quantizer() == nullptr) {
    index_.RecacheRewritten(old_serial, new_serial, [this, &entries = e] {
      if (entries.head != nullptr && entries.head->segments() >= kMaxCachedSegments)
        Whole(&entries);
      if (Spare(entries.q.ids)) {
        return DecodedPosting{dim_, entries.q.ids, entries.vecs, entries.head};
      }
      return DecodedPosting{dim_, std::move(entries.q.ids), std::move(entries.vecs),
                            std::move(entries.head)};
    });
  } else {
    index_.RecacheRewrittenCodes(old_serial, new_serial, [&codes = e.q] {
      if (Spare(codes.ids)) return QuantizedPosting(codes);
      return QuantizedPosting(std::move(codes));
    });
  }
}

std::vector<uint8_t> UpdateWork::Encode(const WorkEntries& e, size_t begin, size_t end) const {
  if (index_.quantizer() != nullptr) {
    return EncodeQuantizedEntries(e.q, index_.keeps_norms(), begin, end);
  }
  // Entries [begin, end) are e's own from head_n on (a shared head is only ever appended after).
  begin -= e.head_n;
  end -= e.head_n;
  std::vector<const float*> rows;
  for (size_t i = begin; i < end; ++i) rows.push_back(e.vecs.data() + i * dim_);
  return EncodePostingEntries(std::span(e.q.ids).subspan(begin, end - begin), rows, dim_);
}

absl::StatusOr<storage::Extent> UpdateWork::WritePosting(uint32_t p, WorkEntries& e,
                                                         std::vector<storage::Extent>* allocated,
                                                         bool* appended) {
  PostingDirectory& n = *next_;
  *appended = false;
  if (up_->options_.append_in_place && e.appendable && e.size() > e.base) {
    // Only entries were added: write them as one more segment after the extent, into the pages
    // kept for this posting, unless that would leave too many partly filled pages behind.
    const storage::PostingRow& old = cur_.rows[p];
    const std::vector<uint8_t> segment = Encode(e, e.base, e.size());
    const uint32_t more = storage::PostingPages(segment.size());
    const uint64_t bytes = uint64_t{old.bytes} + segment.size();
    const uint32_t packed = storage::PostingPages(bytes);
    if (more <= cur_.reserved[p] && bytes < UINT32_MAX &&
        old.num_pages + more <= packed + AppendSlack(packed)) {
      SHOAL_ASSIGN_OR_RETURN(
          storage::Extent tail,
          up_->writer_->WriteAt(old.first_page + old.num_pages, p, segment, old.num_pages));
      n.reserved[p] = cur_.reserved[p] - more;
      *appended = true;
      ++stats_.posting_appends;
      stats_.posting_bytes_written += uint64_t{tail.num_pages} * storage::kPageSize;
      return storage::Extent{old.first_page, old.num_pages + more, static_cast<uint32_t>(bytes)};
    }
  }
  DropDead(&e);  // a rewrite costs the same with or without them
  Whole(&e);
  const std::vector<uint8_t> payload = Encode(e, 0, e.size());
  const uint32_t pages = storage::PostingPages(payload.size());
  const uint32_t slack = up_->options_.append_in_place ? AppendSlack(pages) : 0;
  const uint64_t first = up_->pages_->Allocate(pages + slack);
  allocated->push_back({first, pages + slack, 0});
  SHOAL_ASSIGN_OR_RETURN(storage::Extent ext, up_->writer_->WriteAt(first, p, payload));
  n.reserved[p] = slack;
  stats_.posting_bytes_written += uint64_t{pages} * storage::kPageSize;
  return ext;
}

}  // namespace shoal::index

// UpdateWork's reads of postings (update_work.h): Load, and Prefetch, which reads the postings a
// drain step is about to append to in one batch instead of one read after another.
#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "index/spann/update_work.h"

namespace shoal::index {

absl::StatusOr<WorkEntries*> UpdateWork::Load(uint32_t p, bool share) {
  if (WorkEntries* e = LoadHeld(p, share)) return e;
  std::vector<WorkEntries> read;
  SHOAL_RETURN_IF_ERROR(ReadPostings(std::span(&p, 1), &read));
  return Admit(p, std::move(read[0]));
}

WorkEntries* UpdateWork::LoadHeld(uint32_t p, bool share) {
  if (auto it = touched_.find(p); it != touched_.end()) {
    if (!share) Whole(&it->second);
    return &it->second;
  }
  WorkEntries e;
  const PostingQuantizer* quant = index_.quantizer();
  if (p >= cur_.size() || !cur_.live[p]) {
    // A posting made by this change: starts empty.
  } else if (quant != nullptr && next_->codes[p] != nullptr) {
    e.q = *next_->codes[p];
    quant->Unpack(&e.q);
  } else if (auto hit = quant == nullptr ? index_.CachedPosting(next_->serials[p]) : nullptr) {
    // An extent's content never changes: the search cache's copy is the posting.
    e.head = std::move(hit);
    e.head_n = e.head->total();
    if (!share) Whole(&e);
  } else if (auto codes = quant != nullptr ? index_.CachedCodes(next_->serials[p]) : nullptr) {
    e.q = *codes;
    quant->Unpack(&e.q);
  } else {
    return nullptr;  // on the SSD only
  }
  return Admit(p, std::move(e));
}

absl::Status UpdateWork::Prefetch(std::span<const uint32_t> postings) {
  // Those held are admitted as they are found (one cache lookup each, not one here and another
  // when Load reaches them); the rest are read together.
  std::vector<uint32_t> want;
  for (uint32_t p : postings) {
    if (LoadHeld(p, /*share=*/true) == nullptr) want.push_back(p);
  }
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  if (want.empty()) return absl::OkStatus();
  std::vector<WorkEntries> read;
  SHOAL_RETURN_IF_ERROR(ReadPostings(want, &read));
  for (size_t i = 0; i < want.size(); ++i) Admit(want[i], std::move(read[i]));
  return absl::OkStatus();
}

void UpdateWork::ReserveAppends(std::span<const uint32_t> postings) {
  absl::flat_hash_map<uint32_t, size_t> repeats;
  for (uint32_t p : postings) ++repeats[p];
  const bool full = index_.quantizer() == nullptr;
  for (const auto& [p, n] : repeats) {
    auto it = touched_.find(p);
    if (it == touched_.end()) continue;
    WorkEntries& e = it->second;
    e.q.ids.reserve(e.q.ids.size() + n);
    if (full) {
      e.vecs.reserve(e.vecs.size() + n * dim_);
    } else {
      e.q.sq_norms.reserve(e.q.sq_norms.size() + n);
      e.q.codes.reserve(e.q.codes.size() + n * e.q.code_bytes);
    }
  }
}

absl::Status UpdateWork::ReadPostings(std::span<const uint32_t> postings,
                                      std::vector<WorkEntries>* out) {
  const PostingQuantizer* quant = index_.quantizer();
  std::vector<storage::ReadRequest> reads;
  std::vector<storage::Extent> extents;
  for (uint32_t p : postings) {
    const storage::PostingRow& r = next_->rows[p];
    extents.push_back({r.first_page, r.num_pages, r.bytes});
    reads.push_back(storage::ExtentRequest(extents.back()));
  }
  out->clear();
  out->resize(postings.size());
  return index_.posting_reader()->ReadBatch(
      reads, [&](size_t i, std::span<const uint8_t> pages) -> absl::Status {
        const uint32_t p = postings[i];
        std::vector<uint8_t> payload;  // DecodePosting appends
        SHOAL_RETURN_IF_ERROR(
            storage::DecodePosting(pages, extents[i], p, index_.posting_path(), &payload));
        const std::string where = absl::StrCat(index_.posting_path(), " posting ", p);
        WorkEntries& e = (*out)[i];
        if (quant != nullptr) {  // codes not resident in RAM
          return DecodeQuantizedEntries(payload, quant->code_bytes(), index_.keeps_norms(), where,
                                        &e.q);
        }
        DecodedPosting decoded;
        SHOAL_RETURN_IF_ERROR(DecodePostingEntries(payload, dim_, where, &decoded));
        e.q.ids = std::move(decoded.ids);
        e.vecs = std::move(decoded.vectors);
        return absl::OkStatus();
      });
}

WorkEntries* UpdateWork::Admit(uint32_t p, WorkEntries e) {
  if (const PostingQuantizer* quant = index_.quantizer()) e.q.code_bytes = quant->code_bytes();
  e.appendable = p < cur_.size() && cur_.live[p];
  auto count_dead = [&](const std::vector<uint64_t>& ids) {
    e.dead += static_cast<size_t>(
        std::count_if(ids.begin(), ids.end(), [&](uint64_t id) { return dead_(id); }));
  };
  if (e.head != nullptr)
    e.head->ForEachSegment([&](const DecodedPosting& s) { count_dead(s.ids); });
  count_dead(e.q.ids);
  // A drain keeps a few tombstoned entries: dropping them would turn an append of the new
  // entries into a rewrite of the whole posting (measured: most posting bytes written during a
  // churn of inserts and deletes); the posting's next rewrite, or a full sweep, drops them.
  if (gc_ == SweepGc::kAll || ManyDead(e.dead, e.size())) DropDead(&e);
  e.base = e.size();
  return &touched_.emplace(p, std::move(e)).first->second;
}

}  // namespace shoal::index

// Collection: Count, Scroll and DeleteByFilter (shoal/db.h "Records by filter"), and the
// attributes of search hits.
//
// Scroll walks the key map in RocksDB ("keys" family, ordered by key), not the records family:
// records are ordered by internal id there, and a rewritten record gets a new id, so a scroll in
// id order would meet it twice. Each key is then checked against the in-memory state (the
// current id, the tenant's access, the filter through AttributeIndex::Matches) and the page's
// records are read in one batch.
#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/collection.h"
#include "db/scroll_token.h"
#include "db/validation.h"
#include "shoal/filter.h"

namespace shoal::db {
namespace {

constexpr size_t kScrollChunk = 1024;            // key rows checked per hold of the state's lock
constexpr size_t kScrollMaxExamined = 64 << 10;  // key rows one page may read

absl::Status ValidateOptionalFilter(const Filter* filter) {
  return filter != nullptr ? ValidateFilter(*filter) : absl::OkStatus();
}

void Trim(Record& r, bool with_vectors, bool with_attributes) {
  if (!with_vectors) std::vector<float>().swap(r.vector);
  if (!with_attributes) {
    r.attributes.clear();
    r.tags.clear();
  }
}

}  // namespace

absl::StatusOr<tenants::TenantId> Collection::TenantIdOf(std::string_view tenant) const {
  if (tenant.empty()) return tenants::kNoTenant;
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<TenantEntry> t, FindTenant(tenant));
  return t->meta.id;
}

std::optional<uint64_t> Collection::PassingId(const Key& key, tenants::TenantId reader,
                                              const Filter* filter) const {
  const uint64_t* iid = state_.id_of.Find(key);
  if (iid == nullptr) return std::nullopt;
  if (reader != tenants::kNoTenant && !state_.access.Visible(reader, *iid)) return std::nullopt;
  if (filter != nullptr && !state_.attrs.Matches(*filter, *iid)) return std::nullopt;
  return *iid;
}

absl::StatusOr<uint64_t> Collection::Count(const Filter* filter, const ReadOptions& options) const {
  SHOAL_RETURN_IF_ERROR(ValidateOptionalFilter(filter));
  absl::ReaderMutexLock lock(&state_.mu);
  SHOAL_ASSIGN_OR_RETURN(const tenants::TenantId reader, TenantIdOf(options.tenant));
  if (filter == nullptr) {
    return reader == tenants::kNoTenant ? state_.id_of.size() : state_.access.VisibleCount(reader);
  }
  const index::IdBitmap passing = state_.attrs.Evaluate(*filter);
  if (reader == tenants::kNoTenant) return passing.Count();
  uint64_t n = 0;
  for (const auto* ids : {state_.access.Owned(reader), state_.access.Granted(reader)}) {
    if (ids == nullptr) continue;
    ids->ForEach([&](uint64_t id) { n += passing.Test(id) ? 1 : 0; });
  }
  return n;
}

absl::StatusOr<ScrollPage> Collection::Scroll(const Filter* filter, const ScrollOptions& scroll,
                                              const ReadOptions& options) const {
  if (scroll.limit == 0 || scroll.limit > kMaxScrollLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit: ", scroll.limit, " is not in 1..", kMaxScrollLimit));
  }
  SHOAL_RETURN_IF_ERROR(ValidateOptionalFilter(filter));
  std::optional<Key> after;
  if (!scroll.page_token.empty()) {
    SHOAL_ASSIGN_OR_RETURN(after, DecodeScrollToken(scroll.page_token));
  }
  tenants::TenantId reader;
  {
    absl::ReaderMutexLock lock(&state_.mu);
    SHOAL_ASSIGN_OR_RETURN(reader, TenantIdOf(options.tenant));
  }
  std::vector<Key> chosen;  // the page's keys, in key order
  std::vector<Key> chunk;   // key rows read but not yet checked
  std::optional<Key> last;  // the last key checked
  bool more = false;        // key rows may follow `last`
  size_t examined = 0;
  auto check_chunk = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    absl::ReaderMutexLock lock(&state_.mu);
    size_t i = 0;
    for (; i < chunk.size() && chosen.size() < scroll.limit; ++i) {
      if (PassingId(chunk[i], reader, filter).has_value()) chosen.push_back(chunk[i]);
      last = chunk[i];
    }
    more = more || i < chunk.size();
    chunk.clear();
  };
  SHOAL_RETURN_IF_ERROR(store_->ScanKeysAfter(
      id_, after ? &*after : nullptr, [&](Key&& key, uint64_t) -> absl::StatusOr<bool> {
        if (chosen.size() == scroll.limit) {
          more = true;
          return false;
        }
        chunk.push_back(std::move(key));
        if (chunk.size() == kScrollChunk) check_chunk();
        if (++examined < kScrollMaxExamined) return true;
        check_chunk();
        more = true;  // a selective filter: a short page, and the token goes on from here
        return false;
      }));
  check_chunk();
  ScrollPage page;
  SHOAL_ASSIGN_OR_RETURN(page.records, ReadCurrent(chosen, reader, filter, scroll));
  if (more && last.has_value()) page.next_page_token = EncodeScrollToken(*last);
  return page;
}

absl::StatusOr<std::vector<Record>> Collection::ReadCurrent(const std::vector<Key>& keys,
                                                            tenants::TenantId reader,
                                                            const Filter* filter,
                                                            const ScrollOptions& scroll) const {
  std::vector<std::optional<Record>> found(keys.size());
  std::vector<size_t> pending(keys.size());
  std::iota(pending.begin(), pending.end(), size_t{0});
  // A key rewritten between its lookup and the read has a new id by the next lookup; a deleted
  // one is gone from the key map. Three rounds settle all but a key rewritten over and over.
  for (int round = 0; round < 3 && !pending.empty(); ++round) {
    std::vector<size_t> which;
    std::vector<uint64_t> ids;
    {
      absl::ReaderMutexLock lock(&state_.mu);
      for (size_t p : pending) {
        if (std::optional<uint64_t> iid = PassingId(keys[p], reader, filter)) {
          which.push_back(p);
          ids.push_back(*iid);
        }
      }
    }
    SHOAL_ASSIGN_OR_RETURN(std::vector<std::optional<Record>> records,
                           store_->GetRecords(id_, ids));
    pending.clear();
    for (size_t j = 0; j < which.size(); ++j) {
      if (records[j].has_value()) {
        found[which[j]] = std::move(records[j]);
      } else {
        pending.push_back(which[j]);
      }
    }
  }
  std::vector<Record> out;
  out.reserve(keys.size());
  for (std::optional<Record>& r : found) {
    if (!r.has_value()) continue;
    Trim(*r, scroll.with_vectors, scroll.with_attributes);
    out.push_back(*std::move(r));
  }
  return out;
}

std::vector<uint64_t> Collection::MatchingIds(const Filter* filter, tenants::TenantId owner) const {
  std::vector<uint64_t> ids;
  if (owner != tenants::kNoTenant) {
    if (const auto* owned = state_.access.Owned(owner)) {
      owned->ForEach([&](uint64_t id) { ids.push_back(id); });
      if (filter != nullptr) state_.attrs.MakeChecker(*filter).KeepMatching(&ids);
    }
  } else if (filter != nullptr) {
    state_.attrs.Evaluate(*filter).ForEach([&](uint64_t id) { ids.push_back(id); });
  } else {
    state_.key_of.ForEach([&](uint64_t id, const Key&) { ids.push_back(id); });
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

absl::StatusOr<uint64_t> Collection::DeleteByFilter(const Filter* filter,
                                                    const WriteOptions& options) {
  SHOAL_RETURN_IF_ERROR(ValidateOptionalFilter(filter));
  std::vector<uint64_t> ids;  // what matches now; ids are never reused
  {
    absl::ReaderMutexLock lock(&state_.mu);
    SHOAL_ASSIGN_OR_RETURN(const tenants::TenantId owner, TenantIdOf(options.tenant));
    ids = MatchingIds(filter, owner);
  }
  uint64_t deleted = 0;
  auto idle = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return in_flight_.empty(); };
  for (size_t begin = 0; begin < ids.size(); begin += kDeleteByFilterBatch) {
    const size_t end = std::min(ids.size(), begin + kDeleteByFilterBatch);
    // Writers wait for one batch at a time, not for the whole call.
    absl::MutexLock write_lock(&write_mu_, absl::Condition(&idle));
    SHOAL_RETURN_IF_ERROR(CheckNotDropped());
    std::vector<uint64_t> live;
    auto batch = store_->NewBatch();
    {
      absl::ReaderMutexLock lock(&state_.mu);
      for (size_t i = begin; i < end; ++i) {
        const Key* key = state_.key_of.Find(ids[i]);
        if (key == nullptr) continue;  // deleted or rewritten since the call started
        live.push_back(ids[i]);
        AddDeleteRows(ids[i], *key, &batch);
      }
    }
    if (live.empty()) continue;
    if (absl::Status s = store_->Commit(batch, options.sync); !s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat(s.message(), " (DeleteByFilter had deleted ", deleted,
                                       " records before this batch failed; "
                                       "run it again to finish)"));
    }
    absl::MutexLock lock(&state_.mu);
    ApplyDeletes(live);
    deleted += live.size();
  }
  if (deleted == 0) SHOAL_RETURN_IF_ERROR(SyncIfAsked(options));
  return deleted;
}

absl::Status Collection::FillHits(std::vector<std::vector<Hit>>* hits,
                                  const std::vector<std::vector<uint64_t>>& ids,
                                  const SearchParams& params) const {
  std::vector<uint64_t> all;
  for (const auto& per_query : ids) all.insert(all.end(), per_query.begin(), per_query.end());
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::optional<Record>> records, store_->GetRecords(id_, all));
  size_t next = 0;
  for (std::vector<Hit>& per_query : *hits) {
    std::vector<Hit> kept;
    kept.reserve(per_query.size());
    for (Hit& hit : per_query) {
      std::optional<Record>& r = records[next++];
      if (!r.has_value()) continue;  // deleted or replaced while the search ran
      if (params.with_attributes) {
        hit.attributes = std::move(r->attributes);
        hit.tags = std::move(r->tags);
      }
      if (params.with_vectors) hit.vector = std::move(r->vector);
      kept.push_back(std::move(hit));
    }
    per_query = std::move(kept);
  }
  return absl::OkStatus();
}

}  // namespace shoal::db

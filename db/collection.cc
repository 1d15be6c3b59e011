#include "db/collection.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/validation.h"
#include "db/write_scheduling.h"
#include "shoal/filter.h"

namespace shoal::db {
namespace {

// A filtered search over a SpannIndex is answered exactly when at most max(this, 64 k) ids pass:
// reading that many records back costs about what a SPANN query does.
constexpr size_t kExactFilterIds = 2048;

index::Metric IndexMetric(Metric m) {
  return m == Metric::kL2 ? index::Metric::kL2 : index::Metric::kInnerProduct;
}

// Merges `extra` into `found` query by query, keeping the k closest (ties: smaller id), each id
// once: a drained vector leaves the buffer in slices after the postings holding it are published,
// so both may return it meanwhile.
void MergeInto(std::vector<std::vector<index::Neighbor>>* found,
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

void Normalize(const float* v, size_t n, float* out) {
  double norm = 0;
  for (size_t i = 0; i < n; ++i) norm += static_cast<double>(v[i]) * v[i];
  const float inv = static_cast<float>(1.0 / std::sqrt(norm));
  for (size_t i = 0; i < n; ++i) out[i] = v[i] * inv;
}

}  // namespace

// Claims the keys of one write: waits (holding nothing) until no write in flight holds any of
// them, then holds write_mu_ until Unlock(). The keys stay claimed until destruction, after the
// write is applied.
class Collection::KeyClaim {
 public:
  KeyClaim(Collection* c, std::vector<Key> keys) ABSL_NO_THREAD_SAFETY_ANALYSIS
      : c_(c),
        keys_(std::move(keys)) {
    auto free = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      for (const Key& k : keys_) {
        if (c_->in_flight_.contains(k)) return false;
      }
      return true;
    };
    c_->write_mu_.LockWhen(absl::Condition(&free));
    c_->in_flight_.insert(keys_.begin(), keys_.end());
  }
  void Unlock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    c_->write_mu_.Unlock();
    locked_ = false;
  }
  ~KeyClaim() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (!locked_) c_->write_mu_.Lock();
    for (const Key& k : keys_) c_->in_flight_.erase(k);
    c_->write_mu_.Unlock();
  }

 private:
  Collection* const c_;
  const std::vector<Key> keys_;
  bool locked_ = true;
};

Collection::Collection(storage::RecordStore* store, const storage::StoredCollection& meta,
                       const Options& options, const std::string& index_root,
                       storage::FileSystem* fs, MaintenanceBudget* budget)
    : store_(store),
      id_(meta.id),
      spec_(meta.spec),
      options_(options),
      index_root_(index_root),
      fs_(fs),
      next_internal_id_(meta.next_internal_id),
      budget_(budget),
      flat_(meta.spec.dimension, IndexMetric(meta.spec.metric)) {}

absl::StatusOr<std::unique_ptr<Collection>> Collection::Load(
    storage::RecordStore* store, const storage::StoredCollection& meta, const Options& options,
    const std::string& index_root, storage::FileSystem* fs, MaintenanceBudget* budget) {
  auto c =
      std::unique_ptr<Collection>(new Collection(store, meta, options, index_root, fs, budget));
  absl::MutexLock write_lock(&c->write_mu_);
  absl::MutexLock work_lock(&c->work_mu_);
  {
    absl::MutexLock lock(&c->mu_);
    SHOAL_ASSIGN_OR_RETURN(std::optional<storage::StoredIndex> stored, store->LoadIndex(meta.id));
    if (stored.has_value()) SHOAL_RETURN_IF_ERROR(c->OpenIndex(*stored));
    SHOAL_RETURN_IF_ERROR(c->LoadRecords());
  }
  SHOAL_RETURN_IF_ERROR(c->StartUpdates());
  return c;
}

CollectionInfo Collection::Info() const {
  index::UpdateStats stats;
  {
    // Not under mu_: a wait for handoff_mu_ (the maintenance thread takes it) holding mu_
    // would hold up writers, and searches behind them.
    absl::MutexLock handoff_lock(&handoff_mu_);
    stats = update_stats_;
  }
  absl::ReaderMutexLock lock(&mu_);
  CollectionInfo info{spec_, id_of_.size()};
  info.index = spann_ ? index::SpannSpecString(spann_->manifest().options) : "flat";
  info.index_ram_bytes = BufferMemoryBytes() + (spann_ ? spann_->MemoryBytes() : 0);
  info.unindexed_vectors = spann_ ? BufferSize() : 0;
  info.tombstones = stale_.size();
  if (spann_ != nullptr) {
    const auto dir = spann_->directory();
    info.postings = std::count(dir->live.begin(), dir->live.end(), 1);
  }
  info.posting_splits = stats.splits;
  info.posting_merges = stats.merges;
  info.vectors_reassigned = stats.reassigned;
  info.vector_file_compactions = stats.vector_compactions;
  info.posting_appends = stats.posting_appends;
  info.posting_bytes_written = stats.posting_bytes_written;
  return info;
}

const float* IndexForm(Metric metric, const std::vector<float>& v, std::vector<float>* scratch) {
  if (metric != Metric::kCosine) return v.data();
  scratch->resize(v.size());
  Normalize(v.data(), v.size(), scratch->data());
  return scratch->data();
}

const float* Collection::IndexForm(const std::vector<float>& v, std::vector<float>* scratch) const {
  return db::IndexForm(spec_.metric, v, scratch);
}

absl::Status Collection::CheckNotDropped() const {
  if (dropped_)
    return absl::NotFoundError(absl::StrCat("collection: '", spec_.name, "' not found"));
  return absl::OkStatus();
}

absl::Status Collection::Upsert(std::span<const Record> records, const WriteOptions& options) {
  SHOAL_RETURN_IF_ERROR(ValidateRecords(spec_, records, options_));
  BatchScheduledScope batch_scheduled(options_.batch_scheduled_writes);  // write_scheduling.h
  std::vector<Key> keys;
  keys.reserve(records.size());
  for (const Record& r : records) keys.push_back(r.key);
  KeyClaim claim(this, std::move(keys));
  SHOAL_RETURN_IF_ERROR(CheckNotDropped());
  SHOAL_RETURN_IF_ERROR(AwaitBacklog());
  // Every record gets a fresh internal id (an id's vector never changes, so a copy of it left in
  // a posting is never wrong); a replaced record's old id is tombstoned.
  std::vector<uint64_t> ids(records.size());
  std::vector<std::optional<uint64_t>> old(records.size());
  uint64_t next = next_internal_id_;
  bool indexed;  // a SpannIndex exists: replaced ids are tombstoned
  const index::SpannIndex* spann;
  auto batch = store_->NewBatch();
  {
    absl::ReaderMutexLock lock(&mu_);
    spann = spann_.get();
    indexed = spann_ != nullptr;
    for (size_t i = 0; i < records.size(); ++i) {
      ids[i] = next++;
      if (const uint64_t* iid = id_of_.Find(records[i].key)) {
        old[i] = *iid;
        batch.DeleteRecordRow(id_, *iid);
        if (indexed) batch.MarkStale(id_, *iid);
      }
      batch.PutRecord(id_, ids[i], records[i], /*new_key=*/true);
    }
  }
  batch.SetNextInternalId(id_, next);
  // Ids are taken even if the commit fails: a failed batch may still be found after a reopen
  // (its outcome is unknown), so its ids must never name other records.
  next_internal_id_ = next;
  // With online updates the batch goes to the maintenance thread too (pending_).
  const bool handoff = indexed && options_.index_update_threads != 0;
  if (handoff) {
    // Until they are pending, these ids hold the watermark of online updates below them
    // (batches commit and apply in any order). A failed commit leaves them there: its outcome
    // is unknown until a reopen re-reads the records.
    absl::MutexLock handoff_lock(&handoff_mu_);
    unapplied_.insert(ids[0]);
  }
  const uint64_t first_id = ids[0];
  claim.Unlock();  // commit (and fsync) beside other writers: group commit
  SHOAL_RETURN_IF_ERROR(store_->Commit(batch, options.sync));

  // The index form and buffer bucket of each vector, before the exclusive lock (the SpannIndex
  // stays while this write is in flight: builds and drops wait for it).
  const size_t dim = spec_.dimension;
  std::vector<float> forms(records.size() * dim);
  std::vector<uint32_t> leaves(records.size(), 0);
  std::vector<float> scratch;
  for (size_t i = 0; i < records.size(); ++i) {
    const float* v = IndexForm(records[i].vector, &scratch);
    std::copy_n(v, dim, forms.data() + i * dim);
    if (spann != nullptr) leaves[i] = BufferLeaf(*spann, v);
  }
  {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < records.size(); ++i) {
      if (old[i].has_value()) {
        BufferRemove(*old[i]);
        attrs_.Remove(*old[i]);
        key_of_.Erase(*old[i]);
        if (indexed) MarkStale(*old[i]);
      }
      BufferAdd(ids[i], forms.data() + i * dim, leaves[i]);
      attrs_.Put(ids[i], records[i].attributes, records[i].tags);
      id_of_.Set(records[i].key, ids[i]);
      key_of_.Insert(ids[i], records[i].key);
    }
  }
  if (handoff) {
    // Outside mu_: the maintenance thread (low priority) takes handoff_mu_, and a writer that
    // waited for it holding mu_ would hold up every search.
    absl::MutexLock handoff_lock(&handoff_mu_);
    AddPending(PendingBatch{std::move(ids), std::move(forms)});
    unapplied_.erase(unapplied_.find(first_id));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::optional<Record>>> Collection::Get(std::span<const Key> keys) {
  SHOAL_RETURN_IF_ERROR(ValidateKeys(keys, options_));
  std::vector<std::optional<uint64_t>> ids(keys.size());
  {
    absl::ReaderMutexLock lock(&mu_);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (const uint64_t* iid = id_of_.Find(keys[i])) ids[i] = *iid;
    }
  }
  std::vector<std::optional<Record>> out(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!ids[i]) continue;
    SHOAL_ASSIGN_OR_RETURN(out[i], store_->GetRecord(id_, *ids[i]));
  }
  return out;
}

absl::StatusOr<uint64_t> Collection::Delete(std::span<const Key> keys,
                                            const WriteOptions& options) {
  SHOAL_RETURN_IF_ERROR(ValidateKeys(keys, options_));
  BatchScheduledScope batch_scheduled(options_.batch_scheduled_writes);
  std::vector<Key> unique_keys(keys.begin(), keys.end());
  std::sort(unique_keys.begin(), unique_keys.end());
  unique_keys.erase(std::unique(unique_keys.begin(), unique_keys.end()), unique_keys.end());
  KeyClaim claim(this, std::move(unique_keys));
  SHOAL_RETURN_IF_ERROR(CheckNotDropped());
  std::vector<uint64_t> ids;
  auto batch = store_->NewBatch();
  {
    absl::ReaderMutexLock lock(&mu_);
    absl::flat_hash_map<uint64_t, bool> seen;
    for (const Key& key : keys) {
      const uint64_t* iid = id_of_.Find(key);
      if (iid == nullptr || !seen.emplace(*iid, true).second) continue;
      ids.push_back(*iid);
      batch.DeleteRecord(id_, *iid, key);
      // Tombstoned even while only the buffer holds it: a drain may be writing it to postings.
      if (spann_ != nullptr) batch.MarkStale(id_, *iid);
    }
  }
  if (ids.empty()) return 0;
  claim.Unlock();
  SHOAL_RETURN_IF_ERROR(store_->Commit(batch, options.sync));
  absl::MutexLock lock(&mu_);
  for (uint64_t iid : ids) {
    BufferRemove(iid);
    attrs_.Remove(iid);
    if (spann_ != nullptr) MarkStale(iid);
    id_of_.Erase(key_of_.At(iid));
    key_of_.Erase(iid);
  }
  return ids.size();
}

absl::StatusOr<std::vector<std::vector<Hit>>> Collection::Search(std::span<const float> queries,
                                                                 const SearchParams& params) const {
  SHOAL_RETURN_IF_ERROR(ValidateSearch(spec_, queries, params, options_));
  const size_t dim = spec_.dimension;
  const size_t n = queries.size() / dim;
  std::vector<float> normalized;
  const float* q = queries.data();
  if (spec_.metric == Metric::kCosine) {
    normalized.resize(queries.size());
    for (size_t i = 0; i < n; ++i) Normalize(q + i * dim, dim, normalized.data() + i * dim);
    q = normalized.data();
  }
  const size_t threads = n == 1 ? 1 : options_.search_threads;
  absl::ReaderMutexLock lock(&mu_);
  std::vector<std::vector<index::Neighbor>> found;
  if (params.filter != nullptr) {
    SHOAL_ASSIGN_OR_RETURN(found, SearchFiltered(q, n, params, threads));
  } else {
    SHOAL_ASSIGN_OR_RETURN(found, SearchIndexes(q, n, params, threads, nullptr));
  }
  std::vector<std::vector<Hit>> out(n);
  const float offset = spec_.metric == Metric::kCosine ? 1.0f : 0.0f;  // 1 - cos = 1 + (-ip)
  for (size_t i = 0; i < n; ++i) {
    // The key map is large and cold: start every hit's probe before the first one is read.
    for (const index::Neighbor& nb : found[i]) key_of_.Prefetch(nb.id);
    out[i].reserve(found[i].size());
    for (const index::Neighbor& nb : found[i]) {
      out[i].push_back(Hit{key_of_.At(nb.id), nb.distance + offset});
    }
  }
  return out;
}

absl::StatusOr<std::vector<std::vector<index::Neighbor>>> Collection::SearchIndexes(
    const float* q, size_t n, const SearchParams& params, size_t threads,
    const index::IdFilter* allow) const {
  if (spann_ == nullptr) return flat_.Search(q, n, params.k, threads, allow);
  index::SearchParameters p;
  p.k = params.k;
  p.threads = threads;
  p.filter = allow;
  p.skip = &stale_;
  p.stats = params.stats;
  p.max_postings = params.max_postings;
  if (params.pruning_ratio > 0) p.pruning_ratio = params.pruning_ratio;
  // A large buffer is searched through the buckets of the tree leaves the SpannIndex navigated
  // to (collection_buffer.cc).
  std::vector<std::vector<uint32_t>> leaves;
  const bool bucketed = BufferBucketed();
  if (bucketed) p.visited_leaves = &leaves;
  const index::VectorIndex& spann = *spann_;
  SHOAL_ASSIGN_OR_RETURN(auto found, spann.Search(q, n, p));
  if (BufferSize() > 0) {
    MergeInto(&found,
              bucketed ? SearchBuckets(q, n, params.k, leaves, allow)
                       : SearchBufferExactly(q, n, params.k, threads, allow),
              params.k);
  }
  return found;
}

absl::StatusOr<std::vector<std::vector<index::Neighbor>>> Collection::SearchFiltered(
    const float* q, size_t n, const SearchParams& params, size_t threads) const {
  const index::IdBitmap allowed = attrs_.Evaluate(*params.filter);
  const size_t k = params.k;
  if (spann_ == nullptr) return flat_.Search(q, n, k, threads, &allowed);
  const size_t passing = allowed.Count();
  if (passing <= std::max(kExactFilterIds, 64 * k)) {
    return SearchAllowedExactly(q, n, k, threads, allowed, params.stats);
  }
  SHOAL_ASSIGN_OR_RETURN(auto found, SearchIndexes(q, n, params, threads, &allowed));
  // Queries whose nearest postings held fewer than k passing ids: answer them exactly.
  const size_t want = std::min(k, passing);
  std::vector<size_t> short_queries;
  std::vector<float> redo;
  for (size_t i = 0; i < n; ++i) {
    if (found[i].size() >= want) continue;
    short_queries.push_back(i);
    redo.insert(redo.end(), q + i * spec_.dimension, q + (i + 1) * spec_.dimension);
  }
  if (short_queries.empty()) return found;
  SHOAL_ASSIGN_OR_RETURN(auto exact, SearchAllowedExactly(redo.data(), short_queries.size(), k,
                                                          threads, allowed, params.stats));
  for (size_t j = 0; j < short_queries.size(); ++j) found[short_queries[j]] = std::move(exact[j]);
  return found;
}

absl::StatusOr<std::vector<std::vector<index::Neighbor>>> Collection::SearchAllowedExactly(
    const float* q, size_t n, size_t k, size_t threads, const index::IdBitmap& allowed,
    SearchStats* stats) const {
  // The buffer's rows are searched in place; only the SpannIndex's are read back.
  std::vector<uint64_t> to_read;
  allowed.ForEach([&](uint64_t id) {
    if (!BufferContains(id)) to_read.push_back(id);
  });
  index::FlatIndex passing(spec_.dimension, flat_.metric());
  std::vector<float> scratch;
  for (uint64_t id : to_read) {
    SHOAL_ASSIGN_OR_RETURN(std::optional<Record> r, store_->GetRecord(id_, id));
    if (r.has_value()) passing.Add(id, IndexForm(r->vector, &scratch));
  }
  if (stats != nullptr) stats->vectors_scored += n * allowed.Count();
  auto found = passing.Search(q, n, k, threads);
  if (BufferSize() > 0) MergeInto(&found, SearchBufferExactly(q, n, k, threads, &allowed), k);
  return found;
}

uint64_t Collection::IndexGeneration() const {
  absl::ReaderMutexLock lock(&mu_);
  return spann_ != nullptr ? spann_->manifest().generation : 0;
}

absl::Status Collection::Drop() {
  auto idle = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return in_flight_.empty(); };
  absl::MutexLock write_lock(&write_mu_, absl::Condition(&idle));
  SHOAL_RETURN_IF_ERROR(CheckNotDropped());
  absl::MutexLock work_lock(&work_mu_);
  updater_.reset();
  storage::StoredCollection meta{id_, spec_, next_internal_id_};
  SHOAL_RETURN_IF_ERROR(store_->DropCollection(meta));
  dropped_ = true;
  ClearHandoff();
  absl::MutexLock lock(&mu_);
  if (spann_ != nullptr) {
    const std::string dir = IndexDir(spann_->manifest().generation);
    spann_.reset();
    buckets_.reset();
    // Unreferenced now; a leftover is only garbage, removed at the next open.
    fs_->RemoveAll(dir).IgnoreError();
  }
  return absl::OkStatus();
}

}  // namespace shoal::db

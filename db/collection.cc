#include "db/collection.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/collection_key_claim.h"
#include "db/index_form.h"
#include "db/validation.h"
#include "db/write_scheduling.h"
#include "shoal/filter.h"
#include "storage/records/record_codec.h"

namespace shoal::db {

Collection::Collection(storage::RecordStore* store, const storage::StoredCollection& meta,
                       const Options& options, const std::string& index_root,
                       storage::FileSystem* fs, MaintenanceBudget* budget)
    : store_(store),
      id_(meta.id),
      spec_(meta.spec),
      options_(options),
      next_internal_id_(meta.next_internal_id),
      state_(meta.spec.dimension, IndexMetric(meta.spec.metric)),
      planner_(store, meta.id, meta.spec.metric, meta.spec.dimension),
      lifecycle_(store, meta, options, index_root, fs, &state_, &maintainer_,
                 [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { RebuildTenantTree(); }),
      maintainer_(&state_, store, meta.id, meta.spec.name, options, fs, budget) {}

absl::StatusOr<std::unique_ptr<Collection>> Collection::Load(
    storage::RecordStore* store, const storage::StoredCollection& meta, const Options& options,
    const std::string& index_root, storage::FileSystem* fs, MaintenanceBudget* budget) {
  auto c =
      std::unique_ptr<Collection>(new Collection(store, meta, options, index_root, fs, budget));
  absl::MutexLock write_lock(&c->write_mu_);
  IndexMaintainer::WorkClaim work(&c->maintainer_);
  uint64_t generation = 0;
  {
    absl::MutexLock lock(&c->state_.mu);
    SHOAL_ASSIGN_OR_RETURN(std::optional<storage::StoredIndex> stored, store->LoadIndex(meta.id));
    if (stored.has_value()) SHOAL_RETURN_IF_ERROR(c->lifecycle_.Open(*stored));
    SHOAL_RETURN_IF_ERROR(c->LoadTenants());
    SHOAL_RETURN_IF_ERROR(c->LoadRecords());
    c->ForgetDeadTenantRows();
    c->RebuildTenantTree();
    if (c->state_.spann != nullptr) generation = c->state_.spann->manifest().generation;
  }
  SHOAL_RETURN_IF_ERROR(c->maintainer_.Start(c->lifecycle_.Dir(generation)));
  return c;
}

// One pass over the collection's records rebuilds the key maps and the attribute index, and
// puts into the buffer every vector the SpannIndex (if any) does not hold: those at or above
// the watermark (written after the build and not yet moved into the postings), which are queued
// for the maintenance thread again, and records whose id carries a tombstone (rewritten in place
// by versions before online updates), which stay in the buffer until the next build.
absl::Status Collection::LoadRecords() {
  constexpr size_t kBatch = 4096;  // buffered ids per batch handed to the maintenance thread
  CollectionState& s = state_;
  std::vector<float> scratch;
  IndexHandoff::Batch batch;
  auto hand_off = [&] {
    if (!batch.ids.empty()) maintainer_.handoff().AddPending(std::move(batch));
    batch = IndexHandoff::Batch{};
  };
  const bool updates = s.spann != nullptr && options_.index_update_threads != 0;
  absl::Status status =
      store_->ScanRecords(id_, [&](uint64_t iid, Record&& r) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        if (r.vector.size() != spec_.dimension) {
          return absl::DataLossError(absl::StrCat("collection '", spec_.name, "' record id ", iid,
                                                  " has dimension ", r.vector.size()));
        }
        const bool stale = s.stale.Contains(iid);
        if (!s.InSpann(iid) || stale) {
          const float* v = IndexForm(r.vector, &scratch);
          s.buffer.Add(iid, v, s.spann != nullptr ? WriteBuffer::LeafOf(*s.spann, v) : 0);
          if (updates && !s.InSpann(iid) && !stale) {
            batch.ids.push_back(iid);
            batch.vectors.insert(batch.vectors.end(), v, v + spec_.dimension);
            if (batch.ids.size() == kBatch) hand_off();
          }
        }
        s.attrs.Put(iid, r.attributes, r.tags);
        if (s.access.OwnerOf(iid) != tenants::kNoTenant) s.access.SetBytes(iid, RecordBytes(r));
        s.id_of.Insert(r.key, iid);
        s.key_of.Insert(iid, std::move(r.key));
        // Ids at or above the stored counter can only come from a counter lost with a torn
        // catalog row; never hand them out again.
        next_internal_id_ = std::max(next_internal_id_, iid + 1);
        return absl::OkStatus();
      });
  hand_off();
  return status;
}

CollectionInfo Collection::Info() const {
  // Not under the state's lock: a wait for the hand-off's (the maintenance thread takes it)
  // holding that lock would hold up writers, and searches behind them.
  const index::UpdateStats stats = maintainer_.stats();
  absl::ReaderMutexLock lock(&state_.mu);
  const index::SpannIndex* spann = state_.spann.get();
  CollectionInfo info{spec_, state_.id_of.size()};
  info.index = spann ? index::SpannSpecString(spann->manifest().options) : "flat";
  info.index_ram_bytes = state_.buffer.MemoryBytes() + (spann ? spann->MemoryBytes() : 0);
  // Tenants' structures count as index RAM: the access table, the per-tenant sub-trees and the
  // tenants' entries.
  if (!state_.tenants.empty()) {
    info.tenant_ram_bytes =
        state_.access.MemoryBytes() + state_.tenant_tree.MemoryBytes() + TenantEntriesBytes();
    info.index_ram_bytes += info.tenant_ram_bytes;
  }
  info.unindexed_vectors = spann ? state_.buffer.size() : 0;
  info.tombstones = state_.stale.size();
  if (spann != nullptr) {
    const auto dir = spann->directory();
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

absl::Status Collection::CheckNotDropped() const {
  if (dropped_)
    return absl::NotFoundError(absl::StrCat("collection: '", spec_.name, "' not found"));
  return absl::OkStatus();
}

absl::Status Collection::SyncIfAsked(const WriteOptions& options) const {
  return options.sync ? store_->SyncWal() : absl::OkStatus();
}

absl::Status Collection::Upsert(std::span<const Record> records, const WriteOptions& options) {
  SHOAL_RETURN_IF_ERROR(options.records_checked ? ValidateRecordCount(records.size(), options_)
                                                : ValidateRecords(spec_, records, options_));
  BatchScheduledScope batch_scheduled(options_.batch_scheduled_writes);  // write_scheduling.h
  std::vector<Key> keys;
  keys.reserve(records.size());
  for (const Record& r : records) keys.push_back(r.key);
  KeyClaim claim(this, std::move(keys));
  SHOAL_RETURN_IF_ERROR(CheckNotDropped());
  SHOAL_RETURN_IF_ERROR(maintainer_.AwaitBacklog());
  // Every record gets a fresh internal id (an id's vector never changes, so a copy of it left in
  // a posting is never wrong); a replaced record's old id is tombstoned.
  std::vector<uint64_t> ids(records.size());
  std::vector<std::optional<uint64_t>> old(records.size());
  uint64_t next = next_internal_id_;
  const index::SpannIndex* spann;  // non-null: replaced ids are tombstoned
  size_t batch_bytes = 64;         // the batch's header and the id counter's row
  for (const Record& r : records) batch_bytes += storage::RecordRowsBytesBound(r);
  auto batch = store_->NewBatch(batch_bytes);
  TenantPlan plan;
  {
    absl::ReaderMutexLock lock(&state_.mu);
    std::shared_ptr<TenantEntry> writer;
    if (!options.tenant.empty()) {
      SHOAL_ASSIGN_OR_RETURN(writer, FindTenant(options.tenant));
      plan.writer = writer->meta.id;
    }
    spann = state_.spann.get();
    for (size_t i = 0; i < records.size(); ++i) {
      ids[i] = next++;
      if (const uint64_t* iid = state_.id_of.Find(records[i].key)) {
        old[i] = *iid;
        batch.DeleteRecordRow(id_, *iid);
        if (spann != nullptr) batch.MarkStale(id_, *iid);
      }
      batch.PutRecord(id_, ids[i], records[i], /*new_key=*/true);
    }
    SHOAL_RETURN_IF_ERROR(PlanTenantRows(records, ids, old, &batch, &plan));
    if (writer != nullptr) SHOAL_RETURN_IF_ERROR(ReserveQuota(*writer, plan));
  }
  batch.SetNextInternalId(id_, next);
  // Ids are taken even if the commit fails: a failed batch may still be found after a reopen
  // (its outcome is unknown), so its ids must never name other records.
  next_internal_id_ = next;
  // With online updates the batch goes to the maintenance thread too. Until it is pending, its
  // ids hold the watermark of online updates below them (batches commit and apply in any
  // order). A failed commit leaves them there: its outcome is unknown until a reopen re-reads
  // the records.
  const bool handoff = spann != nullptr && options_.index_update_threads != 0;
  if (handoff) maintainer_.handoff().MarkCommitting(ids[0]);
  claim.Unlock();  // commit (and fsync) beside other writers: group commit
  // The forms and buckets while the commit sleeps in its fsync, on the side thread as far as it
  // gets; the rest after the commit. The SpannIndex stays while this write is in flight (builds
  // and drops wait for it). A failed commit drops what the thread has not started.
  ApplyForms forms;
  forms.copy = handoff || spec_.metric == Metric::kCosine;
  if (forms.copy) forms.forms.resize(records.size() * spec_.dimension);
  forms.leaves.assign(records.size(), 0);
  SideThread::Job prepare(
      &forms_beside_commit_, records.size(),
      [&](size_t begin, size_t end) { PrepareForms(records, spann, begin, end, &forms); },
      /*offer=*/spann != nullptr && records.size() >= kFormsBesideCommit);
  const absl::Status committed = store_->Commit(batch, options.sync);
  if (committed.ok()) {
    prepare.Finish();
    ApplyUpsert(records, ids, old, spann, handoff, plan, std::move(forms));
  }
  ReleaseQuota(plan);
  return committed;
}

void Collection::PrepareForms(std::span<const Record> records, const index::SpannIndex* spann,
                              size_t begin, size_t end, ApplyForms* forms) const {
  const size_t dim = spec_.dimension;
  for (size_t i = begin; i < end; ++i) {
    const float* v = records[i].vector.data();
    if (forms->copy) {
      float* out = forms->forms.data() + i * dim;
      if (spec_.metric == Metric::kCosine) {
        Normalize(v, dim, out);
      } else {
        std::copy(v, v + dim, out);
      }
      v = out;
    }
    if (spann != nullptr) forms->leaves[i] = WriteBuffer::LeafOf(*spann, v);
  }
}

void Collection::ApplyUpsert(std::span<const Record> records, const std::vector<uint64_t>& ids,
                             const std::vector<std::optional<uint64_t>>& old,
                             const index::SpannIndex* spann, bool handoff, const TenantPlan& plan,
                             ApplyForms forms) {
  // Without a copy the buffer takes each record's own vector (a large batch then maps no fresh
  // buffer to fault in).
  const size_t dim = spec_.dimension;
  auto form = [&](size_t i) {
    return forms.copy ? forms.forms.data() + i * dim : records[i].vector.data();
  };
  const std::vector<uint32_t>& leaves = forms.leaves;
  {
    absl::MutexLock lock(&state_.mu);
    for (size_t i = 0; i < records.size(); ++i) {
      if (old[i].has_value()) {
        state_.buffer.Remove(*old[i]);
        state_.attrs.Remove(*old[i]);
        state_.key_of.Erase(*old[i]);
        if (spann != nullptr) state_.MarkStale(*old[i]);
      }
      state_.buffer.Add(ids[i], form(i), leaves[i]);
      state_.attrs.Put(ids[i], records[i].attributes, records[i].tags);
      state_.id_of.Set(records[i].key, ids[i]);
      state_.key_of.Insert(ids[i], records[i].key);
    }
    ApplyTenantRows(plan, ids, old, leaves);
  }
  // Outside the state's lock: the maintenance thread (low priority) takes the hand-off's, and a
  // writer that waited for it holding the state's lock would hold up every search.
  if (handoff) maintainer_.handoff().AddPending({ids, std::move(forms.forms)}, ids[0]);
}

absl::StatusOr<std::vector<std::optional<Record>>> Collection::Get(std::span<const Key> keys,
                                                                   const ReadOptions& options) {
  SHOAL_RETURN_IF_ERROR(ValidateKeys(keys, options_));
  std::vector<std::optional<uint64_t>> ids(keys.size());
  {
    absl::ReaderMutexLock lock(&state_.mu);
    tenants::TenantId reader = tenants::kNoTenant;
    if (!options.tenant.empty()) {
      SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<TenantEntry> t, FindTenant(options.tenant));
      reader = t->meta.id;
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      const uint64_t* iid = state_.id_of.Find(keys[i]);
      if (iid == nullptr) continue;
      // A key the tenant cannot see reads exactly like one that does not exist.
      if (reader != tenants::kNoTenant && !state_.access.Visible(reader, *iid)) continue;
      ids[i] = *iid;
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
    absl::ReaderMutexLock lock(&state_.mu);
    tenants::TenantId deleter = tenants::kNoTenant;
    if (!options.tenant.empty()) {
      SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<TenantEntry> t, FindTenant(options.tenant));
      deleter = t->meta.id;
    }
    absl::flat_hash_map<uint64_t, bool> seen;
    for (const Key& key : keys) {
      const uint64_t* iid = state_.id_of.Find(key);
      if (iid == nullptr || !seen.emplace(*iid, true).second) continue;
      if (deleter != tenants::kNoTenant) {
        // Invisible keys count as absent; visible but granted ones may not be deleted.
        if (!state_.access.Visible(deleter, *iid)) continue;
        if (state_.access.OwnerOf(*iid) != deleter) {
          return absl::PermissionDeniedError(
              absl::StrCat("keys: tenant '", options.tenant,
                           "' may delete only keys it owns; it was granted ", KeyDebugString(key)));
        }
      }
      ids.push_back(*iid);
      AddDeleteRows(*iid, key, &batch);
    }
  }
  if (ids.empty()) {
    SHOAL_RETURN_IF_ERROR(SyncIfAsked(options));
    return 0;
  }
  claim.Unlock();
  SHOAL_RETURN_IF_ERROR(store_->Commit(batch, options.sync));
  absl::MutexLock lock(&state_.mu);
  ApplyDeletes(ids);
  return ids.size();
}

absl::StatusOr<std::vector<std::vector<Hit>>> Collection::Search(std::span<const float> queries,
                                                                 const SearchParams& params) const {
  const bool fill = params.with_attributes || params.with_vectors;
  std::vector<std::vector<uint64_t>> ids;
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::vector<Hit>> hits,
                         SearchLocked(queries, params, fill ? &ids : nullptr));
  // The records are read after the state's lock is released: a batched RocksDB read is no
  // place to hold up writers.
  if (fill) SHOAL_RETURN_IF_ERROR(FillHits(&hits, ids, params));
  return hits;
}

absl::StatusOr<std::vector<std::vector<Hit>>> Collection::SearchLocked(
    std::span<const float> queries, const SearchParams& params,
    std::vector<std::vector<uint64_t>>* ids) const {
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
  const absl::Time start = absl::Now();
  SearchHold lock(state_);
  std::shared_ptr<TenantEntry> tenant;
  SearchParams p = params;
  SearchStats stats;
  if (!params.tenant.empty()) {
    SHOAL_ASSIGN_OR_RETURN(tenant, FindTenant(params.tenant));
    const double rate = tenant->meta.quotas.max_searches_per_second;
    if (!tenant->stats.TakeSearchToken(rate, start)) {
      return absl::ResourceExhaustedError(absl::StrCat("quota max_searches_per_second of tenant '",
                                                       params.tenant, "' (", rate,
                                                       ") exceeded; retry later"));
    }
    if (p.stats == nullptr) p.stats = &stats;
  }
  const tenants::TenantId reader = tenant != nullptr ? tenant->meta.id : tenants::kNoTenant;
  const SearchStats before = p.stats != nullptr ? *p.stats : SearchStats{};
  SHOAL_ASSIGN_OR_RETURN(auto found, planner_.Search(state_, q, n, p, threads, reader));
  if (params.stats != nullptr && params.filter != nullptr) {
    params.stats->warnings = state_.attrs.FilterWarnings(*params.filter);
  }
  std::vector<std::vector<Hit>> out(n);
  if (ids != nullptr) ids->assign(n, {});
  const float offset = spec_.metric == Metric::kCosine ? 1.0f : 0.0f;  // 1 - cos = 1 + (-ip)
  // Isolation by construction: every hit is checked against the access table once more,
  // whatever structure (posting, shortlist, buffer) produced it.
  const tenants::AccessTable::View view = state_.access.ViewOf(reader);
  thread_local std::vector<const Key*> keys;  // found[i]'s keys; null: not visible
  thread_local std::vector<uint64_t> hit_ids;
  thread_local std::vector<uint8_t> visible;  // by found[i]'s hit
  for (size_t i = 0; i < n; ++i) {
    // The key map and the reader's id sets are large and cold: every hit's key (both ends: a
    // 40-byte Key can span two lines, its variant index at its end) is asked for before the
    // first is read, the hits are checked together, and every key found before the first is
    // copied, so that their misses overlap.
    hit_ids.clear();
    for (const index::Neighbor& nb : found[i]) {
      state_.key_of.Prefetch(nb.id);
      hit_ids.push_back(nb.id);
    }
    visible.assign(hit_ids.size(), 1);
    if (reader != tenants::kNoTenant) {
      view.VisibleEach(hit_ids, visible.data());
    }
    keys.clear();
    for (size_t j = 0; j < hit_ids.size(); ++j) {
      keys.push_back(visible[j] ? &state_.key_of.At(hit_ids[j]) : nullptr);
    }
    out[i].reserve(found[i].size());
    for (size_t j = 0; j < keys.size(); ++j) {
      if (keys[j] == nullptr) continue;
      out[i].push_back(Hit{*keys[j], found[i][j].distance + offset});
      if (ids != nullptr) (*ids)[i].push_back(found[i][j].id);
    }
  }
  if (tenant != nullptr) {
    const uint64_t buckets = p.stats->postings_read - before.postings_read;
    tenant->stats.RecordSearch(absl::ToDoubleMicroseconds(absl::Now() - start), buckets);
  }
  return out;
}

uint64_t Collection::IndexGeneration() const {
  absl::ReaderMutexLock lock(&state_.mu);
  return state_.spann != nullptr ? state_.spann->manifest().generation : 0;
}

absl::Status Collection::BuildIndex(const std::string& spec, const IndexBuildProgressFn& progress) {
  // Holds writers off for the whole build, once those in flight are applied.
  auto idle = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return in_flight_.empty(); };
  absl::MutexLock write_lock(&write_mu_, absl::Condition(&idle));
  SHOAL_RETURN_IF_ERROR(CheckNotDropped());
  if (spec == "flat") return lifecycle_.Flatten();
  SHOAL_RETURN_IF_ERROR(lifecycle_.Build(spec, next_internal_id_, progress));
  IndexMaintainer::WorkClaim work(&maintainer_);
  return maintainer_.Start(lifecycle_.Dir(lifecycle_.last_generation()));
}

absl::Status Collection::Drop() {
  auto idle = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return in_flight_.empty(); };
  absl::MutexLock write_lock(&write_mu_, absl::Condition(&idle));
  SHOAL_RETURN_IF_ERROR(CheckNotDropped());
  IndexMaintainer::WorkClaim work(&maintainer_);
  maintainer_.Stop();
  storage::StoredCollection meta{id_, spec_, next_internal_id_};
  SHOAL_RETURN_IF_ERROR(store_->DropCollection(meta));
  dropped_ = true;
  maintainer_.handoff().Clear();
  absl::MutexLock lock(&state_.mu);
  lifecycle_.Release();
  return absl::OkStatus();
}

}  // namespace shoal::db

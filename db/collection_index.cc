// Collection: loading from RocksDB, and building / opening / dropping the SSD-resident index.
#include <algorithm>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/collection.h"
#include "index/kmeans.h"
#include "index/spann_builder.h"

namespace shoal::db {
namespace {

// Buffered ids per batch handed to the maintenance thread at open.
constexpr size_t kLoadBatch = 4096;

storage::IoBackend IoOf(Options::Io io) {
  switch (io) {
    case Options::Io::kIoUring:
      return storage::IoBackend::kIoUring;
    case Options::Io::kPread:
      return storage::IoBackend::kPread;
    default:
      return storage::IoBackend::kAuto;
  }
}

// Each phase's share of a whole build (roughly what each costs: clustering dominates).
struct PhaseSpan {
  std::string_view phase;
  double begin, end;
};
constexpr PhaseSpan kBuildPhases[] = {{"reading", 0.00, 0.10},   {"clustering", 0.10, 0.60},
                                      {"assigning", 0.60, 0.72}, {"encoding", 0.72, 0.75},
                                      {"writing", 0.75, 0.97},   {"committing", 0.97, 1.00}};

// Turns (phase, fraction of the phase) into IndexBuildProgress over the whole build, never
// going backwards.
class BuildReporter {
 public:
  explicit BuildReporter(const IndexBuildProgressFn& fn) : fn_(fn) {}
  void operator()(std::string_view phase, double done) {
    if (!fn_) return;
    for (const PhaseSpan& s : kBuildPhases) {
      if (s.phase != phase) continue;
      const double f = s.begin + (s.end - s.begin) * std::clamp(done, 0.0, 1.0);
      last_ = std::max(last_, f);
      fn_({std::string(phase), last_});
    }
  }

 private:
  const IndexBuildProgressFn& fn_;
  double last_ = 0;
};

}  // namespace

std::string Collection::IndexDir(uint64_t generation) const {
  return absl::StrCat(index_root_, "/c", id_, ".g", generation);
}

size_t Collection::CacheBudget(size_t fixed_bytes) const {
  if (options_.index_ram_bytes_limit == 0) return options_.posting_cache_bytes;
  const size_t limit = options_.index_ram_bytes_limit;
  return fixed_bytes >= limit ? 0 : std::min(options_.posting_cache_bytes, limit - fixed_bytes);
}

void Collection::ResetBuffer() {
  index::SpannIndex* spann = state_.spann.get();
  state_.buffer.Reset(spann);
  if (spann != nullptr) {
    // The empty buckets count as fixed index RAM beside the SpannIndex's own.
    spann->SetCacheBudget(CacheBudget(spann->FixedMemoryBytes() + state_.buffer.MemoryBytes()));
  }
}

// One pass over the collection's records rebuilds the key maps and the attribute index, and
// puts into the buffer every vector the SpannIndex (if any) does not hold: those at or above
// the watermark (written after the build and not yet moved into the postings), which are queued
// for the maintenance thread again, and records whose id carries a tombstone (rewritten in place
// by versions before online updates), which stay in the buffer until the next build.
absl::Status Collection::LoadRecords() {
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
            if (batch.ids.size() == kLoadBatch) hand_off();
          }
        }
        s.attrs.Put(iid, r.attributes, r.tags);
        if (s.access.OwnerOf(iid) != tenants::kNoTenant) s.access.SetBytes(iid, RecordBytes(r));
        s.id_of.Insert(r.key, iid);
        s.key_of.Insert(iid, std::move(r.key));
        // Ids at or above the stored counter can only come from a counter lost with a torn catalog
        // row; never hand them out again.
        next_internal_id_ = std::max(next_internal_id_, iid + 1);
        return absl::OkStatus();
      });
  hand_off();
  return status;
}

absl::Status Collection::OpenIndex(const storage::StoredIndex& stored) {
  const std::string where = absl::StrCat("collection '", spec_.name, "' index manifest");
  SHOAL_ASSIGN_OR_RETURN(index::SpannManifest manifest,
                         index::DecodeManifest(stored.manifest, where));
  index::SpannRuntimeOptions runtime{IoOf(options_.io), options_.posting_cache_bytes,
                                     options_.index_ram_bytes_limit};
  runtime.fs = fs_;
  SHOAL_ASSIGN_OR_RETURN(state_.spann, index::SpannIndex::Open(IndexDir(manifest.generation),
                                                               manifest, stored.postings, runtime));
  state_.indexed_below = std::max(manifest.indexed_below, stored.indexed_below);
  for (uint64_t iid : stored.stale_ids) state_.MarkStale(iid);
  state_.tombstones_at_sweep = state_.stale.size();
  ResetBuffer();
  return absl::OkStatus();
}

absl::Status Collection::BuildIndex(const std::string& spec, const IndexBuildProgressFn& progress) {
  // Holds writers off for the whole build, once those in flight are applied.
  auto idle = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return in_flight_.empty(); };
  absl::MutexLock write_lock(&write_mu_, absl::Condition(&idle));
  SHOAL_RETURN_IF_ERROR(CheckNotDropped());
  if (spec == "flat") return DropSpann();
  SHOAL_RETURN_IF_ERROR(BuildSpann(spec, progress));
  absl::MutexLock work_lock(&maintainer_.work_mu());
  return maintainer_.Start(IndexDir(last_generation_));
}

absl::Status Collection::BuildSpann(const std::string& spec, const IndexBuildProgressFn& progress) {
  SHOAL_ASSIGN_OR_RETURN(index::SpannOptions options, index::ParseSpannSpec(spec));
  BuildReporter report(progress);
  report("reading", 0);
  size_t expected = 1;
  // Never a generation tried before in this process: a failed commit may have named it.
  uint64_t generation = last_generation_ + 1;
  {
    absl::ReaderMutexLock lock(&state_.mu);
    expected = std::max<size_t>(1, state_.id_of.size());
    if (state_.spann) generation = std::max(generation, state_.spann->manifest().generation + 1);
  }
  const size_t every = std::max<size_t>(1, expected / 32);
  // Every live vector, in index form, read back from RocksDB (the buffer may hold only the
  // vectors written since the previous build).
  std::vector<uint64_t> ids;
  std::vector<float> vectors;
  std::vector<float> scratch;
  SHOAL_RETURN_IF_ERROR(store_->ScanRecords(id_, [&](uint64_t iid, Record&& r) {
    ids.push_back(iid);
    if (ids.size() % every == 0) report("reading", double(ids.size()) / expected);
    const float* v = IndexForm(r.vector, &scratch);
    vectors.insert(vectors.end(), v, v + spec_.dimension);
    return absl::OkStatus();
  }));
  last_generation_ = generation;
  // Built under a temporary name and renamed once complete and synced, so a directory with a
  // generation's name is always whole. Leftovers of a failed or crashed build are never
  // referenced (the manifest names the generation in use); they are removed here and at open.
  const std::string dir = IndexDir(generation);
  const std::string tmp = dir + ".tmp";
  SHOAL_RETURN_IF_ERROR(fs_->RemoveAll(dir));
  SHOAL_RETURN_IF_ERROR(fs_->RemoveAll(tmp));
  SHOAL_RETURN_IF_ERROR(fs_->CreateDirs(tmp));
  index::SpannBuildInput input{ids,
                               vectors.data(),
                               spec_.dimension,
                               IndexMetric(spec_.metric),
                               next_internal_id_,
                               generation,
                               fs_};
  input.progress = [&](std::string_view phase, double done) { report(phase, done); };
  auto backend = index::MakeDefaultClusteringBackend(options_.build_threads);
  absl::StatusOr<index::SpannBuildOutput> built =
      index::BuildSpann(input, options, tmp, *backend, options_.build_threads);
  absl::Status published = built.ok() ? storage::PublishDir(*fs_, tmp, dir) : built.status();
  if (!published.ok()) {
    fs_->RemoveAll(tmp).IgnoreError();
    fs_->RemoveAll(dir).IgnoreError();
    return published;
  }
  SHOAL_ASSIGN_OR_RETURN(auto fresh, OpenBuilt(dir, built->manifest, built->postings));
  report("committing", 0);
  SHOAL_RETURN_IF_ERROR(
      SwapIn(std::move(fresh), index::EncodeManifest(built->manifest), built->postings));
  report("committing", 1);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<index::SpannIndex>> Collection::OpenBuilt(
    const std::string& dir, const index::SpannManifest& manifest,
    std::span<const storage::PostingRow> postings) const {
  index::SpannRuntimeOptions runtime{IoOf(options_.io), options_.posting_cache_bytes,
                                     options_.index_ram_bytes_limit};
  runtime.fs = fs_;
  SHOAL_ASSIGN_OR_RETURN(auto fresh, index::SpannIndex::Open(dir, manifest, postings, runtime));
  if (options_.index_ram_bytes_limit != 0 &&
      fresh->FixedMemoryBytes() > options_.index_ram_bytes_limit) {
    fs_->RemoveAll(dir).IgnoreError();
    return absl::ResourceExhaustedError(
        absl::StrCat("spec: the index's centroids need ", fresh->FixedMemoryBytes(),
                     " bytes, over Options::index_ram_bytes_limit (",
                     options_.index_ram_bytes_limit, "); lower centroid_ratio"));
  }
  return fresh;
}

absl::Status Collection::SwapIn(std::unique_ptr<index::SpannIndex> fresh,
                                const std::string& manifest,
                                std::span<const storage::PostingRow> postings) {
  // The commit point (a synced RocksDB write): from here on a reopen finds the new index. If it
  // fails the old index keeps serving; the new directory stays, since the failed commit may
  // still be found after a reopen (its outcome is unknown), and the next open removes whichever
  // directory the manifest does not name.
  // Online updates of the old index commit no directory rows beside (or, should this commit's
  // outcome be unknown, after) the new index's.
  std::string old_dir;
  {
    absl::MutexLock work_lock(&maintainer_.work_mu());
    maintainer_.Stop();
    SHOAL_RETURN_IF_ERROR(store_->CommitIndex(id_, manifest, postings));
    absl::MutexLock lock(&state_.mu);
    if (state_.spann != nullptr) old_dir = IndexDir(state_.spann->manifest().generation);
    state_.spann = std::move(fresh);
    state_.indexed_below = next_internal_id_;
    state_.ClearStale();
    maintainer_.Reset();
    ResetBuffer();
    // The tenants' sub-trees hang on the new tree. (Reads the records of ids tenants see while
    // searches wait: O(those ids) once per build.)
    RebuildTenantTree();
  }
  // Freed only now that the commit that stopped referencing it is durable.
  if (!old_dir.empty()) fs_->RemoveAll(old_dir).IgnoreError();
  return absl::OkStatus();
}

absl::Status Collection::DropSpann() {
  std::string old_dir;
  {
    absl::ReaderMutexLock lock(&state_.mu);
    if (state_.spann == nullptr) return absl::OkStatus();
    old_dir = IndexDir(state_.spann->manifest().generation);
  }
  absl::MutexLock work_lock(&maintainer_.work_mu());  // no online update commits beside the clear
  maintainer_.Stop();
  SHOAL_RETURN_IF_ERROR(store_->ClearIndex(id_));
  index::FlatIndex all(spec_.dimension, IndexMetric(spec_.metric));
  std::vector<float> scratch;
  SHOAL_RETURN_IF_ERROR(store_->ScanRecords(id_, [&](uint64_t iid, Record&& r) {
    all.Add(iid, IndexForm(r.vector, &scratch));
    return absl::OkStatus();
  }));
  {
    absl::MutexLock lock(&state_.mu);
    state_.spann.reset();
    state_.ClearStale();
    maintainer_.Reset();
    state_.indexed_below = 0;
    state_.buffer.Replace(std::move(all));
    RebuildTenantTree();
  }
  fs_->RemoveAll(old_dir).IgnoreError();
  return absl::OkStatus();
}

}  // namespace shoal::db

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

}  // namespace

std::string Collection::IndexDir(uint64_t generation) const {
  return absl::StrCat(index_root_, "/c", id_, ".g", generation);
}

size_t Collection::CacheBudget(size_t fixed_bytes) const {
  if (options_.index_ram_bytes_limit == 0) return options_.posting_cache_bytes;
  const size_t limit = options_.index_ram_bytes_limit;
  return fixed_bytes >= limit ? 0 : std::min(options_.posting_cache_bytes, limit - fixed_bytes);
}

// One pass over the collection's records rebuilds the key maps and the attribute index, and
// puts into the buffer every vector the SpannIndex (if any) does not hold: those at or above
// the watermark (written after the build and not yet moved into the postings), which are queued
// for the maintenance thread again, and records whose id carries a tombstone (rewritten in place
// by versions before online updates), which stay in the buffer until the next build.
absl::Status Collection::LoadRecords() {
  std::vector<float> scratch;
  PendingBatch batch;
  auto hand_off = [&] {
    absl::MutexLock lock(&handoff_mu_);
    if (!batch.ids.empty()) AddPending(std::move(batch));
    batch = PendingBatch{};
  };
  absl::Status s = store_->ScanRecords(id_, [&](uint64_t iid, Record&& r) {
    if (r.vector.size() != spec_.dimension) {
      return absl::DataLossError(absl::StrCat("collection '", spec_.name, "' record id ", iid,
                                              " has dimension ", r.vector.size()));
    }
    if (!InSpann(iid) || stale_.Contains(iid)) {
      const float* v = IndexForm(r.vector, &scratch);
      BufferAdd(iid, v, spann_ != nullptr ? BufferLeaf(*spann_, v) : 0);
      if (spann_ != nullptr && options_.index_update_threads != 0 && !InSpann(iid) &&
          !stale_.Contains(iid)) {
        batch.ids.push_back(iid);
        batch.vectors.insert(batch.vectors.end(), v, v + spec_.dimension);
        if (batch.ids.size() == kLoadBatch) hand_off();
      }
    }
    attrs_.Put(iid, r.attributes, r.tags);
    id_of_.Insert(r.key, iid);
    key_of_.Insert(iid, std::move(r.key));
    // Ids at or above the stored counter can only come from a counter lost with a torn catalog
    // row; never hand them out again.
    next_internal_id_ = std::max(next_internal_id_, iid + 1);
    return absl::OkStatus();
  });
  hand_off();
  return s;
}

absl::Status Collection::OpenIndex(const storage::StoredIndex& stored) {
  const std::string where = absl::StrCat("collection '", spec_.name, "' index manifest");
  SHOAL_ASSIGN_OR_RETURN(index::SpannManifest manifest,
                         index::DecodeManifest(stored.manifest, where));
  index::SpannRuntimeOptions runtime{IoOf(options_.io), options_.posting_cache_bytes,
                                     options_.index_ram_bytes_limit};
  runtime.fs = fs_;
  SHOAL_ASSIGN_OR_RETURN(spann_, index::SpannIndex::Open(IndexDir(manifest.generation), manifest,
                                                         stored.postings, runtime));
  indexed_below_ = std::max(manifest.indexed_below, stored.indexed_below);
  for (uint64_t iid : stored.stale_ids) MarkStale(iid);
  tombstones_at_sweep_ = stale_.size();
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
  absl::MutexLock work_lock(&work_mu_);
  return StartUpdates();
}

namespace {

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

absl::Status Collection::BuildSpann(const std::string& spec, const IndexBuildProgressFn& progress) {
  SHOAL_ASSIGN_OR_RETURN(index::SpannOptions options, index::ParseSpannSpec(spec));
  BuildReporter report(progress);
  report("reading", 0);
  size_t expected = 1;
  {
    absl::ReaderMutexLock lock(&mu_);
    expected = std::max<size_t>(1, id_of_.size());
  }
  const size_t every = std::max<size_t>(1, expected / 32);
  // Every live vector, in index form, read back from RocksDB (the FlatIndex may hold only the
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
  // Never a generation tried before in this process: a failed commit may have named it.
  uint64_t generation = last_generation_ + 1;
  {
    absl::ReaderMutexLock lock(&mu_);
    if (spann_ != nullptr) generation = std::max(generation, spann_->manifest().generation + 1);
  }
  last_generation_ = generation;
  // Built under a temporary name and renamed once complete and synced, so a directory with a
  // generation's name is always whole. Leftovers of a failed or crashed build are never
  // referenced (the manifest names the generation in use); they are removed here and at open.
  const std::string dir = IndexDir(generation);
  const std::string tmp = dir + ".tmp";
  SHOAL_RETURN_IF_ERROR(fs_->RemoveAll(dir));
  SHOAL_RETURN_IF_ERROR(fs_->RemoveAll(tmp));
  SHOAL_RETURN_IF_ERROR(fs_->CreateDirs(tmp));
  index::SpannBuildInput input{
      ids, vectors.data(), spec_.dimension, flat_.metric(), next_internal_id_, generation, fs_};
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
  index::SpannRuntimeOptions runtime{IoOf(options_.io), options_.posting_cache_bytes,
                                     options_.index_ram_bytes_limit};
  runtime.fs = fs_;
  SHOAL_ASSIGN_OR_RETURN(auto fresh,
                         index::SpannIndex::Open(dir, built->manifest, built->postings, runtime));
  if (options_.index_ram_bytes_limit != 0 &&
      fresh->FixedMemoryBytes() > options_.index_ram_bytes_limit) {
    fs_->RemoveAll(dir).IgnoreError();
    return absl::ResourceExhaustedError(
        absl::StrCat("spec: the index's centroids need ", fresh->FixedMemoryBytes(),
                     " bytes, over Options::index_ram_bytes_limit (",
                     options_.index_ram_bytes_limit, "); lower centroid_ratio"));
  }
  report("committing", 0);
  // The commit point (a synced RocksDB write): from here on a reopen finds the new index. If it
  // fails the old index keeps serving; the new directory stays, since the failed commit may
  // still be found after a reopen (its outcome is unknown), and the next open removes whichever
  // directory the manifest does not name.
  // Online updates of the old index commit no directory rows beside (or, should this commit's
  // outcome be unknown, after) the new index's.
  std::string old_dir;
  {
    absl::MutexLock work_lock(&work_mu_);
    updater_.reset();
    SHOAL_RETURN_IF_ERROR(
        store_->CommitIndex(id_, index::EncodeManifest(built->manifest), built->postings));
    absl::MutexLock lock(&mu_);
    if (spann_ != nullptr) old_dir = IndexDir(spann_->manifest().generation);
    spann_ = std::move(fresh);
    indexed_below_ = next_internal_id_;
    ClearStale();
    tombstones_at_sweep_ = 0;
    ClearHandoff();
    ResetBuffer();
  }
  // Freed only now that the commit that stopped referencing it is durable.
  if (!old_dir.empty()) fs_->RemoveAll(old_dir).IgnoreError();
  report("committing", 1);
  return absl::OkStatus();
}

absl::Status Collection::DropSpann() {
  std::string old_dir;
  {
    absl::ReaderMutexLock lock(&mu_);
    if (spann_ == nullptr) return absl::OkStatus();
    old_dir = IndexDir(spann_->manifest().generation);
  }
  absl::MutexLock work_lock(&work_mu_);  // no online update commits beside the clear
  updater_.reset();
  SHOAL_RETURN_IF_ERROR(store_->ClearIndex(id_));
  index::FlatIndex all(spec_.dimension, flat_.metric());
  std::vector<float> scratch;
  SHOAL_RETURN_IF_ERROR(store_->ScanRecords(id_, [&](uint64_t iid, Record&& r) {
    all.Add(iid, IndexForm(r.vector, &scratch));
    return absl::OkStatus();
  }));
  {
    absl::MutexLock lock(&mu_);
    spann_.reset();
    ClearStale();
    ClearHandoff();
    indexed_below_ = 0;
    buckets_.reset();
    flat_ = std::move(all);
  }
  fs_->RemoveAll(old_dir).IgnoreError();
  return absl::OkStatus();
}

}  // namespace shoal::db

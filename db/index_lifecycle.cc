#include "db/index_lifecycle.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/index_form.h"
#include "index/clustering/kmeans.h"
#include "index/spann/spann_calibration.h"
#include "storage/caches/vector_cache.h"

namespace shoal::db {
namespace {

// The caches' budget with no index_ram_bytes_limit and Options::kAutoPostingCache.
constexpr size_t kDefaultPostingCacheBytes = size_t{256} << 20;

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
constexpr PhaseSpan kBuildPhases[] = {{"reading", 0.00, 0.10},   {"clustering", 0.10, 0.58},
                                      {"assigning", 0.58, 0.70}, {"encoding", 0.70, 0.73},
                                      {"writing", 0.73, 0.90},   {"calibrating", 0.90, 0.98},
                                      {"committing", 0.98, 1.00}};

}  // namespace

// Turns (phase, fraction of the phase) into IndexBuildProgress over the whole build, never
// going backwards.
class IndexLifecycle::Reporter {
 public:
  explicit Reporter(const IndexBuildProgressFn& fn) : fn_(fn) {}
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

IndexLifecycle::IndexLifecycle(storage::RecordStore* store, const storage::StoredCollection& meta,
                               const Options& options, std::string index_root,
                               storage::FileSystem* fs, CollectionState* state,
                               IndexMaintainer* maintainer, std::function<void()> index_changed)
    : store_(store),
      id_(meta.id),
      spec_(meta.spec),
      options_(options),
      index_root_(std::move(index_root)),
      fs_(fs),
      state_(state),
      maintainer_(maintainer),
      index_changed_(std::move(index_changed)) {}

std::string IndexLifecycle::Dir(uint64_t generation) const {
  return absl::StrCat(index_root_, "/c", id_, ".g", generation);
}

index::SpannRuntimeOptions IndexLifecycle::Runtime() const {
  // The budget a fresh index opens with (before ResetBuffer sizes it to its vectors).
  index::SpannRuntimeOptions runtime{IoOf(options_.io), CacheBudget(0, 0),
                                     options_.index_ram_bytes_limit};
  runtime.fs = fs_;
  return runtime;
}

size_t IndexCacheBudget(const Options& options, size_t fixed_bytes, size_t vector_bytes,
                        size_t machine_bytes) {
  const size_t limit = options.index_ram_bytes_limit;
  const bool automatic = options.posting_cache_bytes == Options::kAutoPostingCache;
  if (limit == 0) {
    if (!automatic) return options.posting_cache_bytes;
    // A tenant's scoped search scores its members' full vectors in place of sparse postings'
    // codes only while the cache holds every vector (SpannIndex::MembersFirst): at 1M x 128 the
    // default 256 MiB held ~458k of 1M, and tenants of 2,048-4,095 vectors took 94 us instead of
    // 49 (docs/PERFORMANCE.md). The cache fills only as searches read vectors.
    const size_t every = vector_bytes + vector_bytes / 4;
    const size_t most = machine_bytes != 0 ? machine_bytes / 4 : every;
    return std::max(kDefaultPostingCacheBytes, std::min(every, most));
  }
  const size_t left = fixed_bytes >= limit ? 0 : limit - fixed_bytes;
  return automatic ? left : std::min(options.posting_cache_bytes, left);
}

size_t MachineMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  size_t bytes = pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
  // A container's memory limit (cgroup v2, else v1): "max" or an unlimited v1 value leaves the
  // physical memory.
  for (const char* path :
       {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    unsigned long long limit = 0;
    if (in >> limit && limit > 0 && (bytes == 0 || limit < bytes)) bytes = limit;
  }
  return bytes;
}

size_t IndexLifecycle::CacheBudget(size_t fixed_bytes, size_t vector_bytes) const {
  return IndexCacheBudget(options_, fixed_bytes, vector_bytes, MachineMemoryBytes());
}

void IndexLifecycle::ResetBuffer() {
  index::SpannIndex* spann = state_->spann.get();
  state_->buffer.Reset(spann);
  if (spann != nullptr) {
    // The empty buckets count as fixed index RAM beside the SpannIndex's own.
    spann->SetCacheBudget(CacheBudget(
        spann->FixedMemoryBytes() + state_->buffer.MemoryBytes(),
        spann->manifest().num_vectors * storage::VectorCache::SlotBytes(spec_.dimension)));
  }
}

absl::Status IndexLifecycle::Open(const storage::StoredIndex& stored) {
  const std::string where = absl::StrCat("collection '", spec_.name, "' index manifest");
  SHOAL_ASSIGN_OR_RETURN(index::SpannManifest manifest,
                         index::DecodeManifest(stored.manifest, where));
  SHOAL_ASSIGN_OR_RETURN(state_->spann, index::SpannIndex::Open(Dir(manifest.generation), manifest,
                                                                stored.postings, Runtime()));
  state_->indexed_below = std::max(manifest.indexed_below, stored.indexed_below);
  for (uint64_t iid : stored.stale_ids) state_->MarkStale(iid);
  state_->tombstones_at_sweep = state_->stale.size();
  ResetBuffer();
  return absl::OkStatus();
}

index::DataShape IndexLifecycle::Shape(uint64_t n) const {
  return {n, spec_.dimension, IndexMetric(spec_.metric), options_.index_ram_bytes_limit};
}

absl::Status IndexLifecycle::Build(const std::string& spec, uint64_t next_internal_id,
                                   const IndexBuildProgressFn& progress) {
  // A bad spec fails before any vector is read; an auto one is resolved once they are counted.
  SHOAL_RETURN_IF_ERROR(index::ResolveSpannSpec(spec, Shape(0)).status());
  Reporter report(progress);
  report("reading", 0);
  // Never a generation tried before in this process: a failed commit may have named it.
  uint64_t generation = last_generation_ + 1;
  {
    absl::ReaderMutexLock lock(&state_->mu);
    if (state_->spann) generation = std::max(generation, state_->spann->manifest().generation + 1);
  }
  SHOAL_ASSIGN_OR_RETURN(Vectors vectors, ReadAll(report));
  SHOAL_ASSIGN_OR_RETURN(index::SpannOptions options,
                         index::ResolveSpannSpec(spec, Shape(vectors.ids.size())));
  last_generation_ = generation;
  SHOAL_ASSIGN_OR_RETURN(index::SpannBuildOutput built,
                         WriteGeneration(options, vectors, next_internal_id, generation, report));
  SHOAL_ASSIGN_OR_RETURN(auto fresh, OpenBuilt(Dir(generation), built.manifest, built.postings));
  report("calibrating", 0);
  SHOAL_RETURN_IF_ERROR(Calibrate(*fresh, vectors, &built.manifest));
  fresh->SetCalibration(built.manifest.calibration, built.manifest.restricted,
                        built.manifest.pruned);
  report("calibrating", 1);
  report("committing", 0);
  SHOAL_RETURN_IF_ERROR(SwapIn(std::move(fresh), index::EncodeManifest(built.manifest),
                               built.postings, next_internal_id));
  report("committing", 1);
  return absl::OkStatus();
}

// Every live vector, in index form, read back from RocksDB (the buffer may hold only the
// vectors written since the previous build).
absl::StatusOr<IndexLifecycle::Vectors> IndexLifecycle::ReadAll(Reporter& report) {
  size_t expected = 1;
  {
    absl::ReaderMutexLock lock(&state_->mu);
    expected = std::max<size_t>(1, state_->id_of.size());
  }
  const size_t every = std::max<size_t>(1, expected / 32);
  Vectors out;
  std::vector<float> scratch;
  SHOAL_RETURN_IF_ERROR(store_->ScanRecords(id_, [&](uint64_t iid, Record&& r) {
    out.ids.push_back(iid);
    if (out.ids.size() % every == 0) report("reading", double(out.ids.size()) / expected);
    const float* v = IndexForm(spec_.metric, r.vector, &scratch);
    out.data.insert(out.data.end(), v, v + spec_.dimension);
    return absl::OkStatus();
  }));
  return out;
}

// Built under a temporary name and renamed once complete and synced, so a directory with a
// generation's name is always whole. Leftovers of a failed or crashed build are never
// referenced (the manifest names the generation in use); they are removed here and at open.
absl::StatusOr<index::SpannBuildOutput> IndexLifecycle::WriteGeneration(
    const index::SpannOptions& options, const Vectors& vectors, uint64_t next_internal_id,
    uint64_t generation, Reporter& report) {
  const std::string dir = Dir(generation);
  const std::string tmp = dir + ".tmp";
  SHOAL_RETURN_IF_ERROR(fs_->RemoveAll(dir));
  SHOAL_RETURN_IF_ERROR(fs_->RemoveAll(tmp));
  SHOAL_RETURN_IF_ERROR(fs_->CreateDirs(tmp));
  index::SpannBuildInput input{vectors.ids,
                               vectors.data.data(),
                               spec_.dimension,
                               IndexMetric(spec_.metric),
                               next_internal_id,
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
  return built;
}

absl::Status IndexLifecycle::Calibrate(const index::SpannIndex& fresh, const Vectors& vectors,
                                       index::SpannManifest* manifest) const {
  const index::SpannManifest& m = fresh.manifest();
  index::CalibrationInput in;
  in.index = &fresh;
  in.ids = vectors.ids;
  in.vectors = vectors.data.data();
  in.dim = spec_.dimension;
  in.metric = IndexMetric(spec_.metric);
  in.num_postings = m.num_postings;
  in.queries = m.options.calibration_queries;
  in.seed = m.options.seed;
  // ann-benchmarks' epsilon on the cosine distance (index/spann/spann_calibration.h).
  if (spec_.metric == Metric::kCosine) in.hit_epsilon = 1e-3f;
  in.unit_norm = spec_.metric == Metric::kCosine;  // index form: unit length (db/index_form.h)
  in.threads = options_.build_threads != 0 ? options_.build_threads
                                           : std::max(1u, std::thread::hardware_concurrency());
  // The ground truth on the build's clustering backend (its fused top-m kernel).
  auto backend = index::MakeDefaultClusteringBackend(options_.build_threads);
  in.backend = backend.get();
  // With query-aware pruning for target-recall searches to choose (SpannIndex::ResolvePruning):
  // not where the codes stay on the SSD, where each calibration search reads pages (and at 10M x
  // 128 pruning scanned more postings for the same recall: docs/PERFORMANCE.md, SSD regime).
  const bool prune = m.options.pruning_ratio == 0 && fresh.codes_resident();
  SHOAL_ASSIGN_OR_RETURN(
      manifest->calibration,
      index::CalibrateSpann(
          in, prune ? std::span<const float>(index::kPruningRatios) : std::span<const float>(),
          &manifest->pruned));
  // Restricted searches: their ground truths are scans (no fused kernel for a filtered top-k),
  // so they sample at most kRestrictedQueries.
  constexpr uint32_t kRestrictedQueries = 200;
  SHOAL_ASSIGN_OR_RETURN(manifest->restricted,
                         index::CalibrateRestricted(in, index::kRestrictedDensities,
                                                    std::min(in.queries, kRestrictedQueries)));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<index::SpannIndex>> IndexLifecycle::OpenBuilt(
    const std::string& dir, const index::SpannManifest& manifest,
    std::span<const storage::PostingRow> postings) const {
  SHOAL_ASSIGN_OR_RETURN(auto fresh, index::SpannIndex::Open(dir, manifest, postings, Runtime()));
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

absl::Status IndexLifecycle::SwapIn(std::unique_ptr<index::SpannIndex> fresh,
                                    const std::string& manifest,
                                    std::span<const storage::PostingRow> postings,
                                    uint64_t next_internal_id) {
  // The commit point (a synced RocksDB write): from here on a reopen finds the new index. If it
  // fails the old index keeps serving; the new directory stays, since the failed commit may
  // still be found after a reopen (its outcome is unknown), and the next open removes whichever
  // directory the manifest does not name.
  // Online updates of the old index commit no directory rows beside (or, should this commit's
  // outcome be unknown, after) the new index's.
  std::string old_dir;
  {
    IndexMaintainer::WorkClaim work(maintainer_);
    maintainer_->Stop();
    SHOAL_RETURN_IF_ERROR(store_->CommitIndex(id_, manifest, postings));
    absl::MutexLock lock(&state_->mu);
    if (state_->spann != nullptr) old_dir = Dir(state_->spann->manifest().generation);
    state_->spann = std::move(fresh);
    state_->indexed_below = next_internal_id;
    state_->ClearStale();
    maintainer_->Reset();
    ResetBuffer();
    // The tenants' sub-trees hang on the new tree. (Reads the records of ids tenants see while
    // searches wait: O(those ids) once per build.)
    if (index_changed_) index_changed_();
  }
  // Freed only now that the commit that stopped referencing it is durable.
  if (!old_dir.empty()) fs_->RemoveAll(old_dir).IgnoreError();
  return absl::OkStatus();
}

absl::Status IndexLifecycle::Flatten() {
  std::string old_dir;
  {
    absl::ReaderMutexLock lock(&state_->mu);
    if (state_->spann == nullptr) return absl::OkStatus();
    old_dir = Dir(state_->spann->manifest().generation);
  }
  IndexMaintainer::WorkClaim work(maintainer_);  // no online update commits beside the clear
  maintainer_->Stop();
  SHOAL_RETURN_IF_ERROR(store_->ClearIndex(id_));
  index::FlatIndex all(spec_.dimension, IndexMetric(spec_.metric));
  std::vector<float> scratch;
  SHOAL_RETURN_IF_ERROR(store_->ScanRecords(id_, [&](uint64_t iid, Record&& r) {
    all.Add(iid, IndexForm(spec_.metric, r.vector, &scratch));
    return absl::OkStatus();
  }));
  {
    absl::MutexLock lock(&state_->mu);
    state_->spann.reset();
    state_->ClearStale();
    maintainer_->Reset();
    state_->indexed_below = 0;
    state_->buffer.Replace(std::move(all));
    if (index_changed_) index_changed_();
  }
  fs_->RemoveAll(old_dir).IgnoreError();
  return absl::OkStatus();
}

void IndexLifecycle::Release() {
  if (state_->spann == nullptr) return;
  const std::string dir = Dir(state_->spann->manifest().generation);
  state_->spann.reset();
  state_->buffer.Reset(nullptr);
  // Unreferenced now; a leftover is only garbage, removed at the next open.
  fs_->RemoveAll(dir).IgnoreError();
}

}  // namespace shoal::db

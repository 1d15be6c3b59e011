// IndexLifecycle: a collection's SSD index from build to drop. It opens the stored index when
// the collection loads; builds a new generation (every record read back from RocksDB, clustered,
// written under <dir>.tmp and published once synced, checked against the RAM bound, committed
// with its postings as the commit point, swapped in for searches and the maintainer, the old
// generation freed); goes back to flat; and releases the index when the collection is dropped.
// Collection composes it; the write path and online updates (IndexMaintainer) live elsewhere.
//
//   IndexLifecycle lifecycle(store, meta, options, index_root, fs, &state, &maintainer);
//   { absl::MutexLock l(&state.mu); SHOAL_RETURN_IF_ERROR(lifecycle.Open(stored)); }
//   SHOAL_RETURN_IF_ERROR(lifecycle.Build("spann:centroid_ratio=0.05", next_id, progress));
//   lifecycle.Dir(lifecycle.last_generation());  // index_root/c<id>.g<generation>
//
// A generation's directory is whole whenever it has its name. A directory no manifest names is
// garbage (a failed or crashed build): it is removed here or at the next open.
//
// Thread safety: Build and Flatten must run under the collection's write lock with no write in
// flight (they change what the write path reads); they take the maintainer's work lock and the
// state's lock themselves. Open, ResetBuffer and Release need the state's lock held. Dir: any
// thread. Errors: InvalidArgument (a bad spec), ResourceExhausted (a full disk, or the centroids
// over Options::index_ram_bytes_limit), DataLoss (a damaged stored index), Internal (I/O).
#ifndef SHOAL_DB_INDEX_LIFECYCLE_H_
#define SHOAL_DB_INDEX_LIFECYCLE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "db/collection_state.h"
#include "db/index_maintainer.h"
#include "index/spann/spann_auto.h"
#include "index/spann/spann_builder.h"
#include "index/spann/spann_index.h"
#include "shoal/options.h"
#include "shoal/types.h"
#include "storage/io/file_system.h"
#include "storage/records/record_store.h"

namespace shoal::db {

// The caches' budget for an index whose fixed part (centroids, navigator, resident codes) takes
// `fixed_bytes` and whose full vectors take `vector_bytes` to cache every one of them
// (storage::VectorCache::SlotBytes each): Options::posting_cache_bytes; by default, without a
// RAM limit, room for every vector and a quarter more (the writes to come), at least 256 MiB
// and at most a quarter of `machine_bytes`; under index_ram_bytes_limit all the limit leaves;
// never over what the limit leaves.
size_t IndexCacheBudget(const Options& options, size_t fixed_bytes, size_t vector_bytes,
                        size_t machine_bytes);
// The machine's physical memory in bytes, or the process's cgroup memory limit when lower (0
// when unknown).
size_t MachineMemoryBytes();

class IndexLifecycle {
 public:
  // None of the pointers is owned; all must outlive this. `index_changed` (may be empty) is
  // called with the state's lock held exclusively whenever the SSD index in the state was
  // replaced or dropped (the collection rebuilds its tenant tree on the new centroid tree there).
  IndexLifecycle(storage::RecordStore* store, const storage::StoredCollection& meta,
                 const Options& options, std::string index_root, storage::FileSystem* fs,
                 CollectionState* state, IndexMaintainer* maintainer,
                 std::function<void()> index_changed = {});

  // The directory of the index generation `generation`, under index_root().
  std::string Dir(uint64_t generation) const;
  const std::string& index_root() const { return index_root_; }
  // The generation of the last build tried (0: none in this process).
  uint64_t last_generation() const { return last_generation_; }

  // At load: opens the stored index into the state (its tombstones and watermark too).
  absl::Status Open(const storage::StoredIndex& stored) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu);
  // Builds the SPANN index `spec` over every record, commits it and swaps it in. Vectors with
  // ids below `next_internal_id` are all in it. On error the old index keeps serving.
  absl::Status Build(const std::string& spec, uint64_t next_internal_id,
                     const IndexBuildProgressFn& progress);
  // Drops the SSD index (durably), leaving every vector in the flat buffer. OK without one.
  absl::Status Flatten();
  // The collection is dropped: the index leaves the state and its directory is removed.
  void Release() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu);
  // Empties the buffer, shaped for the current SSD index (or none), and re-splits index RAM.
  void ResetBuffer() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu);

 private:
  // Every live vector in index form, read back from RocksDB.
  struct Vectors {
    std::vector<uint64_t> ids;
    std::vector<float> data;
  };
  class Reporter;
  // The data shape an auto spec is chosen for: n vectors of this collection, its RAM bound.
  index::DataShape Shape(uint64_t n) const;
  // The target-recall tables of a freshly built index, measured on sampled `vectors`: into
  // manifest->calibration (unrestricted) and manifest->restricted (random parts of the vectors,
  // what tenants' searches read; index/spann/spann_calibration.h).
  absl::Status Calibrate(const index::SpannIndex& fresh, const Vectors& vectors,
                         index::SpannManifest* manifest) const;
  absl::StatusOr<Vectors> ReadAll(Reporter& report);
  // Writes generation `generation` under its .tmp name and publishes it.
  absl::StatusOr<index::SpannBuildOutput> WriteGeneration(const index::SpannOptions& options,
                                                          const Vectors& vectors,
                                                          uint64_t next_internal_id,
                                                          uint64_t generation, Reporter& report);
  // Opens the built index in `dir` and checks it fits the RAM bound (the directory is removed
  // if not).
  absl::StatusOr<std::unique_ptr<index::SpannIndex>> OpenBuilt(
      const std::string& dir, const index::SpannManifest& manifest,
      std::span<const storage::PostingRow> postings) const;
  // The commit point, then the swap for searches and the maintainer.
  absl::Status SwapIn(std::unique_ptr<index::SpannIndex> fresh, const std::string& manifest,
                      std::span<const storage::PostingRow> postings, uint64_t next_internal_id);
  index::SpannRuntimeOptions Runtime() const;
  // IndexCacheBudget with this collection's options and the machine's memory.
  size_t CacheBudget(size_t fixed_bytes, size_t vector_bytes) const;

  storage::RecordStore* const store_;
  const uint32_t id_;
  const CollectionSpec spec_;
  const Options options_;
  const std::string index_root_;
  storage::FileSystem* const fs_;
  CollectionState* const state_;
  IndexMaintainer* const maintainer_;
  const std::function<void()> index_changed_;
  uint64_t last_generation_ = 0;  // under the collection's write lock
};

}  // namespace shoal::db

#endif  // SHOAL_DB_INDEX_LIFECYCLE_H_

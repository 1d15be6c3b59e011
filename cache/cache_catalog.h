// CacheCatalog: every semantic cache of a database by name, and the models' reported loads
// they share. DBImpl owns one and delegates its "Semantic caches" calls to it.
//
//   SHOAL_ASSIGN_OR_RETURN(auto caches, CacheCatalog::Open(store, SystemClock()));
//   SHOAL_RETURN_IF_ERROR(caches->Create({.name = "answers", .dimension = 384}));
//   SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<SemanticCache> c, caches->Find("answers"));
//
// Background sweep: StartSweeper runs Sweep every period on its own thread (expired entries
// leave RAM and RocksDB even when no call touches their cache); the destructor stops it.
// Quarantine: a cache whose rows do not load at Open (a damaged row: DataLoss) is kept aside
// instead of failing Open; the other caches serve, Find on it returns DataLoss with the
// reason, List shows it with CacheInfo::quarantine, Drop removes its rows.
// Thread safety: all methods may be called concurrently. A SemanticCache found stays valid
// while its shared_ptr is held; after Drop its calls fail with FailedPrecondition.
// Errors: InvalidArgument (spec, naming the field), AlreadyExists, NotFound ("cache: no cache
// 'x'"), DataLoss (a quarantined cache), the store's errors.
#ifndef SHOAL_CACHE_CACHE_CATALOG_H_
#define SHOAL_CACHE_CACHE_CATALOG_H_

#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cache/clock.h"
#include "cache/semantic_cache.h"
#include "shoal/cache.h"
#include "storage/records/record_store.h"

namespace shoal::cache {

class CacheCatalog {
 public:
  // Loads every cache recorded in `store` (not owned; must outlive the catalog).
  static absl::StatusOr<std::unique_ptr<CacheCatalog>> Open(storage::RecordStore* store,
                                                            const Clock* clock);

  absl::Status Create(const CacheSpec& spec) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Drop(std::string_view name) ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<CacheInfo> List() ABSL_LOCKS_EXCLUDED(mu_);  // by name
  absl::StatusOr<std::shared_ptr<SemanticCache>> Find(std::string_view name)
      ABSL_LOCKS_EXCLUDED(mu_);
  // InvalidArgument unless 0 <= load <= 1 and the model name is at most 256 bytes.
  absl::Status ReportModelLoad(std::string_view model, double load);
  // Sweeps every cache (expired entries out); returns how many entries were removed.
  absl::StatusOr<uint64_t> Sweep() ABSL_LOCKS_EXCLUDED(mu_);
  // Starts the background sweep every `period` (wall time; > 0). Once per catalog.
  void StartSweeper(absl::Duration period) ABSL_LOCKS_EXCLUDED(sweeper_mu_);
  // Background sweeps finished so far (for tests and metrics).
  uint64_t BackgroundSweeps() const ABSL_LOCKS_EXCLUDED(sweeper_mu_);
  ~CacheCatalog();

 private:
  CacheCatalog(storage::RecordStore* store, const Clock* clock) : store_(store), clock_(clock) {}
  void SweepLoop(absl::Duration period) ABSL_LOCKS_EXCLUDED(sweeper_mu_);

  storage::RecordStore* const store_;
  const Clock* const clock_;
  ModelLoads loads_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<SemanticCache>> caches_ ABSL_GUARDED_BY(mu_);
  // Caches that failed to load: spec and why.
  absl::flat_hash_map<std::string, std::pair<CacheSpec, absl::Status>> quarantined_
      ABSL_GUARDED_BY(mu_);

  mutable absl::Mutex sweeper_mu_;
  bool stopping_ ABSL_GUARDED_BY(sweeper_mu_) = false;
  uint64_t sweeps_ ABSL_GUARDED_BY(sweeper_mu_) = 0;
  std::thread sweeper_;
};

// InvalidArgument naming "spec.name" / "spec.dimension" / "spec.metric".
absl::Status ValidateCacheSpec(const CacheSpec& spec);

}  // namespace shoal::cache

#endif  // SHOAL_CACHE_CACHE_CATALOG_H_

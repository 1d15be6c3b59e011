// SemanticCache: one named cache of shoal/cache.h — the engine behind DB's "Semantic caches".
//
//   SHOAL_ASSIGN_OR_RETURN(auto c, SemanticCache::Create(spec, store, SystemClock(), &loads));
//   SHOAL_ASSIGN_OR_RETURN(uint64_t id, c->Store(request, /*sync=*/true));
//   SHOAL_ASSIGN_OR_RETURN(CacheLookupResult r, c->Lookup(request.lookup));
//
// Layout: one vector index (ShardIndex, vectors in RAM: exact while the shard is small, clustered
// IVF with 1-bit RaBitQ codes and exact rerank once it is large) and one exact-prompt map per shard
// = (partition, category); a lookup only ever touches its own shard, so partitions are hard. A
// clustered shard's nearest similarity is exact for the entry it finds, which is the true nearest
// at the measured recall (docs/PERFORMANCE.md). Entry rows (response, vector, partition) and
// metadata rows are in the RecordStore (cache_rows.h); a hit reads its response from there. Quotas,
// eviction order and expiry are per category over all partitions.
//
// Expiry: an entry is served while now < ttl_start + ttl(load) (cache_policy.h), checked on
// the candidate only; entries past the longest TTL the band allows are removed by Sweep (run
// by Store and Invalidate, and by CacheCatalog's background sweeper), never scanned for at
// lookup; Stats counts expirations as the sweeps make them.
// Durability: Store commits its rows (synced when asked) before the entry becomes visible;
// Load rebuilds everything from the rows and drops entries already past their longest TTL.
// Hit counts, TTL refreshes and learned thresholds are written unsynced (a crash may forget
// them, never an entry).
//
// Index builds: a large shard's clustered index is rebuilt in the background as it grows and
// after Load (ShardIndex); meanwhile lookups search the previous clustering (or scan exactly,
// right after Load), and the finished build is swapped in under the writer lock by the next
// lookup, store or sweep of the cache. Load therefore returns before the indexes are built.
//
// Thread safety: all methods may be called concurrently. A reader/writer lock per cache:
// lookups search, decide and read the hit's response under the reader lock, so they run in
// parallel with each other; a hit's LRU tick and hit count are atomics of the entry, set under
// the reader lock (eviction reorders lazily: an entry hit since it was ordered is moved when
// eviction reaches it); only a hit that refreshes its TTL (refresh_ttl_on_hit) takes the writer
// lock briefly, to move it in the expiry order and write its metadata row. Stats and Info take the
// reader lock. Stores, invalidation, feedback, sweeps and policies take the writer lock. Counters
// and the latency histogram are atomics. Errors: InvalidArgument naming the field, NotFound (entry
// id), ResourceExhausted (an entry larger than its category's byte quota), FailedPrecondition (the
// cache was dropped), and the store's errors.
#ifndef SHOAL_CACHE_SEMANTIC_CACHE_H_
#define SHOAL_CACHE_SEMANTIC_CACHE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "base/sharded_hash.h"
#include "cache/cache_rows.h"
#include "cache/clock.h"
#include "cache/threshold_learning.h"
#include "shoal/cache.h"
#include "storage/records/record_store.h"

namespace shoal::cache {

// Models' reported loads in [0, 1] (DB::ReportModelLoad), shared by every cache. Thread-safe.
class ModelLoads {
 public:
  void Set(std::string_view model, double load) ABSL_LOCKS_EXCLUDED(mu_);
  double Get(std::string_view model) const ABSL_LOCKS_EXCLUDED(mu_);  // 0 when never reported

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, double> loads_ ABSL_GUARDED_BY(mu_);
};

// Lookup latency in fixed buckets (microseconds). Thread-safe (atomic counts; a Fill taken
// while Records run may miss the newest of them).
class LatencyHistogram {
 public:
  static constexpr std::array<double, 12> kBoundsUs = {10,   25,   50,   100,   250,   500,
                                                       1000, 2500, 5000, 10000, 50000, 100000};
  void Record(double micros);
  void Fill(CacheStats* stats) const;

 private:
  std::array<std::atomic<uint64_t>, kBoundsUs.size() + 1> counts_{};
  std::atomic<uint64_t> sum_ns_{0};
};

class SemanticCache {
 public:
  // Records a new cache (its spec row, synced) and returns it empty. The spec must be valid.
  static absl::StatusOr<std::unique_ptr<SemanticCache>> Create(const CacheSpec& spec,
                                                               storage::RecordStore* store,
                                                               const Clock* clock,
                                                               const ModelLoads* loads);
  // Rebuilds a cache from its rows. DataLoss when a row does not decode.
  static absl::StatusOr<std::unique_ptr<SemanticCache>> Load(const CacheSpec& spec,
                                                             storage::RecordStore* store,
                                                             const Clock* clock,
                                                             const ModelLoads* loads);
  ~SemanticCache();

  const CacheSpec& spec() const { return spec_; }
  absl::Status SetPolicy(std::string_view category, const CachePolicy& policy)
      ABSL_LOCKS_EXCLUDED(mu_);
  CachePolicy GetPolicy(std::string_view category) const ABSL_LOCKS_EXCLUDED(mu_);

  absl::StatusOr<CacheLookupResult> Lookup(const CacheLookupRequest& request)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The new entry's id, or 0 when the category is disabled (nothing stored).
  absl::StatusOr<uint64_t> Store(const CacheStoreRequest& request, bool sync)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<uint64_t> Invalidate(const CacheInvalidation& which) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Feedback(const CacheFeedbackReport& report) ABSL_LOCKS_EXCLUDED(mu_);
  // Removes the entries past their category's longest TTL; returns how many.
  absl::StatusOr<uint64_t> Sweep() ABSL_LOCKS_EXCLUDED(mu_);
  CacheStats Stats() ABSL_LOCKS_EXCLUDED(mu_);
  CacheInfo Info() const ABSL_LOCKS_EXCLUDED(mu_);
  // Swaps finished background index builds in (ShardIndex::AdoptRebuild), under the writer lock
  // for as long as the replay of the changes made during each build takes. Lookups call it when
  // their shard's build finished; Store and Sweep swap in as they go.
  void AdoptIndexBuilds() ABSL_LOCKS_EXCLUDED(mu_);
  // Waits for every shard's background index build and swaps it in, holding the writer lock
  // meanwhile (tests, benches).
  absl::Status WaitForIndexBuilds() ABSL_LOCKS_EXCLUDED(mu_);
  // Deletes every row of the cache (synced); every later call fails with FailedPrecondition.
  absl::Status Drop() ABSL_LOCKS_EXCLUDED(mu_);

  // Defined in semantic_cache_internal.h (not an API).
  struct Category;
  struct Shard;
  struct Entry;

 private:
  enum class Removal { kExpired, kEvictedByEntries, kEvictedByBytes, kInvalidated, kReplaced };
  using Writes = std::vector<storage::RecordStore::CacheWrite>;

  SemanticCache(const CacheSpec& spec, storage::RecordStore* store, const Clock* clock,
                const ModelLoads* loads);

  // Validation and the query vector as searched (normalised under cosine).
  absl::Status ValidateRequest(const CacheLookupRequest& request, std::string_view field) const;
  void Prepare(std::span<const float> embedding, std::vector<float>* out) const;
  static std::string PromptHashOf(const CacheLookupRequest& request);
  float Similarity(float distance) const;

  Category* FindCategory(std::string_view name) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  Category* GetCategory(std::string_view name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Shard* FindShard(const CachePartition& partition, std::string_view category) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  Shard* GetShard(const CachePartition& partition, Category* category)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Whether `e` of category `c` is within its TTL at `now` under `load` (the category's share
  // of the band).
  bool Served(const Entry& e, const Category& c, double load, int64_t now) const;
  float ThresholdOf(const Entry& e, const Category& c, double load) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The nearest entry of `shard` served at `now` (nullptr if none) and its similarity.
  std::pair<Entry*, float> Nearest(const Shard& shard, const float* query, bool served_only,
                                   int64_t now, double load) ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Lookup's decision (exact shortcut, then the nearest served entry against its threshold)
  // into *r; returns the entry decided on (the hit, or the nearest on a miss; may be null).
  Entry* Decide(const Category& c, const Shard* shard, const float* query, const std::string& hash,
                double load, int64_t now, CacheLookupResult* r) ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The stored response of entry `id` (DataLoss when its row is missing or damaged).
  absl::Status ReadResponse(uint64_t id, std::string* response) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Lookup's work under the lock (shared, or exclusive when it creates category `c`).
  // What a lookup does after its shared section.
  struct AfterLookup {
    bool adopt = false;    // the shard's background index build finished (AdoptIndexBuilds)
    bool refresh = false;  // the hit refreshes its TTL (RefreshTtl, under the writer lock)
  };
  absl::Status LookupLocked(const CacheLookupRequest& request, const float* query,
                            const std::string& hash, double load, Category* c, CacheLookupResult* r,
                            AfterLookup* after) ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // A hit's LRU tick, hit count and similarity: atomics, under the reader lock.
  void Touch(Entry* e, float similarity) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // A TTL-refreshing hit's bookkeeping under the writer lock: the entry's expiry order and its
  // metadata row (nothing if the entry went meanwhile).
  absl::Status RefreshTtl(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_);

  // What a store learns (threshold_learning.h), applied by Learn once its rows are committed:
  // the observed neighbour's new metadata, whether the neighbour lay inside the load band and
  // whether the store replaced an identical prompt's other answer.
  struct Observation {
    Entry* neighbour = nullptr;
    EntryMeta neighbour_meta;
    uint64_t CategoryLearning::*band = nullptr;  // band_correct or band_wrong
    bool answer_changed = false;
  };
  // The observation of `entry` (its vector `vector`, replacing entry `replaced` or 0) in
  // `shard`; sets entry->meta.wrong_floor when the neighbour answers differently.
  Observation Observe(const Shard& shard, const float* vector, uint64_t replaced, Entry* entry)
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void Learn(const Observation& seen, Category* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The order key of `e` under `eviction` (smaller goes first), from its atomics as of now.
  std::pair<uint64_t, uint64_t> OrderKey(const Entry& e, CacheEviction eviction) const;
  void Insert(std::unique_ptr<Entry> entry, const float* vector) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Remove(uint64_t id, Removal why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddDeletes(uint64_t id, Writes* writes) const;
  // `e` and the entries near it in its shard (among its nearest few, within reach of the
  // loosest threshold its policy allows) that hold the same answer: what a wrong exact hit
  // shows to be stale (other phrasings of the question, stored before the answer changed).
  std::vector<uint64_t> StaleSiblings(const Entry& e) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void PutMeta(const Entry& e, Writes* writes) const;
  // Store's quota check: the entries of `category` to evict so that one more of `bytes` fits
  // (not `keep`), with the quota each one frees.
  // Reorders the stale entries it meets at the front of the order (lazy LRU/LFU).
  std::vector<std::pair<uint64_t, Removal>> Victims(Category& category, uint64_t bytes,
                                                    uint64_t keep)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Into *writes: the index model row of `shard` when its clustering changed since last saved
  // (a put, or a delete once exact again). Unsynced with the other rows: only a hint.
  void SaveIndexModel(Shard* shard, Writes* writes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Swaps in every finished index build and saves the models that changed.
  absl::Status AdoptIndexBuildsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Collects (into *writes) and removes every entry past its hard TTL.
  uint64_t SweepLocked(int64_t now, Writes* writes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RebuildOrder(Category* category) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckLive() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status LoadRows() ABSL_LOCKS_EXCLUDED(mu_);
  // LoadRows' rows whose loss costs only learning or training: the categories' learned states
  // and the shards' saved index models (ignored when damaged).
  absl::Status LoadHints() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Matches(const Entry& e, const CacheInvalidation& which, int64_t now) const;

  const CacheSpec spec_;
  storage::RecordStore* const store_;
  const Clock* const clock_;
  const ModelLoads* const loads_;

  mutable absl::Mutex mu_;
  bool dropped_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  mutable std::atomic<uint64_t> tick_{0};            // LRU clock: one tick per store or hit
  CachePolicy default_policy_ ABSL_GUARDED_BY(mu_);  // resolved
  CachePolicy default_raw_ ABSL_GUARDED_BY(mu_);     // as set
  absl::flat_hash_map<std::string, std::unique_ptr<Category>> categories_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::unique_ptr<Shard>> shards_ ABSL_GUARDED_BY(mu_);
  // Sharded 256 ways: a store that grows it rehashes 1/256 of the entries, not all of them
  // under the writer lock (0.5 s of CPU at 917,504 entries, the slowest store of a 1M fill).
  base::ShardedHashMap<uint64_t, std::unique_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  LatencyHistogram latency_;
};

}  // namespace shoal::cache

#endif  // SHOAL_CACHE_SEMANTIC_CACHE_H_

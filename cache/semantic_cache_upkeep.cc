// SemanticCache's upkeep: expiry sweeps, invalidation, drop, stats.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cache/cache_policy.h"
#include "cache/semantic_cache_internal.h"

namespace shoal::cache {
namespace {

void Add(CacheCounters* to, const CacheCounters& from) {
  to->lookups += from.lookups;
  to->hits += from.hits;
  to->exact_hits += from.exact_hits;
  to->misses += from.misses;
  to->stores += from.stores;
  to->false_hit_reports += from.false_hit_reports;
  to->correct_reports += from.correct_reports;
  to->evicted_by_entries += from.evicted_by_entries;
  to->evicted_by_bytes += from.evicted_by_bytes;
  to->invalidated += from.invalidated;
  to->expirations += from.expirations;
  to->entries += from.entries;
  to->bytes += from.bytes;
}

}  // namespace

CacheCounters AtomicCounters::Load() const {
  constexpr auto kOrder = std::memory_order_relaxed;
  return {.lookups = lookups.load(kOrder),
          .hits = hits.load(kOrder),
          .exact_hits = exact_hits.load(kOrder),
          .misses = misses.load(kOrder),
          .stores = stores.load(kOrder),
          .false_hit_reports = false_hit_reports.load(kOrder),
          .correct_reports = correct_reports.load(kOrder),
          .evicted_by_entries = evicted_by_entries.load(kOrder),
          .evicted_by_bytes = evicted_by_bytes.load(kOrder),
          .invalidated = invalidated.load(kOrder),
          .expirations = expirations.load(kOrder),
          .entries = entries.load(kOrder),
          .bytes = bytes.load(kOrder)};
}

uint64_t SemanticCache::SweepLocked(int64_t now, Writes* writes) {
  uint64_t removed = 0;
  for (auto& [name, c] : categories_) {
    const int64_t hard = HardTtlMicros(c->policy);
    if (hard == 0) continue;
    while (!c->expiry.empty() && now >= c->expiry.begin()->first + hard) {
      const uint64_t id = c->expiry.begin()->second;
      AddDeletes(id, writes);
      Remove(id, Removal::kExpired);
      ++removed;
    }
  }
  return removed;
}

absl::StatusOr<uint64_t> SemanticCache::Sweep() {
  absl::MutexLock lock(&mu_);
  SHOAL_RETURN_IF_ERROR(CheckLive());
  Writes writes;
  const uint64_t removed = SweepLocked(clock_->NowMicros(), &writes);
  for (auto& [key, shard] : shards_) {
    shard->index.AdoptRebuild();
    SaveIndexModel(shard.get(), &writes);
  }
  // Unsynced: a lost delete is redone by the next sweep or open (the entry is past its TTL).
  SHOAL_RETURN_IF_ERROR(store_->WriteCacheRows(writes, /*sync=*/false));
  return removed;
}

bool SemanticCache::Matches(const Entry& e, const CacheInvalidation& w, int64_t now) const {
  const Shard& s = *e.shard;
  if (!w.category.empty() && s.category->name != w.category) return false;
  if (w.match_partition && !(s.partition == w.partition)) return false;
  if (!w.tenant.empty() && s.partition.tenant != w.tenant) return false;
  const double age = static_cast<double>(now - e.created_us) / 1e6;
  return w.older_than_seconds <= 0 || age >= w.older_than_seconds;
}

absl::StatusOr<uint64_t> SemanticCache::Invalidate(const CacheInvalidation& which) {
  if (!(which.older_than_seconds >= 0)) {
    return absl::InvalidArgumentError("invalidation.older_than_seconds: must be >= 0");
  }
  absl::MutexLock lock(&mu_);
  SHOAL_RETURN_IF_ERROR(CheckLive());
  const int64_t now = clock_->NowMicros();
  Writes writes;
  if (!which.dry_run) SweepLocked(now, &writes);
  std::vector<uint64_t> ids;
  entries_.ForEach([&](const auto& entry) {
    if (Matches(*entry.second, which, now)) ids.push_back(entry.first);
  });
  if (which.dry_run) return ids.size();
  for (uint64_t id : ids) AddDeletes(id, &writes);
  SHOAL_RETURN_IF_ERROR(store_->WriteCacheRows(writes, /*sync=*/true));
  for (uint64_t id : ids) Remove(id, Removal::kInvalidated);
  return ids.size();
}

absl::Status SemanticCache::Drop() {
  absl::MutexLock lock(&mu_);
  SHOAL_RETURN_IF_ERROR(CheckLive());
  using Kind = storage::RecordStore::CacheWrite::Kind;
  Writes writes{{.key = SpecKey(spec_.name), .kind = Kind::kDelete},
                {.key = CachePrefix(spec_.name), .kind = Kind::kDeletePrefix}};
  SHOAL_RETURN_IF_ERROR(store_->WriteCacheRows(writes, /*sync=*/true));
  dropped_ = true;
  entries_.Clear();
  shards_.clear();
  categories_.clear();
  return absl::OkStatus();
}

CacheStats SemanticCache::Stats() {
  absl::ReaderMutexLock lock(&mu_);  // counters are atomics; the maps only read
  CacheStats out;
  out.name = spec_.name;
  std::map<std::string, const Category*> by_name;
  for (const auto& [name, c] : categories_) by_name[name] = c.get();
  for (const auto& [name, c] : by_name) {
    out.categories.push_back(
        {.category = name,
         .counters = c->counters.Load(),
         .threshold_offset = c->learning.offset,
         .band_share = BandShare(c->policy, c->learning, Lookups(*c)),
         .learned_ttl_seconds =
             static_cast<double>(LearnedTtlMicros(c->policy, c->learning)) / 1e6});
    Add(&out.total, out.categories.back().counters);
  }
  std::map<std::string, CachePartitionStats> partitions;
  for (const auto& [key, s] : shards_) {
    CachePartitionStats& p = partitions[ShardKey(s->partition, "")];
    p.partition = s->partition;
    Add(&p.counters, s->counters.Load());
  }
  for (auto& [key, p] : partitions) out.partitions.push_back(std::move(p));
  latency_.Fill(&out);
  return out;
}

void SemanticCache::SaveIndexModel(Shard* shard, Writes* writes) {
  if (shard->index.generation() == shard->saved_generation) return;
  shard->saved_generation = shard->index.generation();
  const std::string key =
      IndexModelKey(spec_.name, ShardKey(shard->partition, shard->category->name));
  std::string model = shard->index.ExportModel();
  if (model.empty()) {
    writes->push_back({.key = key, .kind = Writes::value_type::Kind::kDelete});
  } else {
    writes->push_back({.key = key, .value = std::move(model)});
  }
}

absl::Status SemanticCache::AdoptIndexBuildsLocked() {
  Writes writes;
  for (auto& [key, shard] : shards_) {
    shard->index.AdoptRebuild();
    SaveIndexModel(shard.get(), &writes);
  }
  return store_->WriteCacheRows(writes, /*sync=*/false);
}

void SemanticCache::AdoptIndexBuilds() {
  absl::MutexLock lock(&mu_);
  if (dropped_) return;
  // A failed model write only loses a hint: the next open trains instead.
  AdoptIndexBuildsLocked().IgnoreError();
}

absl::Status SemanticCache::WaitForIndexBuilds() {
  absl::MutexLock lock(&mu_);
  SHOAL_RETURN_IF_ERROR(CheckLive());
  for (auto& [key, shard] : shards_) shard->index.WaitForRebuild();
  return AdoptIndexBuildsLocked();
}

CacheInfo SemanticCache::Info() const {
  absl::ReaderMutexLock lock(&mu_);
  CacheInfo info;
  info.spec = spec_;
  for (const auto& [name, c] : categories_) {
    info.entries += c->counters.entries;
    info.bytes += c->counters.bytes;
    if (c->own_policy) info.categories.push_back(name);
  }
  for (const auto& [key, shard] : shards_) {
    info.index_builds += shard->index.rebuilding() && !shard->index.rebuild_ready();
    info.index_build_failures += shard->index.build_failures();
    if (!shard->index.last_build_error().ok()) {
      info.index_build_error = std::string(shard->index.last_build_error().message());
    }
  }
  std::sort(info.categories.begin(), info.categories.end());
  return info;
}

}  // namespace shoal::cache

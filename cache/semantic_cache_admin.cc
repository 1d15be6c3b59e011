// SemanticCache's bookkeeping half: creation and recovery, policies, the RAM structures'
// insert/remove, invalidation, sweeps and stats. Lookups and stores are in semantic_cache.cc.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cache/cache_policy.h"
#include "cache/semantic_cache_internal.h"

namespace shoal::cache {
namespace {

index::Metric IndexMetric(Metric m) {
  return m == Metric::kL2 ? index::Metric::kL2 : index::Metric::kInnerProduct;
}

}  // namespace

void ModelLoads::Set(std::string_view model, double load) {
  absl::MutexLock lock(&mu_);
  loads_[std::string(model)] = load;
}

double ModelLoads::Get(std::string_view model) const {
  absl::MutexLock lock(&mu_);
  auto it = loads_.find(absl::string_view(model.data(), model.size()));  // no copy
  return it == loads_.end() ? 0.0 : it->second;
}

void LatencyHistogram::Record(double micros) {
  size_t b = 0;
  while (b < kBoundsUs.size() && micros > kBoundsUs[b]) ++b;
  counts_[b].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(std::max(0.0, micros) * 1000), std::memory_order_relaxed);
}

void LatencyHistogram::Fill(CacheStats* stats) const {
  std::array<uint64_t, kBoundsUs.size() + 1> counts;
  for (size_t b = 0; b < counts.size(); ++b) counts[b] = counts_[b].load(std::memory_order_relaxed);
  stats->latency_bounds_us.assign(kBoundsUs.begin(), kBoundsUs.end());
  stats->latency_counts.assign(counts.begin(), counts.end());
  stats->latency_sum_us = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1000;
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  auto quantile = [&](double q) {
    if (total == 0) return 0.0;
    const double want = q * static_cast<double>(total);
    uint64_t seen = 0;
    for (size_t b = 0; b < counts.size(); ++b) {
      seen += counts[b];
      if (static_cast<double>(seen) >= want) {
        return b < kBoundsUs.size() ? kBoundsUs[b] : kBoundsUs.back() * 10;
      }
    }
    return kBoundsUs.back() * 10;
  };
  stats->lookup_p50_us = quantile(0.5);
  stats->lookup_p99_us = quantile(0.99);
}

SemanticCache::SemanticCache(const CacheSpec& spec, storage::RecordStore* store, const Clock* clock,
                             const ModelLoads* loads)
    : spec_(spec), store_(store), clock_(clock), loads_(loads) {
  default_policy_ = Resolve(CachePolicy{});
}

SemanticCache::~SemanticCache() = default;

absl::StatusOr<std::unique_ptr<SemanticCache>> SemanticCache::Create(const CacheSpec& spec,
                                                                     storage::RecordStore* store,
                                                                     const Clock* clock,
                                                                     const ModelLoads* loads) {
  std::unique_ptr<SemanticCache> c(new SemanticCache(spec, store, clock, loads));
  Writes writes;
  writes.push_back(
      {.key = CachePrefix(spec.name), .kind = Writes::value_type::Kind::kDeletePrefix});
  writes.push_back({.key = SpecKey(spec.name), .value = EncodeSpec(spec)});
  SHOAL_RETURN_IF_ERROR(store->WriteCacheRows(writes, /*sync=*/true));
  return c;
}

absl::StatusOr<std::unique_ptr<SemanticCache>> SemanticCache::Load(const CacheSpec& spec,
                                                                   storage::RecordStore* store,
                                                                   const Clock* clock,
                                                                   const ModelLoads* loads) {
  std::unique_ptr<SemanticCache> c(new SemanticCache(spec, store, clock, loads));
  SHOAL_RETURN_IF_ERROR(c->LoadRows());
  return c;
}

absl::Status SemanticCache::LoadRows() {
  absl::MutexLock lock(&mu_);
  const std::string policy_prefix = PolicyPrefix(spec_.name);
  SHOAL_RETURN_IF_ERROR(store_->ScanCacheRows(
      policy_prefix, [&](std::string_view key, std::string_view value) -> absl::Status {
        SHOAL_ASSIGN_OR_RETURN(CachePolicy p, DecodePolicy(value, key));
        std::string_view category = key.substr(policy_prefix.size());
        if (category.empty()) {
          default_policy_ = Resolve(p);
          default_raw_ = p;
        } else {
          Category* c = GetCategory(category);
          c->own_policy = true;
          c->policy = Resolve(p);
          c->raw = p;
        }
        return absl::OkStatus();
      }));
  for (auto& [name, c] : categories_) {
    if (!c->own_policy) c->policy = default_policy_, c->raw = default_raw_;
  }
  absl::flat_hash_map<uint64_t, EntryMeta> metas;
  SHOAL_RETURN_IF_ERROR(store_->ScanCacheRows(
      MetaPrefix(spec_.name), [&](std::string_view key, std::string_view value) -> absl::Status {
        SHOAL_ASSIGN_OR_RETURN(uint64_t id, IdOfKey(key));
        SHOAL_ASSIGN_OR_RETURN(metas[id], DecodeMeta(id, value));
        return absl::OkStatus();
      }));
  SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> next,
                         store_->GetCacheRow(NextIdKey(spec_.name)));
  if (next.has_value()) {
    SHOAL_ASSIGN_OR_RETURN(next_id_, DecodeU64(*next, NextIdKey(spec_.name)));
  }
  const int64_t now = clock_->NowMicros();
  Writes expired;
  SHOAL_RETURN_IF_ERROR(store_->ScanCacheRows(
      EntryPrefix(spec_.name), [&](std::string_view key, std::string_view value) -> absl::Status {
        SHOAL_ASSIGN_OR_RETURN(uint64_t id, IdOfKey(key));
        SHOAL_ASSIGN_OR_RETURN(StoredEntry s, DecodeEntry(id, value, spec_.dimension));
        auto e = std::make_unique<Entry>();
        e->id = id;
        Category* c = GetCategory(s.category);
        e->shard = GetShard(s.partition, c);
        e->shard->index.SetAutoCluster(false);  // clustered once, below
        e->prompt_hash = s.prompt_hash;
        e->response_hash = Fnv1a64(s.response);
        e->created_us = s.created_us;
        e->bytes = EntryBytes(spec_.dimension, s.response.size(), s.prompt_hash.size());
        auto m = metas.find(id);
        e->meta = m != metas.end() ? m->second : EntryMeta{.ttl_start_us = s.created_us};
        const int64_t hard = HardTtlMicros(c->policy);
        if (hard != 0 && now >= e->meta.ttl_start_us + hard) {
          AddDeletes(id, &expired);
          Bump(e->shard, &AtomicCounters::expirations);
          return absl::OkStatus();
        }
        e->hits.store(e->meta.hits, std::memory_order_relaxed);
        next_id_ = std::max(next_id_, id + 1);
        Insert(std::move(e), s.vector.data());
        return absl::OkStatus();
      }));
  SHOAL_RETURN_IF_ERROR(LoadHints());
  // The clustered indexes build in the background (ShardIndex); lookups scan exactly meanwhile.
  for (auto& [key, shard] : shards_) shard->index.SetAutoCluster(true);
  return store_->WriteCacheRows(expired, /*sync=*/false);
}

absl::Status SemanticCache::LoadHints() {
  // Learned states (threshold_learning.h); a damaged one is only lost learning.
  const std::string learning_prefix = LearningPrefix(spec_.name);
  SHOAL_RETURN_IF_ERROR(store_->ScanCacheRows(
      learning_prefix, [&](std::string_view key, std::string_view value) -> absl::Status {
        absl::StatusOr<CategoryLearning> l = DecodeLearning(value, key);
        if (l.ok()) GetCategory(key.substr(learning_prefix.size()))->learning = *l;
        return absl::OkStatus();
      }));
  // Saved index models spare the first builds their training (a model that does not decode is
  // only a lost hint: that shard trains).
  return store_->ScanCacheRows(
      IndexModelPrefix(spec_.name),
      [&](std::string_view key, std::string_view value) -> absl::Status {
        auto it = shards_.find(std::string(key.substr(IndexModelPrefix(spec_.name).size())));
        if (it != shards_.end()) it->second->index.ImportModel(value).IgnoreError();
        return absl::OkStatus();
      });
}

absl::Status SemanticCache::SetPolicy(std::string_view category, const CachePolicy& policy) {
  SHOAL_RETURN_IF_ERROR(ValidateCategory(category, "category"));
  SHOAL_RETURN_IF_ERROR(ValidatePolicy(policy, "policy"));
  const CachePolicy resolved = Resolve(policy);
  absl::MutexLock lock(&mu_);
  SHOAL_RETURN_IF_ERROR(CheckLive());
  Writes writes{{.key = PolicyKey(spec_.name, category), .value = EncodePolicy(policy)}};
  SHOAL_RETURN_IF_ERROR(store_->WriteCacheRows(writes, /*sync=*/true));
  auto apply = [&](Category* c) {
    const bool reorder = c->policy.eviction != resolved.eviction;
    c->policy = resolved;
    c->raw = policy;
    if (reorder) RebuildOrder(c);
  };
  if (category.empty()) {
    default_policy_ = resolved;
    default_raw_ = policy;
    for (auto& [name, c] : categories_) {
      if (!c->own_policy) apply(c.get());
    }
  } else {
    Category* c = GetCategory(category);
    c->own_policy = true;
    apply(c);
  }
  return absl::OkStatus();
}

CachePolicy SemanticCache::GetPolicy(std::string_view category) const {
  absl::MutexLock lock(&mu_);
  const Category* c = FindCategory(category);
  return c != nullptr && c->own_policy ? c->raw : default_raw_;
}

SemanticCache::Category* SemanticCache::FindCategory(std::string_view name) const {
  auto it = categories_.find(absl::string_view(name.data(), name.size()));  // no copy
  return it == categories_.end() ? nullptr : it->second.get();
}

SemanticCache::Category* SemanticCache::GetCategory(std::string_view name) {
  auto& slot = categories_[std::string(name)];
  if (slot == nullptr) {
    slot = std::make_unique<Category>();
    slot->name = std::string(name);
    slot->policy = default_policy_;
    slot->raw = default_raw_;
  }
  return slot.get();
}

SemanticCache::Shard* SemanticCache::FindShard(const CachePartition& partition,
                                               std::string_view category) const {
  thread_local std::string key;  // the thread's buffer: no allocation once warm
  key.clear();
  AppendShardKey(partition, category, &key);
  auto it = shards_.find(key);
  return it == shards_.end() ? nullptr : it->second.get();
}

SemanticCache::Shard* SemanticCache::GetShard(const CachePartition& partition, Category* c) {
  auto& slot = shards_[ShardKey(partition, c->name)];
  if (slot == nullptr) {
    slot = std::make_unique<Shard>(partition, c, spec_.dimension, IndexMetric(spec_.metric));
  }
  return slot.get();
}

std::pair<uint64_t, uint64_t> SemanticCache::OrderKey(const Entry& e, CacheEviction ev) const {
  switch (ev) {
    case CacheEviction::kLru:
      return {e.last_access.load(std::memory_order_relaxed), e.id};
    case CacheEviction::kLfu:
      return {e.hits.load(std::memory_order_relaxed), e.id};
    case CacheEviction::kFifo:
      break;
  }
  return {e.id, e.id};
}

void SemanticCache::Insert(std::unique_ptr<Entry> e, const float* vector) {
  Shard* s = e->shard;
  Category* c = s->category;
  s->index.Add(e->id, vector);
  if (!e->prompt_hash.empty()) s->exact[e->prompt_hash] = e->id;
  if (e->last_access.load(std::memory_order_relaxed) == 0) {
    e->last_access.store(tick_.fetch_add(1, std::memory_order_relaxed) + 1,
                         std::memory_order_relaxed);
  }
  e->order_key = OrderKey(*e, c->policy.eviction);
  c->order.insert(e->order_key);
  c->expiry.insert({e->meta.ttl_start_us, e->id});
  Bump(s, &AtomicCounters::entries);
  Bump(s, &AtomicCounters::bytes, e->bytes);
  const uint64_t id = e->id;
  entries_.Set(id, std::move(e));
}

void SemanticCache::Remove(uint64_t id, Removal why) {
  const std::unique_ptr<Entry>* found = entries_.Find(id);
  if (found == nullptr) return;
  Entry* e = found->get();
  Shard* s = e->shard;
  Category* c = s->category;
  s->index.Remove(id);
  auto x = s->exact.find(e->prompt_hash);
  if (x != s->exact.end() && x->second == id) s->exact.erase(x);
  c->order.erase(e->order_key);
  c->expiry.erase({e->meta.ttl_start_us, id});
  Bump(s, &AtomicCounters::entries, ~uint64_t{0});  // -1
  Bump(s, &AtomicCounters::bytes, uint64_t{0} - e->bytes);
  switch (why) {
    case Removal::kExpired:
      Bump(s, &AtomicCounters::expirations);
      break;
    case Removal::kEvictedByEntries:
      Bump(s, &AtomicCounters::evicted_by_entries);
      break;
    case Removal::kEvictedByBytes:
      Bump(s, &AtomicCounters::evicted_by_bytes);
      break;
    case Removal::kInvalidated:
      Bump(s, &AtomicCounters::invalidated);
      break;
    case Removal::kReplaced:
      break;
  }
  entries_.Erase(id);  // frees e
}

std::vector<uint64_t> SemanticCache::StaleSiblings(const Entry& e) const {
  constexpr size_t kNearest = 16;  // more phrasings of one question than a shard keeps apart
  std::vector<uint64_t> out{e.id};
  const ShardIndex& index = e.shard->index;
  const float* vector = index.Vector(e.id);
  if (vector == nullptr) return out;
  const auto reach = static_cast<float>(e.shard->category->policy.min_threshold);
  for (const index::Neighbor& n : index.Search(vector, kNearest)) {
    if (n.id == e.id || Similarity(n.distance) < reach) continue;
    if (entries_.At(n.id)->response_hash == e.response_hash) out.push_back(n.id);
  }
  return out;
}

void SemanticCache::AddDeletes(uint64_t id, Writes* writes) const {
  using Kind = storage::RecordStore::CacheWrite::Kind;
  writes->push_back({.key = EntryKey(spec_.name, id), .kind = Kind::kDelete});
  writes->push_back({.key = MetaKey(spec_.name, id), .kind = Kind::kDelete});
}

void SemanticCache::PutMeta(const Entry& e, Writes* writes) const {
  EntryMeta meta = e.meta;
  meta.hits = e.hits.load(std::memory_order_relaxed);
  writes->push_back({.key = MetaKey(spec_.name, e.id), .value = EncodeMeta(meta)});
}

void SemanticCache::RebuildOrder(Category* c) {
  c->order.clear();
  entries_.ForEach([&](const auto& entry) {
    Entry* e = entry.second.get();
    if (e->shard->category != c) return;
    e->order_key = OrderKey(*e, c->policy.eviction);
    c->order.insert(e->order_key);
  });
}

absl::Status SemanticCache::CheckLive() const {
  if (!dropped_) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("cache '", spec_.name, "' was dropped"));
}

}  // namespace shoal::cache

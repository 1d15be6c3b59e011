// SemanticCache's serving half: lookups, stores and feedback. The rest (load, policies,
// invalidation, sweeps, stats) is in semantic_cache_admin.cc.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cache/cache_policy.h"
#include "cache/semantic_cache_internal.h"

namespace shoal::cache {
namespace {

constexpr size_t kMaxPartitionFieldBytes = 256;
constexpr size_t kMaxPromptHashBytes = 64;
constexpr size_t kMaxResponseBytes = size_t{16} << 20;
constexpr size_t kFirstCandidates = 8;       // nearest entries looked at before widening
constexpr uint64_t kLearningSaveEvery = 64;  // reports between saves of a learned state

}  // namespace

void AppendShardKey(const CachePartition& p, std::string_view category, std::string* key) {
  for (std::string_view s :
       {std::string_view(p.tenant), std::string_view(p.model),
        std::string_view(p.params_fingerprint), std::string_view(p.context_hash), category}) {
    absl::StrAppend(key, s.size(), ":");
    key->append(s);
  }
}

std::string ShardKey(const CachePartition& p, std::string_view category) {
  std::string key;
  AppendShardKey(p, category, &key);
  return key;
}

absl::Status SemanticCache::ValidateRequest(const CacheLookupRequest& r,
                                            std::string_view field) const {
  auto bad = [&](std::string_view member, std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(field), std::string(member), ": ", std::string(why)));
  };
  const CachePartition& p = r.partition;
  for (auto [name, value] : {std::pair<std::string_view, const std::string*>{"tenant", &p.tenant},
                             {"model", &p.model},
                             {"params_fingerprint", &p.params_fingerprint},
                             {"context_hash", &p.context_hash}}) {
    if (value->size() > kMaxPartitionFieldBytes) {
      return bad(absl::StrCat("partition.", std::string(name)), "longer than 256 bytes");
    }
  }
  SHOAL_RETURN_IF_ERROR(ValidateCategory(r.category, absl::StrCat(std::string(field), "category")));
  if (!r.prompt.empty() && !r.prompt_hash.empty()) {
    return bad("prompt_hash", "give the prompt or its hash, not both");
  }
  if (!r.prompt.empty() && NormalizePrompt(r.prompt).empty()) {
    return bad("prompt", "empty after normalisation (empty prompts are never cached)");
  }
  if (r.prompt_hash.size() > kMaxPromptHashBytes) return bad("prompt_hash", "over 64 bytes");
  if (r.embedding.size() != spec_.dimension) {
    return bad("embedding", absl::StrCat("has ", r.embedding.size(),
                                         " floats; the cache's "
                                         "dimension is ",
                                         spec_.dimension));
  }
  double norm2 = 0;
  for (size_t i = 0; i < r.embedding.size(); ++i) {
    if (!std::isfinite(r.embedding[i])) {
      return bad(absl::StrCat("embedding[", i, "]"), "not a finite number");
    }
    norm2 += double{r.embedding[i]} * r.embedding[i];
  }
  if (norm2 > 1e28) return bad("embedding", "squared norm over 1e28");
  if (spec_.metric == Metric::kCosine && norm2 < 1e-37) {
    return bad("embedding", "norm too small to normalise (cosine)");
  }
  return absl::OkStatus();
}

void SemanticCache::Prepare(std::span<const float> v, std::vector<float>* out) const {
  out->assign(v.begin(), v.end());
  if (spec_.metric != Metric::kCosine) return;
  double norm2 = 0;
  for (float x : *out) norm2 += double{x} * x;
  const float norm = static_cast<float>(std::sqrt(norm2));
  for (float& x : *out) x /= norm;
}

std::string SemanticCache::PromptHashOf(const CacheLookupRequest& r) {
  if (!r.prompt_hash.empty()) return r.prompt_hash;
  if (!r.prompt.empty()) return CachePromptHash(r.prompt);
  return "";
}

float SemanticCache::Similarity(float distance) const {
  return spec_.metric == Metric::kL2 ? 1.0f - distance / 2.0f : -distance;
}

bool SemanticCache::Served(const Entry& e, const Category& c, double load, int64_t now) const {
  const int64_t ttl =
      TtlMicrosUnderLoad(c.policy, load, TtlBandShare(c.policy, c.learning, Lookups(c)));
  if (ttl != 0 && now >= e.meta.ttl_start_us + ttl) return false;
  // The learned TTL counts from the store: it is the answer that goes stale.
  const int64_t learned = LearnedTtlMicros(c.policy, c.learning);
  return learned == 0 || now < e.created_us + learned;
}

float SemanticCache::ThresholdOf(const Entry& e, const Category& c, double load) const {
  return EntryThreshold(c.policy, load, c.learning.offset, e.meta.wrong_floor,
                        BandShare(c.policy, c.learning, Lookups(c)));
}

std::pair<SemanticCache::Entry*, float> SemanticCache::Nearest(const Shard& shard,
                                                               const float* query, bool served_only,
                                                               int64_t now, double load) {
  thread_local std::vector<index::Neighbor> found;  // the thread's buffer: no allocation
  // The first served entry of `found` (closest first), with its similarity.
  auto first_served = [&]() -> std::pair<Entry*, float> {
    for (const index::Neighbor& n : found) {
      Entry* e = entries_.At(n.id).get();
      if (!served_only || Served(*e, *shard.category, load, now)) {
        return {e, Similarity(n.distance)};
      }
    }
    return {nullptr, std::numeric_limits<float>::quiet_NaN()};
  };
  // A clustered shard: its candidates (exact similarities). None served: the exact path.
  if (shard.index.clustered()) {
    shard.index.Search(query, kFirstCandidates, &found);
    auto best = first_served();
    if (best.first != nullptr) return best;
  }
  const size_t size = shard.index.size();
  for (size_t k = std::min(kFirstCandidates, size); k > 0; k = std::min(k * 8, size)) {
    shard.index.SearchExact(query, k, &found);
    auto best = first_served();
    if (best.first != nullptr || k == size) return best;
  }
  return {nullptr, std::numeric_limits<float>::quiet_NaN()};
}

void SemanticCache::Touch(Entry* e, float similarity) const {
  e->last_access.store(tick_.fetch_add(1, std::memory_order_relaxed) + 1,
                       std::memory_order_relaxed);
  e->hits.fetch_add(1, std::memory_order_relaxed);
  e->last_similarity.store(similarity, std::memory_order_relaxed);
}

SemanticCache::Entry* SemanticCache::Decide(const Category& c, const Shard* shard,
                                            const float* query, const std::string& hash,
                                            double load, int64_t now, CacheLookupResult* r) {
  r->threshold = EntryThreshold(c.policy, load, c.learning.offset, -INFINITY,
                                BandShare(c.policy, c.learning, Lookups(c)));
  if (!c.policy.enabled) {
    r->disabled = true;
    return nullptr;
  }
  if (shard == nullptr) return nullptr;
  Entry* e = nullptr;
  if (!hash.empty()) {
    auto it = shard->exact.find(hash);
    if (it != shard->exact.end()) {
      Entry* x = entries_.At(it->second).get();
      if (Served(*x, c, load, now)) {
        e = x;
        r->exact = r->hit = true;
        r->similarity = 1.0;
      }
    }
  }
  if (e == nullptr) {
    auto [nearest, sim] = Nearest(*shard, query, /*served_only=*/true, now, load);
    e = nearest;
    r->similarity = sim;
  }
  if (e != nullptr) {
    const float t = ThresholdOf(*e, c, load);
    if (!r->exact) r->threshold = t;
    r->hit = r->exact || static_cast<float>(r->similarity) >= t;
    r->entry_id = e->id;
    r->age_seconds = static_cast<double>(now - e->created_us) / 1e6;
  }
  return e;
}

absl::Status SemanticCache::ReadResponse(uint64_t id, std::string* response) const {
  thread_local std::string key, row;  // the thread's buffers: only *response allocates
  key.clear();
  AppendEntryKey(spec_.name, id, &key);
  SHOAL_ASSIGN_OR_RETURN(const bool found, store_->GetCacheRow(key, &row));
  if (!found) {
    return absl::DataLossError(
        absl::StrCat("cache '", spec_.name, "': entry ", id, " is in RAM but its row is missing"));
  }
  return DecodeEntryResponse(id, row, spec_.dimension, response);
}

absl::Status SemanticCache::RefreshTtl(uint64_t id) {
  absl::MutexLock lock(&mu_);
  if (dropped_) return absl::OkStatus();
  const std::unique_ptr<Entry>* found = entries_.Find(id);
  if (found == nullptr) return absl::OkStatus();  // removed since: nothing to refresh
  Entry* e = found->get();
  const CachePolicy& policy = e->shard->category->policy;
  if (!policy.refresh_ttl_on_hit || policy.ttl_seconds <= 0) return absl::OkStatus();
  Category* c = e->shard->category;
  const int64_t now = clock_->NowMicros();
  c->expiry.erase({e->meta.ttl_start_us, e->id});
  e->meta.ttl_start_us = now;
  c->expiry.insert({now, e->id});
  Writes writes;
  PutMeta(*e, &writes);
  return store_->WriteCacheRows(writes, /*sync=*/false);
}

absl::Status SemanticCache::LookupLocked(const CacheLookupRequest& request, const float* query,
                                         const std::string& hash, double load, Category* c,
                                         CacheLookupResult* r, AfterLookup* after) {
  Shard* shard = FindShard(request.partition, request.category);
  after->adopt = shard != nullptr && shard->index.rebuild_ready();
  const int64_t now = clock_->NowMicros();
  Entry* e = Decide(*c, shard, query, hash, load, now, r);
  if (r->hit) {
    SHOAL_RETURN_IF_ERROR(ReadResponse(e->id, &r->response));
    after->refresh = c->policy.refresh_ttl_on_hit && c->policy.ttl_seconds > 0;
    Touch(e, static_cast<float>(r->similarity));
  }
  for (AtomicCounters* k : {&c->counters, shard != nullptr ? &shard->counters : nullptr}) {
    if (k == nullptr) continue;
    k->lookups.fetch_add(1, std::memory_order_relaxed);
    (r->hit ? k->hits : k->misses).fetch_add(1, std::memory_order_relaxed);
    if (r->exact) k->exact_hits.fetch_add(1, std::memory_order_relaxed);
  }
  return absl::OkStatus();
}

absl::StatusOr<CacheLookupResult> SemanticCache::Lookup(const CacheLookupRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  SHOAL_RETURN_IF_ERROR(ValidateRequest(request, ""));
  thread_local std::vector<float> query;  // the thread's buffer: no allocation
  Prepare(request.embedding, &query);
  const std::string hash = PromptHashOf(request);
  const double load = loads_->Get(request.partition.model);
  CacheLookupResult r;
  bool done = false;
  AfterLookup after;
  {
    absl::ReaderMutexLock lock(&mu_);
    SHOAL_RETURN_IF_ERROR(CheckLive());
    if (Category* c = FindCategory(request.category); c != nullptr) {
      SHOAL_RETURN_IF_ERROR(LookupLocked(request, query.data(), hash, load, c, &r, &after));
      done = true;
    }
  }
  if (!done) {
    absl::MutexLock lock(&mu_);  // the category's first lookup creates it
    SHOAL_RETURN_IF_ERROR(CheckLive());
    SHOAL_RETURN_IF_ERROR(
        LookupLocked(request, query.data(), hash, load, GetCategory(request.category), &r, &after));
  }
  if (after.adopt) AdoptIndexBuilds();
  if (after.refresh) {
    SHOAL_RETURN_IF_ERROR(RefreshTtl(r.entry_id));
  }
  latency_.Record(
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  return r;
}

std::vector<std::pair<uint64_t, SemanticCache::Removal>> SemanticCache::Victims(Category& c,
                                                                                uint64_t bytes,
                                                                                uint64_t keep) {
  std::vector<std::pair<uint64_t, Removal>> out;
  const CachePolicy& p = c.policy;
  uint64_t entries = c.counters.entries + 1;
  uint64_t total = c.counters.bytes + bytes;
  if (keep != 0) {
    --entries;
    total -= entries_.At(keep)->bytes;
  }
  for (auto it = c.order.begin(); it != c.order.end();) {
    const bool over_entries = p.max_entries != 0 && entries > p.max_entries;
    const bool over_bytes = p.max_bytes != 0 && total > p.max_bytes;
    if (!over_entries && !over_bytes) break;
    Entry* e = entries_.At(it->second).get();
    if (const auto fresh = OrderKey(*e, p.eviction); fresh != *it) {
      // Hit since it was ordered: its key only grew, past everything already visited; look at
      // it again where it lands (next, if it lands before the following entry).
      const auto next = c.order.erase(it);
      const auto moved = c.order.insert(fresh).first;
      e->order_key = fresh;
      it = next == c.order.end() || fresh < *next ? moved : next;
      continue;
    }
    if (it->second != keep) {
      out.emplace_back(it->second,
                       over_entries ? Removal::kEvictedByEntries : Removal::kEvictedByBytes);
      --entries;
      total -= e->bytes;
    }
    ++it;
  }
  return out;
}

absl::StatusOr<uint64_t> SemanticCache::Store(const CacheStoreRequest& request, bool sync) {
  const CacheLookupRequest& q = request.lookup;
  SHOAL_RETURN_IF_ERROR(ValidateRequest(q, "lookup."));
  if (request.response.size() > kMaxResponseBytes) {
    return absl::InvalidArgumentError("response: over 16 MiB");
  }
  std::vector<float> vector;
  Prepare(q.embedding, &vector);
  const std::string hash = PromptHashOf(q);
  const uint64_t response_hash = Fnv1a64(request.response);
  absl::MutexLock lock(&mu_);
  SHOAL_RETURN_IF_ERROR(CheckLive());
  const int64_t now = clock_->NowMicros();
  Writes writes;
  SweepLocked(now, &writes);
  Category* c = GetCategory(q.category);
  const CachePolicy& p = c->policy;
  if (!p.enabled) {
    SHOAL_RETURN_IF_ERROR(store_->WriteCacheRows(writes, /*sync=*/false));
    return uint64_t{0};
  }
  const uint64_t bytes = EntryBytes(spec_.dimension, request.response.size(), hash.size());
  if (p.max_bytes != 0 && bytes > p.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("response: an entry of ", bytes,
                                                     " bytes exceeds quota max_bytes (",
                                                     p.max_bytes, ") of category '", c->name, "'"));
  }
  Shard* shard = GetShard(q.partition, c);
  shard->index.AdoptRebuild();  // a finished build first, so that its model is saved here
  SaveIndexModel(shard, &writes);
  uint64_t replaced = 0;
  if (!hash.empty()) {
    auto it = shard->exact.find(hash);
    if (it != shard->exact.end()) replaced = it->second;
  }
  auto entry = std::make_unique<Entry>();
  entry->id = next_id_;
  entry->shard = shard;
  entry->prompt_hash = hash;
  entry->response_hash = response_hash;
  entry->created_us = entry->meta.ttl_start_us = now;
  entry->bytes = bytes;
  const Observation seen = Observe(*shard, vector.data(), replaced, entry.get());
  const auto victims = Victims(*c, bytes, replaced);
  StoredEntry row{.id = entry->id,
                  .partition = q.partition,
                  .category = c->name,
                  .prompt_hash = hash,
                  .created_us = now,
                  .vector = vector,
                  .response = request.response};
  writes.push_back({.key = EntryKey(spec_.name, entry->id), .value = EncodeEntry(row)});
  PutMeta(*entry, &writes);
  writes.push_back({.key = NextIdKey(spec_.name), .value = EncodeU64(entry->id + 1)});
  if (replaced != 0) AddDeletes(replaced, &writes);
  for (const auto& [id, why] : victims) AddDeletes(id, &writes);
  if (seen.neighbour != nullptr) {
    writes.push_back(
        {.key = MetaKey(spec_.name, seen.neighbour->id), .value = EncodeMeta(seen.neighbour_meta)});
  }
  SHOAL_RETURN_IF_ERROR(store_->WriteCacheRows(writes, sync));
  // Committed: now visible.
  ++next_id_;
  Learn(seen, c);
  if (replaced != 0) Remove(replaced, Removal::kReplaced);
  for (const auto& [id, why] : victims) Remove(id, why);
  const uint64_t id = entry->id;
  Insert(std::move(entry), vector.data());
  Bump(shard, &AtomicCounters::stores);
  return id;
}

SemanticCache::Observation SemanticCache::Observe(const Shard& shard, const float* vector,
                                                  uint64_t replaced, Entry* entry) {
  Observation seen;
  const Category& c = *shard.category;
  const CachePolicy& p = c.policy;
  if (replaced != 0) {
    // The same prompt answered differently: the category's answers change (no TTL band).
    seen.answer_changed = entries_.At(replaced)->response_hash != entry->response_hash;
  }
  // An observed neighbour: the nearest other entry within reach of the loosest threshold the
  // policy allows.
  if (p.target_false_hit_rate <= 0 || shard.index.size() == 0) return seen;
  auto [n, sim] = Nearest(shard, vector, /*served_only=*/false, entry->created_us, 0);
  if (n == nullptr || n->id == replaced || sim < static_cast<float>(p.min_threshold)) return seen;
  seen.neighbour = n;
  seen.neighbour_meta = n->meta;
  const bool same = n->response_hash == entry->response_hash;
  if (InsideBand(p, c.learning.offset, n->meta.wrong_floor, sim)) {
    seen.band = same ? &CategoryLearning::band_correct : &CategoryLearning::band_wrong;
  }
  if (same) {
    ++seen.neighbour_meta.correct;
  } else {
    ++seen.neighbour_meta.wrong;
    seen.neighbour_meta.wrong_floor = std::max(seen.neighbour_meta.wrong_floor, sim);
    entry->meta.wrong_floor = sim;
  }
  return seen;
}

void SemanticCache::Learn(const Observation& seen, Category* c) {
  if (seen.neighbour != nullptr) seen.neighbour->meta = seen.neighbour_meta;
  if (seen.band != nullptr) ++(c->learning.*seen.band);
  c->learning.answer_changes += seen.answer_changed;
}

absl::Status SemanticCache::Feedback(const CacheFeedbackReport& report) {
  absl::MutexLock lock(&mu_);
  SHOAL_RETURN_IF_ERROR(CheckLive());
  const std::unique_ptr<Entry>* found = entries_.Find(report.entry_id);
  if (found == nullptr) {
    return absl::NotFoundError(absl::StrCat("feedback.entry_id: no entry ", report.entry_id,
                                            " in cache '", spec_.name, "'"));
  }
  Entry* e = found->get();
  float sim = static_cast<float>(report.similarity);
  if (std::isnan(sim)) sim = e->last_similarity.load(std::memory_order_relaxed);
  const bool wrong = report.verdict == CacheVerdict::kWrong;
  if (wrong && std::isnan(sim)) {
    return absl::FailedPreconditionError(
        "feedback.similarity: required (the entry has served no hit since the cache opened)");
  }
  if (!std::isnan(sim) && (sim < -1.5f || sim > 1.5f)) {
    return absl::InvalidArgumentError("feedback.similarity: not a similarity of a hit");
  }
  Category* c = e->shard->category;
  const uint64_t lookups = c->counters.lookups.load(std::memory_order_relaxed);
  const double hit_rate =
      lookups == 0 ? 1.0
                   : static_cast<double>(c->counters.hits.load(std::memory_order_relaxed)) /
                         static_cast<double>(lookups);
  const double age_s = static_cast<double>(clock_->NowMicros() - e->created_us) / 1e6;
  LearnFromReport(c->policy, wrong, sim, hit_rate, &c->learning, age_s);
  Bump(e->shard, wrong ? &AtomicCounters::false_hit_reports : &AtomicCounters::correct_reports);
  Writes writes;
  // The learned state, at each wrong report (its evidence changed) and every kLearningSaveEvery
  // reports (decay): a reopen forgets at most that many right reports, which only errs strict.
  if (wrong || c->learning.reports % kLearningSaveEvery == 0) {
    writes.push_back(
        {.key = LearningKey(spec_.name, c->name), .value = EncodeLearning(c->learning)});
  }
  if (!wrong) {
    ++e->meta.correct;
  } else if (sim >= 1.0f) {
    // Wrong at similarity 1 (an exact hit): the answer itself is stale, and so is the same
    // answer stored under the question's other phrasings near it.
    const std::vector<uint64_t> stale = StaleSiblings(*e);
    for (uint64_t id : stale) AddDeletes(id, &writes);
    SHOAL_RETURN_IF_ERROR(store_->WriteCacheRows(writes, /*sync=*/true));
    for (uint64_t id : stale) Remove(id, Removal::kInvalidated);
    return absl::OkStatus();
  } else {
    ++e->meta.wrong;
    e->meta.wrong_floor = std::max(e->meta.wrong_floor, sim);
  }
  PutMeta(*e, &writes);
  return store_->WriteCacheRows(writes, /*sync=*/false);
}

}  // namespace shoal::cache

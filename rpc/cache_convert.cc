#include "rpc/cache_convert.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "rpc/convert.h"

namespace shoal::rpc {
namespace {

void CountersToProto(const CacheCounters& c, v1::CacheCounters* p) {
  p->set_lookups(c.lookups);
  p->set_hits(c.hits);
  p->set_exact_hits(c.exact_hits);
  p->set_misses(c.misses);
  p->set_stores(c.stores);
  p->set_false_hit_reports(c.false_hit_reports);
  p->set_correct_reports(c.correct_reports);
  p->set_evicted_by_entries(c.evicted_by_entries);
  p->set_evicted_by_bytes(c.evicted_by_bytes);
  p->set_invalidated(c.invalidated);
  p->set_expirations(c.expirations);
  p->set_entries(c.entries);
  p->set_bytes(c.bytes);
}

CacheCounters CountersFromProto(const v1::CacheCounters& p) {
  return {.lookups = p.lookups(),
          .hits = p.hits(),
          .exact_hits = p.exact_hits(),
          .misses = p.misses(),
          .stores = p.stores(),
          .false_hit_reports = p.false_hit_reports(),
          .correct_reports = p.correct_reports(),
          .evicted_by_entries = p.evicted_by_entries(),
          .evicted_by_bytes = p.evicted_by_bytes(),
          .invalidated = p.invalidated(),
          .expirations = p.expirations(),
          .entries = p.entries(),
          .bytes = p.bytes()};
}

}  // namespace

absl::StatusOr<CacheSpec> CacheSpecFromProto(const v1::CacheSpec& proto, absl::string_view field) {
  CacheSpec spec{.name = proto.name(), .dimension = proto.dimension()};
  if (proto.metric() != v1::METRIC_UNSPECIFIED) {
    absl::StatusOr<Metric> m = MetricFromProto(proto.metric(), absl::StrCat(field, ".metric"));
    if (!m.ok()) return m.status();
    spec.metric = *m;
  }
  return spec;
}

void CacheSpecToProto(const CacheSpec& spec, v1::CacheSpec* proto) {
  proto->set_name(spec.name);
  proto->set_dimension(spec.dimension);
  proto->set_metric(MetricToProto(spec.metric));
}

void CacheInfoToProto(const CacheInfo& info, v1::CacheInfo* proto) {
  CacheSpecToProto(info.spec, proto->mutable_spec());
  proto->set_entries(info.entries);
  proto->set_bytes(info.bytes);
  for (const std::string& c : info.categories) proto->add_categories(c);
  proto->set_quarantine(info.quarantine);
  proto->set_index_builds(info.index_builds);
  proto->set_index_build_failures(info.index_build_failures);
  proto->set_index_build_error(info.index_build_error);
}

CacheInfo CacheInfoFromProto(const v1::CacheInfo& proto) {
  CacheInfo info;
  info.spec = CacheSpecFromProto(proto.spec(), "spec").value_or(CacheSpec{});
  info.entries = proto.entries();
  info.bytes = proto.bytes();
  info.categories.assign(proto.categories().begin(), proto.categories().end());
  info.quarantine = proto.quarantine();
  info.index_builds = proto.index_builds();
  info.index_build_failures = proto.index_build_failures();
  info.index_build_error = proto.index_build_error();
  return info;
}

absl::StatusOr<CachePolicy> CachePolicyFromProto(const v1::CachePolicy& p,
                                                 absl::string_view field) {
  CachePolicy out;
  if (p.has_enabled()) out.enabled = p.enabled();
  if (p.has_threshold()) out.threshold = p.threshold();
  out.ttl_seconds = p.ttl_seconds();
  out.refresh_ttl_on_hit = p.refresh_ttl_on_hit();
  out.max_entries = p.max_entries();
  out.max_bytes = p.max_bytes();
  if (!v1::CacheEviction_IsValid(p.eviction())) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".eviction: unknown value"));
  }
  out.eviction = static_cast<CacheEviction>(p.eviction());
  if (p.has_min_threshold()) out.min_threshold = p.min_threshold();
  if (p.has_max_ttl_seconds()) out.max_ttl_seconds = p.max_ttl_seconds();
  if (p.has_load_high()) out.load_high = p.load_high();
  if (p.has_target_false_hit_rate()) out.target_false_hit_rate = p.target_false_hit_rate();
  if (p.has_max_threshold()) out.max_threshold = p.max_threshold();
  return out;
}

void CachePolicyToProto(const CachePolicy& p, v1::CachePolicy* proto) {
  proto->set_enabled(p.enabled);
  proto->set_threshold(p.threshold);
  proto->set_ttl_seconds(p.ttl_seconds);
  proto->set_refresh_ttl_on_hit(p.refresh_ttl_on_hit);
  proto->set_max_entries(p.max_entries);
  proto->set_max_bytes(p.max_bytes);
  proto->set_eviction(static_cast<v1::CacheEviction>(p.eviction));
  if (!std::isnan(p.min_threshold)) proto->set_min_threshold(p.min_threshold);
  if (p.max_ttl_seconds >= 0) proto->set_max_ttl_seconds(p.max_ttl_seconds);
  proto->set_load_high(p.load_high);
  proto->set_target_false_hit_rate(p.target_false_hit_rate);
  if (!std::isnan(p.max_threshold)) proto->set_max_threshold(p.max_threshold);
}

CachePartition CachePartitionFromProto(const v1::CachePartition& p) {
  return {.tenant = p.tenant(),
          .model = p.model(),
          .params_fingerprint = p.params_fingerprint(),
          .context_hash = p.context_hash()};
}

void CachePartitionToProto(const CachePartition& partition, v1::CachePartition* p) {
  p->set_tenant(partition.tenant);
  p->set_model(partition.model);
  p->set_params_fingerprint(partition.params_fingerprint);
  p->set_context_hash(partition.context_hash);
}

CacheLookupRequest CacheLookupFromProto(const v1::CacheLookupRequest& p) {
  return {.partition = CachePartitionFromProto(p.partition()),
          .category = p.category(),
          .embedding = std::vector<float>(p.embedding().begin(), p.embedding().end()),
          .prompt = p.prompt(),
          .prompt_hash = p.prompt_hash()};
}

void CacheLookupToProto(const CacheLookupRequest& r, v1::CacheLookupRequest* p) {
  CachePartitionToProto(r.partition, p->mutable_partition());
  p->set_category(r.category);
  p->mutable_embedding()->Assign(r.embedding.begin(), r.embedding.end());
  p->set_prompt(r.prompt);
  p->set_prompt_hash(r.prompt_hash);
}

void CacheLookupResultToProto(const CacheLookupResult& r, v1::CacheLookupResponse* p) {
  p->set_hit(r.hit);
  p->set_exact(r.exact);
  p->set_entry_id(r.entry_id);
  p->set_response(r.response);
  p->set_similarity(r.similarity);
  p->set_threshold(r.threshold);
  p->set_age_seconds(r.age_seconds);
  p->set_disabled(r.disabled);
}

CacheLookupResult CacheLookupResultFromProto(const v1::CacheLookupResponse& p) {
  return {.hit = p.hit(),
          .exact = p.exact(),
          .entry_id = p.entry_id(),
          .response = p.response(),
          .similarity = p.similarity(),
          .threshold = p.threshold(),
          .age_seconds = p.age_seconds(),
          .disabled = p.disabled()};
}

CacheInvalidation CacheInvalidationFromProto(const v1::CacheInvalidateRequest& p) {
  return {.category = p.category(),
          .match_partition = p.match_partition(),
          .partition = CachePartitionFromProto(p.partition()),
          .tenant = p.tenant(),
          .older_than_seconds = p.older_than_seconds(),
          .dry_run = p.has_dry_run() ? p.dry_run() : true};
}

void CacheInvalidationToProto(const CacheInvalidation& w, v1::CacheInvalidateRequest* p) {
  p->set_category(w.category);
  p->set_match_partition(w.match_partition);
  CachePartitionToProto(w.partition, p->mutable_partition());
  p->set_tenant(w.tenant);
  p->set_older_than_seconds(w.older_than_seconds);
  p->set_dry_run(w.dry_run);
}

void CacheStatsToProto(const CacheStats& s, v1::GetCacheStatsResponse* p) {
  p->set_cache(s.name);
  CountersToProto(s.total, p->mutable_total());
  for (const CacheCategoryStats& c : s.categories) {
    v1::CacheCategoryStats* out = p->add_categories();
    out->set_category(c.category);
    CountersToProto(c.counters, out->mutable_counters());
    out->set_threshold_offset(c.threshold_offset);
    out->set_band_share(c.band_share);
    out->set_learned_ttl_seconds(c.learned_ttl_seconds);
  }
  for (const CachePartitionStats& ps : s.partitions) {
    v1::CachePartitionStats* out = p->add_partitions();
    CachePartitionToProto(ps.partition, out->mutable_partition());
    CountersToProto(ps.counters, out->mutable_counters());
  }
  p->mutable_latency_bounds_us()->Assign(s.latency_bounds_us.begin(), s.latency_bounds_us.end());
  p->mutable_latency_counts()->Assign(s.latency_counts.begin(), s.latency_counts.end());
  p->set_lookup_p50_us(s.lookup_p50_us);
  p->set_lookup_p99_us(s.lookup_p99_us);
  p->set_latency_sum_us(s.latency_sum_us);
}

CacheStats CacheStatsFromProto(const v1::GetCacheStatsResponse& p) {
  CacheStats s;
  s.name = p.cache();
  s.total = CountersFromProto(p.total());
  for (const auto& c : p.categories()) {
    s.categories.push_back({.category = c.category(),
                            .counters = CountersFromProto(c.counters()),
                            .threshold_offset = c.threshold_offset(),
                            .band_share = c.band_share(),
                            .learned_ttl_seconds = c.learned_ttl_seconds()});
  }
  for (const auto& ps : p.partitions()) {
    s.partitions.push_back({.partition = CachePartitionFromProto(ps.partition()),
                            .counters = CountersFromProto(ps.counters())});
  }
  s.latency_bounds_us.assign(p.latency_bounds_us().begin(), p.latency_bounds_us().end());
  s.latency_counts.assign(p.latency_counts().begin(), p.latency_counts().end());
  s.lookup_p50_us = p.lookup_p50_us();
  s.lookup_p99_us = p.lookup_p99_us();
  s.latency_sum_us = p.latency_sum_us();
  return s;
}

}  // namespace shoal::rpc

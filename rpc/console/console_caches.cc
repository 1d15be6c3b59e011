// The console's semantic-cache views (DESIGN.md §6): caches with their size, per-partition and
// per-category stats, the category policies, and editing a policy (admin keys).
//
// A tenant-bound key sees the caches' names and shapes and the policies (configuration, not a
// tenant's data), but of the counters only those of its own tenant's partitions: its entries,
// bytes, hits and misses. The per-category counters and the lookup latency mix every tenant's
// lookups, so it gets neither.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rpc/console/console_api.h"
#include "rpc/console/console_call.h"

namespace shoal::rpc::console {
namespace {

// Partitions are per (tenant, model, params, context): a chat service may have thousands. The
// page shows the busiest.
constexpr size_t kMaxPartitionsShown = 200;

void Add(CacheCounters* into, const CacheCounters& c) {
  into->lookups += c.lookups;
  into->hits += c.hits;
  into->exact_hits += c.exact_hits;
  into->misses += c.misses;
  into->stores += c.stores;
  into->false_hit_reports += c.false_hit_reports;
  into->correct_reports += c.correct_reports;
  into->evicted_by_entries += c.evicted_by_entries;
  into->evicted_by_bytes += c.evicted_by_bytes;
  into->invalidated += c.invalidated;
  into->expirations += c.expirations;
  into->entries += c.entries;
  into->bytes += c.bytes;
}

Json CountersToJson(const CacheCounters& c) {
  return {{"lookups", c.lookups},
          {"hits", c.hits},
          {"exact_hits", c.exact_hits},
          {"misses", c.misses},
          {"hit_rate", c.lookups > 0 ? Json(double(c.hits) / double(c.lookups)) : Json(nullptr)},
          {"stores", c.stores},
          {"false_hit_reports", c.false_hit_reports},
          {"correct_reports", c.correct_reports},
          {"evicted_by_entries", c.evicted_by_entries},
          {"evicted_by_bytes", c.evicted_by_bytes},
          {"invalidated", c.invalidated},
          {"expirations", c.expirations},
          {"entries", c.entries},
          {"bytes", c.bytes}};
}

// NaN ("same as threshold", "1") is null in JSON.
Json Number(double value) { return std::isnan(value) ? Json(nullptr) : Json(value); }

Json PolicyToJson(const std::string& category, const CachePolicy& p) {
  return {{"category", category},
          {"enabled", p.enabled},
          {"threshold", p.threshold},
          {"ttl_seconds", p.ttl_seconds},
          {"refresh_ttl_on_hit", p.refresh_ttl_on_hit},
          {"max_entries", p.max_entries},
          {"max_bytes", p.max_bytes},
          {"eviction", CacheEvictionName(p.eviction)},
          {"min_threshold", Number(p.min_threshold)},
          {"max_ttl_seconds", p.max_ttl_seconds},
          {"load_high", p.load_high},
          {"target_false_hit_rate", p.target_false_hit_rate},
          {"max_threshold", Number(p.max_threshold)}};
}

absl::Status Bad(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("policy.", field, ": ", what));
}

// One member of a policy edit into *out. Ranges are the DB's to check ("policy.threshold").
absl::Status MergePolicyField(const std::string& name, const Json& value, CachePolicy* out) {
  auto number = [&](double* field, bool nullable) -> absl::Status {
    if (nullable && value.is_null()) {
      *field = std::numeric_limits<double>::quiet_NaN();
    } else if (!value.is_number()) {
      return Bad(name, nullable ? "want a number or null" : "want a number");
    } else {
      *field = value.get<double>();
    }
    return absl::OkStatus();
  };
  auto integer = [&](auto* field) -> absl::Status {
    using T = std::remove_pointer_t<decltype(field)>;
    if (!value.is_number_integer()) return Bad(name, "want an integer");
    if (std::is_unsigned_v<T> && !value.is_number_unsigned()) return Bad(name, "want >= 0");
    *field = value.get<T>();
    return absl::OkStatus();
  };
  auto boolean = [&](bool* field) -> absl::Status {
    if (!value.is_boolean()) return Bad(name, "want true or false");
    *field = value.get<bool>();
    return absl::OkStatus();
  };
  if (name == "enabled") return boolean(&out->enabled);
  if (name == "refresh_ttl_on_hit") return boolean(&out->refresh_ttl_on_hit);
  if (name == "threshold") return number(&out->threshold, false);
  if (name == "min_threshold") return number(&out->min_threshold, true);
  if (name == "max_threshold") return number(&out->max_threshold, true);
  if (name == "load_high") return number(&out->load_high, false);
  if (name == "target_false_hit_rate") return number(&out->target_false_hit_rate, false);
  if (name == "ttl_seconds") return integer(&out->ttl_seconds);
  if (name == "max_ttl_seconds") return integer(&out->max_ttl_seconds);
  if (name == "max_entries") return integer(&out->max_entries);
  if (name == "max_bytes") return integer(&out->max_bytes);
  if (name == "eviction") {
    for (CacheEviction e : {CacheEviction::kLru, CacheEviction::kLfu, CacheEviction::kFifo}) {
      if (value.is_string() && value.get<std::string>() == CacheEvictionName(e)) {
        out->eviction = e;
        return absl::OkStatus();
      }
    }
    return Bad(name, "want \"lru\", \"lfu\" or \"fifo\"");
  }
  return Bad(name, "not a policy field");
}

// The info of `cache` from ListCaches (NOT_FOUND naming it).
absl::StatusOr<CacheInfo> FindCache(DB& db, const std::string& cache) {
  absl::StatusOr<std::vector<CacheInfo>> all = db.ListCaches();
  if (!all.ok()) return all.status();
  for (CacheInfo& info : *all) {
    if (info.spec.name == cache) return std::move(info);
  }
  return absl::NotFoundError(absl::StrCat("cache: no cache \"", cache, "\""));
}

// The partitions of `stats` that `tenant` may see ("" = all), the busiest first, and their sum.
std::vector<const CachePartitionStats*> VisiblePartitions(const CacheStats& stats,
                                                          const std::string& tenant,
                                                          CacheCounters* sum) {
  std::vector<const CachePartitionStats*> shown;
  for (const CachePartitionStats& p : stats.partitions) {
    if (!tenant.empty() && p.partition.tenant != tenant) continue;
    Add(sum, p.counters);
    shown.push_back(&p);
  }
  std::stable_sort(shown.begin(), shown.end(), [](const auto* a, const auto* b) {
    return a->counters.lookups + a->counters.entries > b->counters.lookups + b->counters.entries;
  });
  return shown;
}

Json CacheSummaryJson(const CacheInfo& info) {
  return {{"name", info.spec.name},
          {"dimension", info.spec.dimension},
          {"metric", MetricName(info.spec.metric)},
          {"entries", info.entries},
          {"bytes", info.bytes},
          {"categories", info.categories}};
}

}  // namespace

absl::StatusOr<Json> ConsoleApi::ListCaches(Call& call) {
  absl::StatusOr<std::vector<CacheInfo>> infos = call.db->ListCaches();
  if (!infos.ok()) return infos.status();
  const std::string& tenant = call.principal.tenant;
  Json list = Json::array();
  for (const CacheInfo& info : *infos) {
    Json json = CacheSummaryJson(info);
    if (!tenant.empty()) {
      // Its own partitions' size, not the whole cache's.
      absl::StatusOr<CacheStats> stats = call.db->GetCacheStats(info.spec.name);
      if (!stats.ok()) return stats.status();
      CacheCounters own;
      VisiblePartitions(*stats, tenant, &own);
      json["entries"] = own.entries;
      json["bytes"] = own.bytes;
    }
    list.push_back(std::move(json));
  }
  return Json{{"caches", std::move(list)}, {"tenant", tenant}};
}

absl::StatusOr<Json> ConsoleApi::DescribeCache(Call& call) {
  const std::string& cache = call.params[0];
  absl::StatusOr<CacheStats> stats = call.db->GetCacheStats(cache);
  if (!stats.ok()) return stats.status();
  absl::StatusOr<CacheInfo> info = FindCache(*call.db, cache);
  if (!info.ok()) return info.status();
  Json policies = Json::array();
  absl::StatusOr<CachePolicy> fallback = call.db->GetCachePolicy(cache, "");
  if (!fallback.ok()) return fallback.status();
  policies.push_back(PolicyToJson("", *fallback));
  for (const std::string& category : info->categories) {
    absl::StatusOr<CachePolicy> policy = call.db->GetCachePolicy(cache, category);
    if (!policy.ok()) return policy.status();
    policies.push_back(PolicyToJson(category, *policy));
  }
  const std::string& tenant = call.principal.tenant;
  CacheCounters visible;
  std::vector<const CachePartitionStats*> shown = VisiblePartitions(*stats, tenant, &visible);
  Json partitions = Json::array();
  for (size_t i = 0; i < shown.size() && i < kMaxPartitionsShown; ++i) {
    const CachePartition& p = shown[i]->partition;
    partitions.push_back({{"tenant", p.tenant},
                          {"model", p.model},
                          {"params_fingerprint", p.params_fingerprint},
                          {"context_hash", p.context_hash},
                          {"counters", CountersToJson(shown[i]->counters)}});
  }
  Json json = CacheSummaryJson(*info);
  json["tenant"] = tenant;
  json["policies"] = std::move(policies);
  json["partitions"] = std::move(partitions);
  json["partition_count"] = shown.size();
  if (!tenant.empty()) {
    json["total"] = CountersToJson(visible);
    json["entries"] = visible.entries;
    json["bytes"] = visible.bytes;
    json["categories_stats"] = Json::array();
    return json;
  }
  json["total"] = CountersToJson(stats->total);
  Json categories = Json::array();
  for (const CacheCategoryStats& c : stats->categories) {
    Json entry = CountersToJson(c.counters);
    entry["category"] = c.category;
    entry["threshold_offset"] = c.threshold_offset;
    entry["learned_ttl_seconds"] = c.learned_ttl_seconds;
    categories.push_back(std::move(entry));
  }
  json["categories_stats"] = std::move(categories);
  json["lookup_p50_us"] = stats->lookup_p50_us;
  json["lookup_p99_us"] = stats->lookup_p99_us;
  return json;
}

// Changes the members the body's "policy" names and keeps the rest of the category's current
// policy (its own, or the default one it used so far), so the page edits a few fields safely.
absl::StatusOr<Json> ConsoleApi::SetCachePolicy(Call& call) {
  const std::string& cache = call.params[0];
  absl::StatusOr<std::string> category = OptionalString(call.body, "category");
  if (!category.ok()) return category.status();
  auto edit = call.body.find("policy");
  if (edit == call.body.end() || !edit->is_object()) {
    return absl::InvalidArgumentError("policy: required, an object of the fields to change");
  }
  absl::StatusOr<CachePolicy> policy = call.db->GetCachePolicy(cache, *category);
  if (!policy.ok()) return policy.status();
  for (const auto& [name, value] : edit->items()) {
    if (absl::Status s = MergePolicyField(name, value, &*policy); !s.ok()) return s;
  }
  if (absl::Status s = call.db->SetCachePolicy(cache, *category, *policy); !s.ok()) return s;
  absl::StatusOr<CachePolicy> now = call.db->GetCachePolicy(cache, *category);
  if (!now.ok()) return now.status();
  return PolicyToJson(*category, *now);
}

}  // namespace shoal::rpc::console

// `shoal cache SUBCOMMAND ...`: the semantic caches (CacheService).
//   cache create NAME --dimension D [--metric cosine|ip|l2]
//   cache drop NAME            cache list            cache stats NAME
//   cache policy NAME [--category C] [--threshold T --ttl S ...]   (no policy flag: show it)
//   cache lookup NAME V1,V2,... [partition flags] [--prompt TEXT]
//   cache store NAME V1,V2,... RESPONSE [partition flags] [--prompt TEXT] [--sync]
//   cache invalidate NAME [--category C] [--tenant T] [--older-than S] [--apply]
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cli/commands_internal.h"
#include "shoal/v1/cache_service.grpc.pb.h"

namespace shoal::cli {

namespace v1 = ::shoal::v1;

namespace {

std::unique_ptr<v1::CacheService::Stub> Stub(const Connection& c) {
  return v1::CacheService::NewStub(c.channel());
}

Table One(const std::string& column, Cell value) {
  Table t{.columns = {column}, .single = true};
  t.rows.push_back({std::move(value)});
  return t;
}

absl::Status FillLookup(const Args& args, v1::CacheLookupRequest* r) {
  r->set_cache(args.positional[2]);
  SHOAL_RETURN_IF_ERROR(ParseFloats(args.positional[3], "embedding", r->mutable_embedding()));
  r->set_category(args.Get("category", ""));
  r->set_prompt(args.Get("prompt", ""));
  v1::CachePartition* p = r->mutable_partition();
  p->set_tenant(args.Get("tenant", ""));
  p->set_model(args.Get("model", ""));
  p->set_params_fingerprint(args.Get("params", ""));
  p->set_context_hash(args.Get("context", ""));
  return absl::OkStatus();
}

absl::StatusOr<v1::CacheEviction> ParseEviction(const std::string& text) {
  if (text == "lru") return v1::CACHE_EVICTION_LRU;
  if (text == "lfu") return v1::CACHE_EVICTION_LFU;
  if (text == "fifo") return v1::CACHE_EVICTION_FIFO;
  return UsageError(absl::StrCat("--eviction: \"", text, "\" is not lru, lfu or fifo"));
}

Table PolicyTable(const v1::CachePolicy& p) {
  Table t{.columns = {"enabled", "threshold", "min_threshold", "max_threshold", "ttl_seconds",
                      "max_ttl_seconds", "refresh_ttl_on_hit", "max_entries", "max_bytes",
                      "eviction", "load_high", "target_false_hit_rate"},
          .single = true};
  auto opt = [](bool has, double v) { return has ? Cell::Number(v) : Cell::Null(); };
  t.rows.push_back(
      {Cell::Bool(p.enabled()), Cell::Number(p.threshold()),
       opt(p.has_min_threshold(), p.min_threshold()), opt(p.has_max_threshold(), p.max_threshold()),
       Cell::Number(static_cast<int64_t>(p.ttl_seconds())),
       p.has_max_ttl_seconds() ? Cell::Number(static_cast<int64_t>(p.max_ttl_seconds()))
                               : Cell::Null(),
       Cell::Bool(p.refresh_ttl_on_hit()), Cell::Number(uint64_t{p.max_entries()}),
       Cell::Bytes(p.max_bytes()), Cell::Text(v1::CacheEviction_Name(p.eviction())),
       Cell::Number(p.load_high()), Cell::Number(p.target_false_hit_rate())});
  return t;
}

// Flags that change a policy; with none, `cache policy` shows the current one.
constexpr const char* kPolicyFlags[] = {"threshold",   "min-threshold", "max-threshold",
                                        "ttl",         "max-ttl",       "refresh-on-hit",
                                        "max-entries", "max-bytes",     "eviction",
                                        "disabled",    "load-high",     "target-false-hit-rate"};

absl::StatusOr<Table> Policy(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 3, 3));
  v1::GetCachePolicyRequest get;
  get.set_cache(args.positional[2]);
  get.set_category(args.Get("category", ""));
  v1::GetCachePolicyResponse current;
  SHOAL_RETURN_IF_ERROR(FromGrpc(Stub(c)->GetCachePolicy(c.Context().get(), get, &current)));
  bool change = false;
  for (const char* flag : kPolicyFlags) change = change || args.Has(flag);
  if (!change) return PolicyTable(current.policy());
  v1::SetCachePolicyRequest set;
  set.set_cache(get.cache());
  set.set_category(get.category());
  v1::CachePolicy* p = set.mutable_policy();
  *p = current.policy();
  if (args.Has("threshold")) {
    SHOAL_ASSIGN_OR_RETURN(auto v, args.GetDouble("threshold", 0));
    p->set_threshold(v);
  }
  if (args.Has("min-threshold")) {
    SHOAL_ASSIGN_OR_RETURN(double v, args.GetDouble("min-threshold", 0));
    p->set_min_threshold(v);
  }
  if (args.Has("max-threshold")) {
    SHOAL_ASSIGN_OR_RETURN(double v, args.GetDouble("max-threshold", 1));
    p->set_max_threshold(v);
  }
  if (args.Has("ttl")) {
    SHOAL_ASSIGN_OR_RETURN(uint64_t v, args.GetUint("ttl", 0));
    p->set_ttl_seconds(static_cast<int64_t>(v));
    if (!args.Has("max-ttl")) p->clear_max_ttl_seconds();
  }
  if (args.Has("max-ttl")) {
    SHOAL_ASSIGN_OR_RETURN(uint64_t v, args.GetUint("max-ttl", 0));
    p->set_max_ttl_seconds(static_cast<int64_t>(v));
  }
  if (args.Has("refresh-on-hit")) p->set_refresh_ttl_on_hit(true);
  if (args.Has("max-entries")) {
    SHOAL_ASSIGN_OR_RETURN(auto v, args.GetUint("max-entries", 0));
    p->set_max_entries(v);
  }
  if (args.Has("max-bytes")) {
    SHOAL_ASSIGN_OR_RETURN(auto v, args.GetUint("max-bytes", 0));
    p->set_max_bytes(v);
  }
  if (args.Has("eviction")) {
    SHOAL_ASSIGN_OR_RETURN(v1::CacheEviction e, ParseEviction(args.Get("eviction", "lru")));
    p->set_eviction(e);
  }
  p->set_enabled(!args.Has("disabled"));
  if (args.Has("load-high")) {
    SHOAL_ASSIGN_OR_RETURN(auto v, args.GetDouble("load-high", 0.8));
    p->set_load_high(v);
  }
  if (args.Has("target-false-hit-rate")) {
    SHOAL_ASSIGN_OR_RETURN(double v, args.GetDouble("target-false-hit-rate", 0.02));
    p->set_target_false_hit_rate(v);
  }
  v1::SetCachePolicyResponse done;
  SHOAL_RETURN_IF_ERROR(FromGrpc(Stub(c)->SetCachePolicy(c.Context().get(), set, &done)));
  return PolicyTable(*p);
}

absl::StatusOr<Table> CacheStatsTable(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 3, 3));
  v1::GetCacheStatsRequest request;
  request.set_cache(args.positional[2]);
  v1::GetCacheStatsResponse r;
  SHOAL_RETURN_IF_ERROR(FromGrpc(Stub(c)->GetCacheStats(c.Context().get(), request, &r)));
  Table t{.columns = {"category", "entries", "bytes", "lookups", "hits", "exact_hits", "misses",
                      "stores", "false_hits", "evicted", "expired", "threshold_offset",
                      "band_share", "learned_ttl_s"}};
  auto row = [&](const std::string& name, const v1::CacheCounters& k, double offset,
                 std::optional<double> share, std::optional<double> ttl) {
    t.rows.push_back({Cell::Text(name), Cell::Number(uint64_t{k.entries()}), Cell::Bytes(k.bytes()),
                      Cell::Number(uint64_t{k.lookups()}), Cell::Number(uint64_t{k.hits()}),
                      Cell::Number(uint64_t{k.exact_hits()}), Cell::Number(uint64_t{k.misses()}),
                      Cell::Number(uint64_t{k.stores()}),
                      Cell::Number(uint64_t{k.false_hit_reports()}),
                      Cell::Number(uint64_t{k.evicted_by_entries() + k.evicted_by_bytes()}),
                      Cell::Number(uint64_t{k.expirations()}), Cell::Number(offset),
                      share.has_value() ? Cell::Number(*share) : Cell::Text(""),
                      ttl.has_value() ? Cell::Number(*ttl) : Cell::Text("")});
  };
  for (const auto& cat : r.categories()) {
    row(cat.category().empty() ? "(default)" : cat.category(), cat.counters(),
        cat.threshold_offset(), cat.band_share(), cat.learned_ttl_seconds());
  }
  row("(total)", r.total(), 0, std::nullopt, std::nullopt);
  return t;
}

absl::StatusOr<Table> CacheList(const Connection& c) {
  v1::ListCachesResponse r;
  SHOAL_RETURN_IF_ERROR(FromGrpc(Stub(c)->ListCaches(c.Context().get(), {}, &r)));
  Table t{.columns = {"name", "dimension", "metric", "entries", "bytes", "categories",
                      "index_builds", "index_build_failures", "quarantine"}};
  for (const v1::CacheInfo& i : r.caches()) {
    std::vector<Cell> cats;
    for (const std::string& cat : i.categories()) cats.push_back(Cell::Text(cat));
    t.rows.push_back(
        {Cell::Text(i.spec().name()), Cell::Number(uint64_t{i.spec().dimension()}),
         Cell::Text(MetricText(i.spec().metric())), Cell::Number(uint64_t{i.entries()}),
         Cell::Bytes(i.bytes()), Cell::List(cats), Cell::Number(uint64_t{i.index_builds()}),
         Cell::Number(uint64_t{i.index_build_failures()}), Cell::Text(i.quarantine())});
  }
  return t;
}

absl::StatusOr<Table> CacheCreate(const Connection& c, const Args& args, const std::string& name) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 3, 3));
  SHOAL_ASSIGN_OR_RETURN(uint64_t dimension, args.GetUint("dimension", 0, UINT32_MAX));
  if (dimension == 0) return UsageError("--dimension: required");
  SHOAL_ASSIGN_OR_RETURN(v1::Metric metric, ParseMetric(args.Get("metric", "cosine")));
  v1::CreateCacheRequest request;
  request.mutable_spec()->set_name(name);
  request.mutable_spec()->set_dimension(static_cast<uint32_t>(dimension));
  request.mutable_spec()->set_metric(metric);
  v1::CreateCacheResponse r;
  SHOAL_RETURN_IF_ERROR(FromGrpc(Stub(c)->CreateCache(c.Context().get(), request, &r)));
  return One("created", Cell::Text(name));
}

absl::StatusOr<Table> CacheDrop(const Connection& c, const std::string& name) {
  v1::DropCacheRequest request;
  request.set_cache(name);
  v1::DropCacheResponse r;
  SHOAL_RETURN_IF_ERROR(FromGrpc(Stub(c)->DropCache(c.Context().get(), request, &r)));
  return One("dropped", Cell::Text(name));
}

absl::StatusOr<Table> CacheInvalidate(const Connection& c, const Args& args,
                                      const std::string& name) {
  v1::CacheInvalidateRequest request;
  request.set_cache(name);
  request.set_category(args.Get("category", ""));
  request.set_tenant(args.Get("tenant", ""));
  SHOAL_ASSIGN_OR_RETURN(double older, args.GetDouble("older-than", 0));
  request.set_older_than_seconds(older);
  request.set_dry_run(!args.Has("apply"));
  v1::CacheInvalidateResponse r;
  SHOAL_RETURN_IF_ERROR(FromGrpc(Stub(c)->Invalidate(c.Context().get(), request, &r)));
  return One(args.Has("apply") ? "removed" : "would_remove", Cell::Number(uint64_t{r.count()}));
}

absl::StatusOr<Table> CacheLookup(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 4, 4));
  v1::CacheLookupRequest request;
  SHOAL_RETURN_IF_ERROR(FillLookup(args, &request));
  v1::CacheLookupResponse r;
  SHOAL_RETURN_IF_ERROR(FromGrpc(Stub(c)->Lookup(c.Context().get(), request, &r)));
  Table t{.columns = {"hit", "exact", "entry", "similarity", "threshold", "age", "response"},
          .single = true};
  t.rows.push_back({Cell::Bool(r.hit()), Cell::Bool(r.exact()),
                    Cell::Number(uint64_t{r.entry_id()}), Cell::Number(r.similarity()),
                    Cell::Number(r.threshold()), Cell::Seconds(r.age_seconds()),
                    Cell::Text(r.response())});
  return t;
}

absl::StatusOr<Table> CacheStore(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 4, 4));
  if (!args.Has("response")) return UsageError("--response: required");
  v1::CacheStoreRequest request;
  SHOAL_RETURN_IF_ERROR(FillLookup(args, request.mutable_lookup()));
  request.set_response(args.Get("response", ""));
  request.set_sync(args.Has("sync"));
  v1::CacheStoreResponse r;
  SHOAL_RETURN_IF_ERROR(FromGrpc(Stub(c)->Store(c.Context().get(), request, &r)));
  return One("entry", Cell::Number(uint64_t{r.entry_id()}));
}

}  // namespace

absl::StatusOr<Table> Cache(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 2, 4));
  const std::string& sub = args.positional[1];
  if (sub == "list") return CacheList(c);
  if (args.positional.size() < 3) return UsageError(kUsageError);
  const std::string& name = args.positional[2];
  if (sub == "create") return CacheCreate(c, args, name);
  if (sub == "drop") return CacheDrop(c, name);
  if (sub == "policy") return Policy(c, args);
  if (sub == "stats") return CacheStatsTable(c, args);
  if (sub == "invalidate") return CacheInvalidate(c, args, name);
  if (sub == "lookup") return CacheLookup(c, args);
  if (sub == "store") return CacheStore(c, args);
  return UsageError(absl::StrCat("cache: unknown subcommand \"", sub,
                                 "\" (create, drop, list, policy, lookup, store, invalidate, "
                                 "stats)"));
}

}  // namespace shoal::cli

// The command table and the collection commands; record and search commands are in
// commands_records.cc.
#include "cli/commands.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cli/commands_internal.h"

namespace shoal::cli {
namespace {

namespace v1 = ::shoal::v1;

absl::StatusOr<Table> Health(const Connection& c, const Args& args) {
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(args.Get("service", ""));
  grpc::health::v1::HealthCheckResponse response;
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.health().Check(c.Context().get(), request, &response)));
  Table t{.columns = {"server", "status"}, .single = true};
  t.rows.push_back(
      {Cell::Text(c.server()),
       Cell::Text(grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status()))});
  return t;
}

absl::StatusOr<Table> List(const Connection& c, const Args&) {
  v1::ListCollectionsRequest request;
  v1::ListCollectionsResponse response;
  SHOAL_RETURN_IF_ERROR(
      FromGrpc(c.collections().ListCollections(c.Context().get(), request, &response)));
  Table t = CollectionTable();
  for (const v1::CollectionInfo& info : response.collections()) AddCollectionRow(info, &t);
  return t;
}

absl::StatusOr<Table> Describe(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 2, 2));
  v1::DescribeCollectionRequest request;
  request.set_name(args.positional[1]);
  v1::DescribeCollectionResponse response;
  SHOAL_RETURN_IF_ERROR(
      FromGrpc(c.collections().DescribeCollection(c.Context().get(), request, &response)));
  Table t = CollectionTable(/*detailed=*/true);
  t.single = true;
  AddCollectionRow(response.collection(), &t);
  return t;
}

absl::StatusOr<Table> Create(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 2, 2));
  absl::StatusOr<uint64_t> dimension = args.GetUint("dimension", 0, UINT32_MAX);
  if (!dimension.ok()) return dimension.status();
  if (*dimension == 0) return UsageError("--dimension: required");
  absl::StatusOr<v1::Metric> metric = ParseMetric(args.Get("metric", "l2"));
  if (!metric.ok()) return metric.status();
  v1::CreateCollectionRequest request;
  request.mutable_spec()->set_name(args.positional[1]);
  request.mutable_spec()->set_dimension(static_cast<uint32_t>(*dimension));
  request.mutable_spec()->set_metric(*metric);
  SHOAL_ASSIGN_OR_RETURN(uint64_t shards, args.GetUint("shards", 0, 1024));
  SHOAL_ASSIGN_OR_RETURN(uint64_t replication, args.GetUint("replication", 0, 7));
  request.mutable_spec()->set_shards(static_cast<uint32_t>(shards));
  request.mutable_spec()->set_replication(static_cast<uint32_t>(replication));
  v1::CreateCollectionResponse response;
  SHOAL_RETURN_IF_ERROR(
      FromGrpc(c.collections().CreateCollection(c.Context().get(), request, &response)));
  Table t = CollectionTable();
  t.single = true;
  AddCollectionRow(response.collection(), &t);
  return t;
}

absl::StatusOr<Table> Drop(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 2, 2));
  v1::DropCollectionRequest request;
  request.set_name(args.positional[1]);
  v1::DropCollectionResponse response;
  SHOAL_RETURN_IF_ERROR(
      FromGrpc(c.collections().DropCollection(c.Context().get(), request, &response)));
  Table t{.columns = {"dropped"}, .single = true};
  t.rows.push_back({Cell::Text(args.positional[1])});
  return t;
}

// The commands of collections: health, list, describe, create, drop, in the order help lists them.
std::vector<Command> CollectionCommands() {
  return {
      {"health",
       "",
       0,
       {{"service", "NAME", "a service's status instead of the server's"}},
       "server health (grpc.health.v1)",
       false,
       Health},
      {"list", "", 0, {}, "list collections", false, List},
      {"describe",
       "NAME",
       1,
       {},
       "one collection: dimension, metric, vectors, index",
       true,
       Describe},
      {"create",
       "NAME",
       1,
       {{"dimension", "D", "vector dimension (required)"},
        {"metric", "l2|ip|cosine", "distance (default l2)"},
        {"shards", "S", "cluster mode: spread the records over S shards"},
        {"replication", "R", "cluster mode: nodes keeping each shard"}},
       "create a collection",
       false,
       Create},
      {"drop", "NAME", 1, {}, "drop a collection and every record in it", true, Drop},
  };
}

// The commands of records: write, read, delete, count, scroll, search, in the order help lists
// them.
std::vector<Command> RecordCommands() {
  return {
      {"upsert",
       "NAME KEY V1,V2,...",
       3,
       {{"attrs", "N=V,...", "attributes (numbers, true/false or text)"},
        {"tags", "T,...", "tags"},
        {"sync", nullptr, "durable before the answer"},
        {"tenant", "T", "the tenant that owns it (default: the API key's own, if bound)"}},
       "insert or replace one record (KEY: a number, or any other text)",
       true,
       Upsert},
      {"get",
       "NAME KEY...",
       kAnyNumber,
       {{"tenant", "T", "only records T owns or was granted"}},
       "read records by key",
       true,
       Get},
      {"delete",
       "NAME KEY... | NAME --filter TERMS [--apply] | NAME --all [--apply]",
       kAnyNumber,
       {{"sync", nullptr, "durable before the answer"},
        {"tenant", "T", "only records T owns (by key: seen but not owned is refused)"},
        {"filter", "TERM,...", "delete the records that pass it (terms as in search)"},
        {"all", nullptr, "delete every record"},
        {"apply", nullptr, "with --filter/--all: really delete (default: count only)"}},
       "delete records by key, or by filter",
       true,
       Delete},
      {"count",
       "NAME",
       1,
       {{"filter", "TERM,...", "count only the records that pass it (terms as in search)"},
        {"tenant", "T", "only records T owns or was granted"}},
       "how many records (pass a filter)",
       true,
       Count},
      {"scroll",
       "NAME",
       1,
       {{"filter", "TERM,...", "only the records that pass it (terms as in search)"},
        {"limit", "N", "records per page, 1..10000 (default 100)"},
        {"page-token", "P", "the next_page_token of the previous page"},
        {"vectors", nullptr, "include the vectors"},
        {"tenant", "T", "only records T owns or was granted"}},
       "one page of records in key order, with the token of the next",
       true,
       Scroll},
      {"search",
       "NAME V1,V2,...[;V1,V2,...]",
       2,
       {{"k", "K", "neighbours per query (default 10)"},
        {"filter", "TERM,...",
         "all must hold: NAME=VALUE, NAME>=X, NAME<=X, tag:T; a leading ! negates one"},
        {"target-recall", "R",
         "scan what reached recall@10 R when the index was built (0..1; default: the "
         "index's, 0.95)"},
        {"max-postings", "N",
         "posting lists to scan per query (experts; overrides "
         "--target-recall)"},
        {"pruning-ratio", "R",
         "skip postings whose centroid is over (1 + R) times the closest one's distance "
         "(default: the index's)"},
        {"tenant", "T", "search only the records T owns or was granted"}},
       "k nearest neighbours of one or more queries (';' separates queries)",
       true,
       Search},
  };
}

// The commands of aliases, second names of collections, in the order help lists them.
std::vector<Command> AliasCommands() {
  return {
      {"aliases", "[COLLECTION]", 1, {}, "list aliases (of one collection)", true, Aliases},
      {"alias-create",
       "ALIAS COLLECTION",
       2,
       {},
       "make ALIAS a second name of COLLECTION",
       false,
       AliasCreate},
      {"alias-alter",
       "ALIAS COLLECTION",
       2,
       {},
       "point ALIAS at another collection",
       false,
       AliasAlter},
      {"alias-drop", "ALIAS", 1, {}, "remove an alias (the collection stays)", false, AliasDrop},
  };
}

// The commands of semantic caches, in the order help lists them.
std::vector<Command> CacheCommands() {
  return {
      {"cache",
       "create|drop|list|policy|lookup|store|invalidate|stats [NAME] [V1,V2,...]",
       3,
       {{"dimension", "D", "create: embedding dimension"},
        {"metric", "cosine|ip|l2", "create: similarity (default cosine)"},
        {"category", "C", "policy/lookup/store/invalidate: category (default: the default)"},
        {"tenant", "T", "lookup/store: partition tenant; invalidate: only this tenant"},
        {"model", "M", "lookup/store: partition model"},
        {"params", "P", "lookup/store: partition parameters fingerprint"},
        {"context", "H", "lookup/store: partition conversation-context hash"},
        {"prompt", "TEXT", "lookup/store: the prompt (exact-match shortcut)"},
        {"response", "TEXT", "store: the response (required)"},
        {"sync", nullptr, "store: fsync before acknowledging"},
        {"threshold", "T", "policy: minimum similarity in [0,1] for a hit (higher = stricter)"},
        {"min-threshold", "T", "policy: loosest threshold under model load"},
        {"max-threshold", "T", "policy: strictest learned threshold"},
        {"ttl", "S", "policy: seconds an entry is served (0 = forever)"},
        {"max-ttl", "S", "policy: longest TTL under model load"},
        {"refresh-on-hit", nullptr, "policy: a hit restarts the TTL"},
        {"max-entries", "N", "policy: category quota of entries (0 = none)"},
        {"max-bytes", "N", "policy: category quota of bytes (0 = none)"},
        {"eviction", "lru|lfu|fifo", "policy: eviction order"},
        {"disabled", nullptr, "policy: switch the category off (privacy)"},
        {"load-high", "L", "policy: model load where the band starts"},
        {"target-false-hit-rate", "D", "policy: learned thresholds keep false hits <= D"},
        {"older-than", "S", "invalidate: only entries at least S seconds old"},
        {"apply", nullptr, "invalidate: remove (default: count only)"}},
       "semantic caches: create, drop, list, policy (show or set), lookup, store, invalidate, "
       "stats",
       false,
       Cache},
  };
}

// The commands of administration: index builds, compaction, snapshots, statistics, cluster, in the
// order help lists them.
std::vector<Command> AdminCommands() {
  return {
      {"build-index",
       "COLLECTION SPEC",
       2,
       {{"progress-ms", "N", "progress interval (default 1000)"}},
       "build the index, e.g. spann:centroid_ratio=0.02,replicas=4 (or flat); shows progress",
       true,
       BuildIndex},
      {"compact",
       "[COLLECTION]",
       1,
       {},
       "compact storage (of one collection or all)",
       true,
       Compact},
      {"snapshot",
       "NAME",
       1,
       {},
       "snapshot the database into --snapshot-dir/NAME on the server",
       false,
       Snapshot},
      {"snapshots", "", 0, {}, "list snapshots", false, Snapshots},
      {"restore", "NAME", 1, {}, "replace the whole database with snapshot NAME", false, Restore},
      {"stats",
       "",
       0,
       {},
       "server statistics: uptime, totals over all collections, ingest",
       false,
       Stats},
      {"cluster",
       "status|nodes|shards [COLLECTION] | move COLLECTION SHARD FROM TO",
       5,
       {},
       "cluster mode: this node's view of the nodes, the coordinator and the shard maps; "
       "move a shard's replica between nodes",
       false,
       Cluster},
  };
}

// The commands of tenants of a collection, in the order help lists them.
std::vector<Command> TenantCommands() {
  return {
      {"tenant",
       "create|drop|list|describe|quota|state|grant|revoke|tenants-of|count COLLECTION ...",
       kAnyNumber,
       {{"max-vectors", "N", "create, quota: records the tenant may own (0 = unlimited)"},
        {"max-bytes", "N", "create, quota: bytes of the records it may own"},
        {"max-qps", "R", "create, quota: searches per second"},
        {"page-size", "N", "list: tenants per page (default 100)"},
        {"page-token", "T", "list: that page only"},
        {"owned", nullptr, "count: owned records only (default: every record it sees)"},
        {"sync", nullptr, "drop, grant, revoke: durable before the answer"}},
       "tenants of a collection: create/drop/quota TENANT, list, describe [TENANT], state "
       "TENANT active|inactive|offloaded, grant/revoke TENANT KEY..., tenants-of KEY, count "
       "[TENANT]",
       false,
       Tenant},
  };
}

}  // namespace

const std::vector<Command>& Commands() {
  static const std::vector<Command> kCommands = [] {
    std::vector<Command> all;
    for (auto group : {CollectionCommands, RecordCommands, AliasCommands, CacheCommands,
                       AdminCommands, TenantCommands}) {
      for (Command& command : group()) all.push_back(std::move(command));
    }
    return all;
  }();
  return kCommands;
}

std::string Usage(const Command& command) {
  std::string out = command.name;
  if (*command.arguments != '\0') absl::StrAppend(&out, " ", command.arguments);
  for (const Flag& flag : command.flags) {
    absl::StrAppend(&out, " [--", flag.name, flag.value ? absl::StrCat(" ", flag.value) : "", "]");
  }
  return out;
}

const Command* FindCommand(const std::string& name) {
  for (const Command& command : Commands()) {
    if (name == command.name) return &command;
  }
  return nullptr;
}

absl::StatusOr<Table> RunCommand(const Connection& connection, const Args& args) {
  if (args.positional.empty()) return UsageError("no command given");
  const Command* command = FindCommand(args.positional[0]);
  if (command == nullptr) {
    return UsageError(absl::StrCat("unknown command \"", args.positional[0], "\" (try `help`)"));
  }
  absl::StatusOr<Table> table = command->run(connection, args);
  if (absl::IsInvalidArgument(table.status()) && table.status().message() == kUsageError) {
    return UsageError(absl::StrCat("usage: ", Usage(*command)));
  }
  return table;
}

std::string HelpText() {
  std::string out;
  for (const Command& command : Commands()) {
    absl::StrAppend(&out, "  ", Usage(command), "\n      ", command.help, "\n");
  }
  absl::StrAppend(&out,
                  "  help [COMMAND]\n      this text, or one command's\n"
                  "  quit\n      leave the shell (also Ctrl-D)\n"
                  "Outside the shell also: shoal ingest FILE ..., shoal offline --data DIR "
                  "dump|verify|salvage-wal\n");
  return out;
}

std::vector<std::string> CollectionNames(const Connection& c) {
  v1::ListCollectionsRequest request;
  v1::ListCollectionsResponse response;
  std::vector<std::string> names;
  if (!c.collections().ListCollections(c.Context().get(), request, &response).ok()) return names;
  for (const auto& info : response.collections()) names.push_back(info.spec().name());
  return names;
}

}  // namespace shoal::cli

// The command table and the collection commands; record and search commands are in
// commands_records.cc.
#include "cli/commands.h"

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
  if (*dimension == 0) return absl::InvalidArgumentError("--dimension: required");
  absl::StatusOr<v1::Metric> metric = ParseMetric(args.Get("metric", "l2"));
  if (!metric.ok()) return metric.status();
  v1::CreateCollectionRequest request;
  request.mutable_spec()->set_name(args.positional[1]);
  request.mutable_spec()->set_dimension(static_cast<uint32_t>(*dimension));
  request.mutable_spec()->set_metric(*metric);
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

}  // namespace

const std::vector<Command>& Commands() {
  static const std::vector<Command> kCommands = {
      {"health", "[--service NAME]", "server health (grpc.health.v1)", false, Health},
      {"list", "", "list collections", false, List},
      {"describe", "NAME", "one collection: dimension, metric, vectors, index", true, Describe},
      {"create", "NAME --dimension D [--metric l2|ip|cosine]", "create a collection", false,
       Create},
      {"drop", "NAME", "drop a collection and every record in it", true, Drop},
      {"upsert", "NAME KEY V1,V2,... [--attrs N=V,...] [--tags T,...] [--sync]",
       "insert or replace one record (KEY: a number, or any other text)", true, Upsert},
      {"get", "NAME KEY...", "read records by key", true, Get},
      {"delete", "NAME KEY... [--sync]", "delete records by key", true, Delete},
      {"search",
       "NAME V1,V2,...[;V1,V2,...] [--k K] [--filter TERM,...] [--max-postings N] "
       "[--pruning-ratio R]",
       "k nearest neighbours of one or more queries (';' separates queries); filter terms "
       "(all must hold): NAME=VALUE, NAME>=X, NAME<=X, tag:T, ! negates",
       true, Search},
      {"aliases", "[COLLECTION]", "list aliases (of one collection)", true, Aliases},
      {"alias-create", "ALIAS COLLECTION", "make ALIAS a second name of COLLECTION", false,
       AliasCreate},
      {"alias-alter", "ALIAS COLLECTION", "point ALIAS at another collection", false, AliasAlter},
      {"alias-drop", "ALIAS", "remove an alias (the collection stays)", false, AliasDrop},
      {"build-index", "COLLECTION SPEC [--progress-ms N]",
       "build the index, e.g. spann:centroid_ratio=0.02,replicas=4 (or flat); shows progress", true,
       BuildIndex},
      {"compact", "[COLLECTION]", "compact storage (of one collection or all)", true, Compact},
      {"snapshot", "NAME", "snapshot the database into --snapshot-dir/NAME on the server", false,
       Snapshot},
      {"snapshots", "", "list snapshots", false, Snapshots},
      {"restore", "NAME", "replace the whole database with snapshot NAME", false, Restore},
      {"stats", "", "server and per-collection statistics", false, Stats},
  };
  return kCommands;
}

const Command* FindCommand(const std::string& name) {
  for (const Command& command : Commands()) {
    if (name == command.name) return &command;
  }
  return nullptr;
}

absl::StatusOr<Table> RunCommand(const Connection& connection, const Args& args) {
  if (args.positional.empty()) return absl::InvalidArgumentError("no command given");
  const Command* command = FindCommand(args.positional[0]);
  if (command == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown command \"", args.positional[0], "\" (try `help`)"));
  }
  absl::StatusOr<Table> table = command->run(connection, args);
  if (absl::IsInvalidArgument(table.status()) && table.status().message() == kUsageError) {
    return absl::InvalidArgumentError(absl::StrCat("usage: ", command->name, " ", command->usage));
  }
  return table;
}

std::string HelpText(const std::string& name) {
  std::string out;
  for (const Command& command : Commands()) {
    if (!name.empty() && name != command.name) continue;
    absl::StrAppend(&out, "  ", command.name, " ", command.usage, "\n      ", command.help, "\n");
  }
  if (!name.empty() && out.empty()) return absl::StrCat("unknown command \"", name, "\"\n");
  if (name.empty()) {
    absl::StrAppend(&out,
                    "  help [COMMAND]\n      this text\n"
                    "  quit\n      leave the shell (also Ctrl-D)\n"
                    "Outside the shell also: shoal ingest FILE ..., shoal offline --data DIR "
                    "dump|verify|salvage-wal\n");
  }
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

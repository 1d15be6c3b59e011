// Alias and admin commands (AdminService: index builds with progress, compaction, snapshots,
// statistics).
#include <unistd.h>

#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "cli/commands_internal.h"

namespace shoal::cli {

namespace v1 = ::shoal::v1;

namespace {

Table Done(const std::string& column, const std::string& value) {
  Table t{.columns = {column}, .single = true};
  t.rows.push_back({Cell::Text(value)});
  return t;
}

Table SnapshotTable(bool single) {
  return Table{.columns = {"name", "bytes", "files", "created_unix_seconds"}, .single = single};
}

void AddSnapshotRow(const v1::SnapshotInfo& s, Table* t) {
  t->rows.push_back({Cell::Text(s.name()), Cell::Bytes(static_cast<uint64_t>(s.bytes())),
                     Cell::Number(static_cast<uint64_t>(s.files())),
                     Cell::Number(static_cast<int64_t>(s.created_unix_seconds()))});
}

// PHASE_BUILDING -> "building", for the progress line.
std::string PhaseText(v1::BuildIndexProgress::Phase phase) {
  std::string name = v1::BuildIndexProgress::Phase_Name(phase);
  if (absl::StartsWith(name, "PHASE_")) name = name.substr(6);
  return absl::AsciiStrToLower(name);
}

}  // namespace

absl::StatusOr<Table> Aliases(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 1, 2));
  v1::ListAliasesRequest request;
  if (args.positional.size() == 2) request.set_collection(args.positional[1]);
  v1::ListAliasesResponse response;
  SHOAL_RETURN_IF_ERROR(
      FromGrpc(c.collections().ListAliases(c.Context().get(), request, &response)));
  Table t{.columns = {"alias", "collection"}};
  for (const v1::Alias& a : response.aliases()) {
    t.rows.push_back({Cell::Text(a.alias()), Cell::Text(a.collection())});
  }
  return t;
}

absl::StatusOr<Table> AliasCreate(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 3, 3));
  v1::CreateAliasRequest request;
  request.set_alias(args.positional[1]);
  request.set_collection(args.positional[2]);
  v1::CreateAliasResponse response;
  SHOAL_RETURN_IF_ERROR(
      FromGrpc(c.collections().CreateAlias(c.Context().get(), request, &response)));
  return Done("alias", args.positional[1]);
}

absl::StatusOr<Table> AliasAlter(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 3, 3));
  v1::AlterAliasRequest request;
  request.set_alias(args.positional[1]);
  request.set_collection(args.positional[2]);
  v1::AlterAliasResponse response;
  SHOAL_RETURN_IF_ERROR(
      FromGrpc(c.collections().AlterAlias(c.Context().get(), request, &response)));
  return Done("alias", args.positional[1]);
}

absl::StatusOr<Table> AliasDrop(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 2, 2));
  v1::DropAliasRequest request;
  request.set_alias(args.positional[1]);
  v1::DropAliasResponse response;
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.collections().DropAlias(c.Context().get(), request, &response)));
  return Done("dropped", args.positional[1]);
}

absl::StatusOr<Table> BuildIndex(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 3, 3));
  SHOAL_ASSIGN_OR_RETURN(uint64_t interval, args.GetUint("progress-ms", 1000, 3600000));
  v1::BuildIndexRequest request;
  request.set_collection(args.positional[1]);
  request.set_spec(args.positional[2]);
  request.set_progress_interval_ms(static_cast<uint32_t>(std::max<uint64_t>(interval, 10)));
  // A build may take long: no deadline beyond a day.
  auto context = c.Context(std::chrono::hours(24));
  auto stream = c.admin().BuildIndex(context.get(), request);
  const bool show = isatty(STDERR_FILENO);
  v1::BuildIndexProgress progress;
  v1::BuildIndexProgress last;
  uint64_t messages = 0;
  while (stream->Read(&progress)) {
    ++messages;
    if (show) {
      std::fprintf(
          stderr, "\rbuilding %s: %s %3.0f%% %.1fs\x1b[K", args.positional[1].c_str(),
          progress.step().empty() ? PhaseText(progress.phase()).c_str() : progress.step().c_str(),
          progress.fraction() * 100, progress.elapsed_seconds());
    }
    last = progress;
  }
  if (show && messages > 0) std::fputc('\n', stderr);
  SHOAL_RETURN_IF_ERROR(FromGrpc(stream->Finish()));
  if (!last.done()) return absl::UnavailableError("BuildIndex: the stream ended before done");
  Table t = CollectionTable(/*detailed=*/true);
  t.single = true;
  t.columns.insert(t.columns.end(), {"build_seconds", "progress_messages"});
  AddCollectionRow(last.collection(), &t);
  t.rows.back().push_back(Cell::Seconds(last.elapsed_seconds()));
  t.rows.back().push_back(Cell::Number(messages));
  return t;
}

absl::StatusOr<Table> Compact(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 1, 2));
  v1::CompactRequest request;
  if (args.positional.size() == 2) request.set_collection(args.positional[1]);
  v1::CompactResponse response;
  auto context = c.Context(std::chrono::hours(24));
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.admin().Compact(context.get(), request, &response)));
  Table t{.columns = {"compacted", "seconds"}, .single = true};
  t.rows.push_back({Cell::Text(request.collection().empty() ? "*" : request.collection()),
                    Cell::Seconds(response.seconds())});
  return t;
}

absl::StatusOr<Table> Snapshot(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 2, 2));
  v1::SnapshotRequest request;
  request.set_name(args.positional[1]);
  v1::SnapshotResponse response;
  auto context = c.Context(std::chrono::hours(1));
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.admin().Snapshot(context.get(), request, &response)));
  Table t = SnapshotTable(true);
  AddSnapshotRow(response.snapshot(), &t);
  return t;
}

absl::StatusOr<Table> Snapshots(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 1, 1));
  v1::ListSnapshotsRequest request;
  v1::ListSnapshotsResponse response;
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.admin().ListSnapshots(c.Context().get(), request, &response)));
  Table t = SnapshotTable(false);
  for (const v1::SnapshotInfo& s : response.snapshots()) AddSnapshotRow(s, &t);
  return t;
}

absl::StatusOr<Table> Restore(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 2, 2));
  v1::RestoreRequest request;
  request.set_name(args.positional[1]);
  v1::RestoreResponse response;
  auto context = c.Context(std::chrono::hours(1));
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.admin().Restore(context.get(), request, &response)));
  Table t = CollectionTable();
  for (const v1::CollectionInfo& info : response.collections()) AddCollectionRow(info, &t);
  return t;
}

absl::StatusOr<Table> Stats(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 1, 1));
  v1::GetStatsRequest request;
  v1::GetStatsResponse r;
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.admin().GetStats(c.Context().get(), request, &r)));
  Table t{
      .columns = {"version", "uptime_seconds", "collections", "total_vectors", "total_vector_bytes",
                  "builds_in_progress", "ingest_inflight_bytes", "ingest_inflight_budget_bytes"},
      .single = true};
  t.rows.push_back({Cell::Text(r.version()), Cell::Seconds(r.uptime_seconds()),
                    Cell::Number(static_cast<uint64_t>(r.collections_size())),
                    Cell::Number(static_cast<uint64_t>(r.total_vectors())),
                    Cell::Bytes(static_cast<uint64_t>(r.total_vector_bytes())),
                    Cell::Number(static_cast<uint64_t>(r.builds_in_progress())),
                    Cell::Bytes(static_cast<uint64_t>(r.ingest_inflight_bytes())),
                    Cell::Bytes(static_cast<uint64_t>(r.ingest_inflight_budget_bytes()))});
  return t;
}

}  // namespace shoal::cli

#include "cli/offline.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/connection.h"
#include "cli/output.h"
#include "shoal/db.h"
#include "shoal/verify.h"

namespace shoal::cli {
namespace {

// Read-only: dump and verify never write into the directory they inspect.
absl::StatusOr<Table> Dump(const std::string& dir) {
  absl::StatusOr<std::vector<CollectionInfo>> collections = DescribeDatabase(dir);
  if (!collections.ok()) return collections.status();
  Table t{.columns = {"name", "dimension", "metric", "vectors", "index"}};
  for (const CollectionInfo& info : *collections) {
    t.rows.push_back({Cell::Text(info.spec.name),
                      Cell::Number(static_cast<uint64_t>(info.spec.dimension)),
                      Cell::Text(MetricName(info.spec.metric)), Cell::Number(info.num_vectors),
                      Cell::Text(info.index)});
  }
  return t;
}

// The one offline command that writes: opens the database once keeping the writes before a
// damaged WAL record (the WAL is copied aside first) and closes it, so that shoald starts again.
absl::StatusOr<Table> SalvageWal(const std::string& dir) {
  Options options;
  options.create_if_missing = false;
  options.salvage_damaged_wal = true;
  absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(dir, options);
  if (!db.ok()) return db.status();
  absl::StatusOr<std::vector<CollectionInfo>> collections = (*db)->ListCollections();
  if (!collections.ok()) return collections.status();
  Table t{.columns = {"name", "vectors"}};
  for (const CollectionInfo& info : *collections) {
    t.rows.push_back({Cell::Text(info.spec.name), Cell::Number(info.num_vectors)});
  }
  return t;
}

absl::StatusOr<Table> Verify(const std::string& dir, bool* clean) {
  absl::StatusOr<VerifyReport> report = VerifyDatabase(dir);
  if (!report.ok()) return report.status();
  Table t{.columns = {"name", "records", "keys", "index", "postings_checked", "vectors_checked",
                      "index_bytes_checked"}};
  for (const VerifyReport::CollectionReport& c : report->collections) {
    t.rows.push_back({Cell::Text(c.spec.name), Cell::Number(c.records), Cell::Number(c.keys),
                      Cell::Text(c.index), Cell::Number(c.index_postings),
                      Cell::Number(c.index_vectors), Cell::Bytes(c.index_bytes)});
  }
  for (const std::string& note : report->notes) std::cerr << "note: " << note << "\n";
  for (const std::string& problem : report->problems) std::cerr << "problem: " << problem << "\n";
  if (report->problems_not_listed > 0) {
    std::cerr << "problem: ... and " << report->problems_not_listed << " more\n";
  }
  *clean = report->ok();
  return t;
}

}  // namespace

std::string OfflineUsage() {
  return "shoal offline --data DIR dump|verify|salvage-wal [--output table|json|csv]";
}

const std::vector<Flag>& OfflineFlags() {
  static const std::vector<Flag> kFlags = {
      {"data", "DIR", "the data directory (not open in a running shoald)"}};
  return kFlags;
}

int RunOffline(const Args& args) {
  const std::string dir = args.Get("data", "");
  if (args.positional.size() != 2 || dir.empty()) {
    std::cerr << "error: " << ErrorText(UsageError("usage: " + OfflineUsage())) << "\n";
    return 2;
  }
  absl::StatusOr<OutputFormat> format =
      ParseOutputFormat(args.Get("output", isatty(STDOUT_FILENO) ? "table" : "json"));
  if (!format.ok()) {
    std::cerr << "error: " << ErrorText(format.status()) << "\n";
    return 2;
  }
  if (!std::filesystem::is_directory(dir)) {
    std::cerr << "error: NOT_FOUND: --data: " << dir << " is not a directory\n";
    return 1;
  }
  bool clean = true;
  absl::StatusOr<Table> table;
  if (args.positional[1] == "dump") {
    table = Dump(dir);
  } else if (args.positional[1] == "verify") {
    table = Verify(dir, &clean);
  } else if (args.positional[1] == "salvage-wal") {
    table = SalvageWal(dir);
  } else {
    std::cerr << "error: " << ErrorText(UsageError("usage: " + OfflineUsage())) << "\n";
    return 2;
  }
  if (!table.ok()) {
    std::cerr << "error: " << ErrorText(table.status()) << "\n";
    return 1;
  }
  std::cout << Render(*table, *format);
  if (!clean) std::cerr << "error: DATA_LOSS: verify found problems in " << dir << "\n";
  return clean ? 0 : 1;
}

}  // namespace shoal::cli

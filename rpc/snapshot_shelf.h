// SnapshotShelf: a server's snapshots, kept by NAME in one directory (shoald's --snapshot-dir).
// Clients only ever say a name; every path is built here from the configured directory, and a
// restore reads only a complete snapshot that really lies inside it. Shared by the gRPC
// AdminService and the web console, so both follow the same rules.
//
//   SnapshotShelf shelf("/var/lib/shoal/snapshots");
//   SHOAL_ASSIGN_OR_RETURN(SnapshotInfo made, shelf.Create(db, "nightly"));
//   SHOAL_RETURN_IF_ERROR(shelf.Restore(host, "nightly"));   // holding no lease
//
// Errors: FAILED_PRECONDITION when no directory is configured; INVALID_ARGUMENT naming `name`
// for a name that is not plain; ALREADY_EXISTS / NOT_FOUND naming `name`; the DB's own errors.
// Thread safety: immutable; thread-safe (the DB serialises concurrent snapshots).
#ifndef SHOAL_RPC_SNAPSHOT_SHELF_H_
#define SHOAL_RPC_SNAPSHOT_SHELF_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rpc/db_host.h"
#include "shoal/db.h"

namespace shoal::rpc {

// INVALID_ARGUMENT unless `name` is a plain snapshot name: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
// without "..". Names are the only thing a client says about snapshot locations.
absl::Status ValidateSnapshotName(absl::string_view name, absl::string_view field);

class SnapshotShelf {
 public:
  // `dir` empty = snapshots are off.
  explicit SnapshotShelf(std::string dir) : dir_(std::move(dir)) {}

  bool enabled() const { return !dir_.empty(); }
  // dir/name after the checks (configured, plain name).
  absl::StatusOr<std::string> Path(absl::string_view name) const;
  // Snapshots `db` as `name` ("" = "snapshot-YYYYmmdd-HHMMSS-mmm", UTC) and describes it.
  absl::StatusOr<SnapshotInfo> Create(DB& db, absl::string_view name) const;
  // Every complete snapshot, by name.
  absl::StatusOr<std::vector<SnapshotInfo>> List() const;
  // Replaces `host`'s database with snapshot `name` (DbHost::Restore). The caller must hold no
  // lease of `host`: the restore waits for every lease to end.
  absl::Status Restore(DbHost& host, absl::string_view name) const;

 private:
  const std::string dir_;
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_SNAPSHOT_SHELF_H_

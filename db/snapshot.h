// Snapshots on disk: the directory format, restore, and reading snapshots back, all through a
// storage::FileSystem so that tests can fault every step (db/snapshot_fault_test.cc).
// DB::RestoreSnapshot, DB::DescribeSnapshot and DB::ListSnapshots (include/shoal/db.h) call these
// with FileSystem::Default(); DBImpl::Snapshot writes through the DB's own FileSystem.
//
// A snapshot directory holds
//   rocksdb/   a RocksDB checkpoint (one consistent point in time)
//   index/     a copy of DIR/index (the SSD index files the checkpoint's manifests name)
//   SNAPSHOT   a marker written last; a directory without it is not a snapshot.
//
// Thread safety: free functions; no DB may have the restored `path` open.
#ifndef SHOAL_DB_SNAPSHOT_H_
#define SHOAL_DB_SNAPSHOT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shoal/db.h"
#include "storage/io/file_system.h"

namespace shoal::db {

// Replaces the database in `path` with the snapshot in `snapshot_dir` (DB::RestoreSnapshot):
// stages a copy in `path`/restore.staging, marks it READY, then swaps each part in. After an
// error before the swap the old database is intact and the staging is removed (or, if that
// fails too, by the next Open); after a crash before READY the same. Once READY is durable a
// crash or an error mid-swap is finished by the next Open: the snapshot's data, whole.
// Errors: NotFound (not a complete snapshot), ResourceExhausted (disk full), Internal (I/O).
absl::Status RestoreSnapshot(storage::FileSystem& fs, const std::string& snapshot_dir,
                             const std::string& path);

// Finishes or discards a restore that a crash interrupted in `path` (no-op when none is
// pending). DBImpl::Open calls it before anything else.
absl::Status FinishPendingRestore(storage::FileSystem& fs, const std::string& path);

// Where the database in `path` lives once the next Open has finished a restore that a crash cut
// after READY: each part (rocksdb/, index/) is either swapped in already or still staged. With no
// restore pending (or one cut before READY, which Open discards) that is `path` itself. Offline
// tools read this layout rather than finishing the swap themselves: they never write.
struct DatabaseLayout {
  std::string rocksdb_dir;  // the RocksDB directory
  std::string index_dir;    // the SSD index files
  std::string note;         // non-empty when a restore is pending: what Open will do
};
DatabaseLayout LayoutAfterPendingRestore(storage::FileSystem& fs, const std::string& path);

// DB::DescribeSnapshot / DB::ListSnapshots.
absl::StatusOr<SnapshotInfo> DescribeSnapshot(storage::FileSystem& fs,
                                              const std::string& snapshot_dir);
absl::StatusOr<std::vector<SnapshotInfo>> ListSnapshots(storage::FileSystem& fs,
                                                        const std::string& root);

}  // namespace shoal::db

#endif  // SHOAL_DB_SNAPSHOT_H_

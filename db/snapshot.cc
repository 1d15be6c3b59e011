// Snapshots of a whole database and restoring them (format: db/snapshot.h).
//
// Snapshot writes "<dir>.tmp" and renames it to <dir> once everything is synced.
//
// Restore into DIR stages the copy in DIR/restore.staging/{rocksdb,index}, writes
// DIR/restore.staging/READY, then swaps each staged directory in. A crash before READY leaves
// the old database intact (the staging is discarded at the next Open); after READY the next
// Open (FinishPendingRestore) completes the swap, which is idempotent.
//
// Every file and directory is reached through storage::FileSystem.
#include "db/snapshot.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/db_impl.h"

namespace shoal::db {
namespace {

constexpr char kSnapshotMarker[] = "SNAPSHOT";
constexpr char kStagingDir[] = "restore.staging";
constexpr char kReadyMarker[] = "READY";
// The parts of a database directory a snapshot carries, in swap order.
constexpr const char* kParts[] = {"rocksdb", "index"};

std::string Join(const std::string& dir, const std::string& name) {
  return absl::StrCat(dir, "/", name);
}

std::string Parent(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

// Whether `path` can be seen (an unreadable one counts as absent, as std::filesystem::exists
// with an error code did).
bool Present(storage::FileSystem& fs, const std::string& path) { return fs.Stat(path).ok(); }

absl::Status NotASnapshot(const std::string& dir) {
  return absl::NotFoundError(absl::StrCat("snapshot: ", dir, " is not a complete Shoal snapshot"));
}

// Writes the marker `name` into `dir` durably: the file, then its name.
absl::Status WriteMarker(storage::FileSystem& fs, const std::string& dir, const char* name,
                         std::string_view text) {
  SHOAL_RETURN_IF_ERROR(storage::WriteFileSynced(fs, Join(dir, name), text));
  return fs.SyncDir(dir);
}

// Adds the regular files under `dir` (recursively) to info's count and bytes.
absl::Status CountFiles(storage::FileSystem& fs, const std::string& dir, SnapshotInfo* info) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> names, fs.ListDir(dir));
  for (const std::string& name : names) {
    const std::string path = Join(dir, name);
    SHOAL_ASSIGN_OR_RETURN(storage::FileStat st, fs.Stat(path));
    if (st.is_directory) {
      SHOAL_RETURN_IF_ERROR(CountFiles(fs, path, info));
    } else {
      ++info->files;
      info->bytes += st.size;
    }
  }
  return absl::OkStatus();
}

// Copies the snapshot's parts into `staging`, then marks it READY.
absl::Status Stage(storage::FileSystem& fs, const std::string& snapshot_dir,
                   const std::string& staging) {
  SHOAL_RETURN_IF_ERROR(fs.CreateDirs(staging));
  for (const char* part : kParts) {
    if (!Present(fs, Join(snapshot_dir, part))) continue;
    SHOAL_RETURN_IF_ERROR(storage::CopyTree(fs, Join(snapshot_dir, part), Join(staging, part)));
  }
  return WriteMarker(fs, staging, kReadyMarker, "ready\n");
}

// Removes a staging directory that was never swapped in. READY goes first, durably: a staging
// directory that keeps READY must stay whole, since the next Open swaps it in.
absl::Status DiscardStaging(storage::FileSystem& fs, const std::string& staging) {
  absl::Status s = fs.Unlink(Join(staging, kReadyMarker));
  if (!s.ok() && !absl::IsNotFound(s)) return s;
  if (s.ok()) SHOAL_RETURN_IF_ERROR(fs.SyncDir(staging));
  return fs.RemoveAll(staging);
}

}  // namespace

absl::Status FinishPendingRestore(storage::FileSystem& fs, const std::string& path) {
  const std::string staging = Join(path, kStagingDir);
  if (!Present(fs, staging)) return absl::OkStatus();
  if (!Present(fs, Join(staging, kReadyMarker))) {
    return fs.RemoveAll(staging);  // an interrupted copy: the old database is intact
  }
  for (const char* part : kParts) {
    if (!Present(fs, Join(staging, part))) continue;  // already swapped in before a crash
    SHOAL_RETURN_IF_ERROR(fs.RemoveAll(Join(path, part)));
    SHOAL_RETURN_IF_ERROR(fs.Rename(Join(staging, part), Join(path, part)));
    SHOAL_RETURN_IF_ERROR(fs.SyncDir(path));
  }
  SHOAL_RETURN_IF_ERROR(fs.RemoveAll(staging));
  return fs.SyncDir(path);
}

DatabaseLayout LayoutAfterPendingRestore(storage::FileSystem& fs, const std::string& path) {
  DatabaseLayout layout{Join(path, "rocksdb"), Join(path, "index"), ""};
  const std::string staging = Join(path, kStagingDir);
  if (!Present(fs, Join(staging, kReadyMarker))) return layout;
  if (Present(fs, Join(staging, "rocksdb"))) layout.rocksdb_dir = Join(staging, "rocksdb");
  if (Present(fs, Join(staging, "index"))) layout.index_dir = Join(staging, "index");
  layout.note = absl::StrCat("a restore cut short by a crash is pending in ", staging,
                             ": the next start finishes it; checked the restored data it installs");
  return layout;
}

absl::Status RestoreSnapshot(storage::FileSystem& fs, const std::string& snapshot_dir,
                             const std::string& path) {
  if (!Present(fs, Join(snapshot_dir, kSnapshotMarker)) ||
      !Present(fs, Join(Join(snapshot_dir, "rocksdb"), "CURRENT"))) {
    return NotASnapshot(snapshot_dir);
  }
  SHOAL_RETURN_IF_ERROR(fs.CreateDirs(path));
  SHOAL_RETURN_IF_ERROR(FinishPendingRestore(fs, path));  // an older interrupted one first
  const std::string staging = Join(path, kStagingDir);
  absl::Status staged = Stage(fs, snapshot_dir, staging);
  if (!staged.ok()) {
    // The old database stays. A partial copy is garbage, and on a full disk it holds the space
    // the database needs: removed now (what a failure here leaves, the next Open removes).
    DiscardStaging(fs, staging).IgnoreError();
    return staged;
  }
  return FinishPendingRestore(fs, path);
}

absl::StatusOr<SnapshotInfo> DescribeSnapshot(storage::FileSystem& fs,
                                              const std::string& snapshot_dir) {
  absl::StatusOr<storage::FileStat> marker = fs.Stat(Join(snapshot_dir, kSnapshotMarker));
  if (!marker.ok()) return NotASnapshot(snapshot_dir);
  SnapshotInfo info;
  info.name = std::filesystem::path(snapshot_dir).filename().string();
  info.created_unix_seconds = marker->modified_unix_seconds;
  SHOAL_RETURN_IF_ERROR(CountFiles(fs, snapshot_dir, &info));
  return info;
}

absl::StatusOr<std::vector<SnapshotInfo>> ListSnapshots(storage::FileSystem& fs,
                                                        const std::string& root) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> names, fs.ListDir(root));
  std::sort(names.begin(), names.end());
  std::vector<SnapshotInfo> out;
  for (const std::string& name : names) {
    const std::string dir = Join(root, name);
    if (!Present(fs, Join(dir, kSnapshotMarker))) continue;
    SHOAL_ASSIGN_OR_RETURN(SnapshotInfo info, DescribeSnapshot(fs, dir));
    out.push_back(std::move(info));
  }
  return out;
}

absl::Status DBImpl::Snapshot(const std::string& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("dir: must not be empty");
  if (Present(*fs_, dir)) {
    return absl::AlreadyExistsError(absl::StrCat("dir: ", dir, " already exists"));
  }
  const std::string tmp = dir + ".tmp";
  fs_->RemoveAll(tmp).IgnoreError();  // a crashed snapshot's leftover; CreateDirs reports
  SHOAL_RETURN_IF_ERROR(fs_->CreateDirs(tmp));
  absl::Status s = SnapshotInto(tmp);
  if (s.ok()) s = fs_->Rename(tmp, dir);
  if (!s.ok()) {
    // A failed copy is garbage; on a full disk it holds the space the database needs.
    fs_->RemoveAll(tmp).IgnoreError();
    return s;
  }
  return fs_->SyncDir(Parent(dir));
}

absl::Status DBImpl::SnapshotInto(const std::string& tmp) {
  {
    // No write, build, compaction or catalog change runs while both halves are copied, so the
    // index files match the manifests in the checkpoint.
    absl::WriterMutexLock lock(&change_mu_);
    // Nor does background index maintenance (it would commit directory rows and reuse freed
    // posting pages while the files are copied).
    std::vector<std::shared_ptr<Collection>> all;
    {
      absl::MutexLock collections_lock(&mu_);
      for (const auto& [name, c] : collections_) all.push_back(c);
    }
    for (const auto& c : all) c->PauseIndexUpdates();
    absl::Status s = store_->Checkpoint(Join(tmp, "rocksdb"));
    if (s.ok()) s = storage::CopyTree(*fs_, index_root_, Join(tmp, "index"));
    for (const auto& c : all) c->ResumeIndexUpdates();
    SHOAL_RETURN_IF_ERROR(s);
  }
  SHOAL_RETURN_IF_ERROR(fs_->SyncDir(Join(tmp, "rocksdb")));
  return WriteMarker(*fs_, tmp, kSnapshotMarker, "shoal snapshot v1\n");
}

}  // namespace shoal::db

namespace shoal {

absl::Status DB::RestoreSnapshot(const std::string& snapshot_dir, const std::string& path) {
  return db::RestoreSnapshot(*storage::FileSystem::Default(), snapshot_dir, path);
}

absl::StatusOr<SnapshotInfo> DB::DescribeSnapshot(const std::string& snapshot_dir) {
  return db::DescribeSnapshot(*storage::FileSystem::Default(), snapshot_dir);
}

absl::StatusOr<std::vector<SnapshotInfo>> DB::ListSnapshots(const std::string& root) {
  return db::ListSnapshots(*storage::FileSystem::Default(), root);
}

}  // namespace shoal

// Snapshots of a whole database and restoring them (DB::Snapshot, DB::RestoreSnapshot).
//
// A snapshot directory holds
//   rocksdb/   a RocksDB checkpoint (one consistent point in time)
//   index/     a copy of DIR/index (the SSD index files the checkpoint's manifests name)
//   SNAPSHOT   a marker written last; a directory without it is not a snapshot.
// Snapshot writes "<dir>.tmp" and renames it to <dir> once everything is synced.
//
// Restore into DIR stages the copy in DIR/restore.staging/{rocksdb,index}, writes
// DIR/restore.staging/READY, then swaps each staged directory in. A crash before READY leaves
// the old database intact (the staging is discarded at the next Open); after READY the next
// Open (FinishPendingRestore) completes the swap, which is idempotent.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/db_impl.h"
#include "storage/file_system.h"

namespace shoal::db {
namespace {

namespace fs = std::filesystem;

constexpr char kSnapshotMarker[] = "SNAPSHOT";
constexpr char kStagingDir[] = "restore.staging";
constexpr char kReadyMarker[] = "READY";
// The parts of a database directory a snapshot carries, in swap order.
constexpr const char* kParts[] = {"rocksdb", "index"};

// std::filesystem reports errno values: the code is chosen as for Shoal's own files
// (storage::ErrnoStatus: a full disk is ResourceExhausted, as the write path reports it).
absl::Status IoError(const std::string& what, const std::error_code& ec) {
  return absl::Status(storage::ErrnoStatus(what, "", ec.value()).code(),
                      absl::StrCat(what, ": ", ec.message()));
}

absl::Status SyncPath(const fs::path& path, bool directory) {
  const int fd = open(path.c_str(), (directory ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
  if (fd < 0) return storage::ErrnoStatus("open for fsync", path.string(), errno);
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  if (rc != 0) return storage::ErrnoStatus("fsync", path.string(), err);
  return absl::OkStatus();
}

absl::Status WriteMarker(const fs::path& path, const std::string& text) {
  SHOAL_RETURN_IF_ERROR(
      storage::WriteFileSynced(*storage::FileSystem::Default(), path.string(), text));
  return SyncPath(path.parent_path(), /*directory=*/true);
}

// Through the FileSystem seam rather than std::filesystem::copy_file, which (libstdc++'s
// sendfile path) reports a copy cut short by a full disk as EIO instead of ENOSPC.
absl::Status CopyFileSynced(const std::string& from, const std::string& to) {
  storage::FileSystem& files = *storage::FileSystem::Default();
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<storage::File> in,
                         files.Open(from, storage::OpenMode::kExisting));
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<storage::File> out,
                         files.Open(to, storage::OpenMode::kCreate));
  std::vector<uint8_t> buffer(1 << 20);
  for (uint64_t offset = 0;;) {
    SHOAL_ASSIGN_OR_RETURN(size_t n, in->Read(offset, buffer));
    if (n == 0) break;
    SHOAL_RETURN_IF_ERROR(out->Write(offset, std::span<const uint8_t>(buffer.data(), n)));
    offset += n;
  }
  return out->Sync();
}

}  // namespace

absl::Status CopyTreeDurably(const std::string& from, const std::string& to) {
  std::error_code ec;
  if (fs::exists(to, ec)) return absl::AlreadyExistsError(absl::StrCat(to, " already exists"));
  fs::create_directories(to, ec);
  if (ec) return IoError(absl::StrCat("creating ", to), ec);
  for (auto it = fs::recursive_directory_iterator(from, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const fs::path target = fs::path(to) / fs::relative(it->path(), from);
    if (it->is_directory()) {
      fs::create_directories(target, ec);
      if (ec) return IoError(absl::StrCat("creating ", target.string()), ec);
    } else if (it->is_regular_file()) {
      SHOAL_RETURN_IF_ERROR(CopyFileSynced(it->path().string(), target.string()));
    }
  }
  if (ec) return IoError(absl::StrCat("listing ", from), ec);
  // Directories last, deepest first is not needed: every entry is already in place.
  for (auto it = fs::recursive_directory_iterator(to, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_directory()) SHOAL_RETURN_IF_ERROR(SyncPath(it->path(), /*directory=*/true));
  }
  if (ec) return IoError(absl::StrCat("listing ", to), ec);
  SHOAL_RETURN_IF_ERROR(SyncPath(to, /*directory=*/true));
  return SyncPath(fs::path(to).parent_path(), /*directory=*/true);
}

absl::Status FinishPendingRestore(const std::string& path) {
  const fs::path staging = fs::path(path) / kStagingDir;
  std::error_code ec;
  if (!fs::exists(staging, ec)) return absl::OkStatus();
  if (!fs::exists(staging / kReadyMarker, ec)) {
    fs::remove_all(staging, ec);  // an interrupted copy: the old database is intact
    if (ec) return IoError(absl::StrCat("removing ", staging.string()), ec);
    return absl::OkStatus();
  }
  for (const char* part : kParts) {
    if (!fs::exists(staging / part, ec)) continue;  // already swapped in before a crash
    fs::remove_all(fs::path(path) / part, ec);
    if (ec) return IoError(absl::StrCat("removing ", (fs::path(path) / part).string()), ec);
    fs::rename(staging / part, fs::path(path) / part, ec);
    if (ec) return IoError(absl::StrCat("renaming into ", path), ec);
    SHOAL_RETURN_IF_ERROR(SyncPath(path, /*directory=*/true));
  }
  fs::remove_all(staging, ec);
  if (ec) return IoError(absl::StrCat("removing ", staging.string()), ec);
  return SyncPath(path, /*directory=*/true);
}

absl::Status DBImpl::Snapshot(const std::string& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("dir: must not be empty");
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    return absl::AlreadyExistsError(absl::StrCat("dir: ", dir, " already exists"));
  }
  const std::string tmp = dir + ".tmp";
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return IoError(absl::StrCat("creating ", tmp), ec);
  absl::Status s = SnapshotInto(tmp);
  if (s.ok()) {
    fs::rename(tmp, dir, ec);
    if (ec) s = IoError(absl::StrCat("renaming ", tmp, " to ", dir), ec);
  }
  if (!s.ok()) {
    // A failed copy is garbage; on a full disk it holds the space the database needs.
    fs::remove_all(tmp, ec);
    return s;
  }
  return SyncPath(fs::path(dir).parent_path(), /*directory=*/true);
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
    absl::Status s = store_->Checkpoint((fs::path(tmp) / "rocksdb").string());
    if (s.ok()) s = CopyTreeDurably(index_root_, (fs::path(tmp) / "index").string());
    for (const auto& c : all) c->ResumeIndexUpdates();
    SHOAL_RETURN_IF_ERROR(s);
  }
  SHOAL_RETURN_IF_ERROR(SyncPath(fs::path(tmp) / "rocksdb", /*directory=*/true));
  return WriteMarker(fs::path(tmp) / kSnapshotMarker, "shoal snapshot v1\n");
}

}  // namespace shoal::db

namespace shoal {

absl::Status DB::RestoreSnapshot(const std::string& snapshot_dir, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path snapshot(snapshot_dir);
  if (!fs::exists(snapshot / db::kSnapshotMarker, ec) ||
      !fs::exists(snapshot / "rocksdb" / "CURRENT", ec)) {
    return absl::NotFoundError(
        absl::StrCat("snapshot: ", snapshot_dir, " is not a complete Shoal snapshot"));
  }
  fs::create_directories(path, ec);
  if (ec) return db::IoError(absl::StrCat("creating ", path), ec);
  SHOAL_RETURN_IF_ERROR(db::FinishPendingRestore(path));  // an older interrupted one first
  const fs::path staging = fs::path(path) / db::kStagingDir;
  fs::create_directories(staging, ec);
  if (ec) return db::IoError(absl::StrCat("creating ", staging.string()), ec);
  for (const char* part : db::kParts) {
    if (!fs::exists(snapshot / part, ec)) continue;
    SHOAL_RETURN_IF_ERROR(
        db::CopyTreeDurably((snapshot / part).string(), (staging / part).string()));
  }
  SHOAL_RETURN_IF_ERROR(db::WriteMarker(staging / db::kReadyMarker, "ready\n"));
  return db::FinishPendingRestore(path);
}

absl::StatusOr<SnapshotInfo> DB::DescribeSnapshot(const std::string& snapshot_dir) {
  namespace fs = std::filesystem;
  const fs::path dir(snapshot_dir);
  std::error_code ec;
  const auto written = fs::last_write_time(dir / db::kSnapshotMarker, ec);
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("snapshot: ", snapshot_dir, " is not a complete Shoal snapshot"));
  }
  SnapshotInfo info;
  info.name = dir.filename().string();
  info.created_unix_seconds = std::chrono::duration_cast<std::chrono::seconds>(
                                  std::chrono::file_clock::to_sys(written).time_since_epoch())
                                  .count();
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    ++info.files;
    info.bytes += it->file_size(ec);
  }
  if (ec) return db::IoError(absl::StrCat("listing snapshot ", snapshot_dir), ec);
  return info;
}

absl::StatusOr<std::vector<SnapshotInfo>> DB::ListSnapshots(const std::string& root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> dirs;
  for (auto it = fs::directory_iterator(root, ec); !ec && it != fs::end(it); it.increment(ec)) {
    std::error_code marker;
    if (fs::exists(it->path() / db::kSnapshotMarker, marker)) dirs.push_back(it->path());
  }
  if (ec) return db::IoError(absl::StrCat("listing ", root), ec);
  std::sort(dirs.begin(), dirs.end());
  std::vector<SnapshotInfo> out;
  for (const std::string& dir : dirs) {
    SHOAL_ASSIGN_OR_RETURN(SnapshotInfo info, DescribeSnapshot(dir));
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace shoal

#include "rpc/snapshot_shelf.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace shoal::rpc {

namespace fs = std::filesystem;

absl::Status ValidateSnapshotName(absl::string_view name, absl::string_view field) {
  const auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": \"", name,
        "\" is not a snapshot name ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}, no '/' or '..')"));
  };
  if (name.empty() || name.size() > 128 || absl::StrContains(name, "..")) return bad();
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool plain = absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (!plain && (i == 0 || (c != '.' && c != '-'))) return bad();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> SnapshotShelf::Path(absl::string_view name) const {
  if (dir_.empty()) {
    return absl::FailedPreconditionError("snapshots are off: start shoald with --snapshot-dir");
  }
  if (absl::Status s = ValidateSnapshotName(name, "name"); !s.ok()) return s;
  return (fs::path(dir_) / std::string(name)).string();
}

absl::StatusOr<SnapshotInfo> SnapshotShelf::Create(DB& db, absl::string_view requested) const {
  std::string name(requested);
  if (name.empty()) {
    const absl::Time now = absl::Now();
    name = absl::StrCat("snapshot-", absl::FormatTime("%Y%m%d-%H%M%S", now, absl::UTCTimeZone()),
                        "-", absl::ToUnixMillis(now) % 1000);
  }
  absl::StatusOr<std::string> path = Path(name);
  if (!path.ok()) return path.status();
  // DB::Snapshot creates the shelf directory (through the DB's FileSystem) if it is missing.
  if (absl::Status s = db.Snapshot(*path); !s.ok()) {
    if (absl::IsAlreadyExists(s)) {
      return absl::AlreadyExistsError(absl::StrCat("name: snapshot \"", name, "\" exists"));
    }
    return s;
  }
  return DB::DescribeSnapshot(*path);
}

absl::StatusOr<std::vector<SnapshotInfo>> SnapshotShelf::List() const {
  if (dir_.empty()) return Path("x").status();
  return DB::ListSnapshots(dir_);
}

absl::Status SnapshotShelf::Restore(DbHost& host, absl::string_view name) const {
  absl::StatusOr<std::string> path = Path(name);
  if (!path.ok()) return path.status();
  if (!DB::DescribeSnapshot(*path).ok()) {
    return absl::NotFoundError(absl::StrCat("name: no snapshot \"", name, "\""));
  }
  // The name is plain, but the entry could be a symbolic link: restore only from a directory
  // that really lies inside the shelf.
  std::error_code ec;
  if (fs::canonical(*path, ec).parent_path() != fs::canonical(dir_, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("name: snapshot \"", name, "\" does not resolve inside --snapshot-dir"));
  }
  return host.Restore(*path);
}

}  // namespace shoal::rpc

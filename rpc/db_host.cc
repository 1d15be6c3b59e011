#include "rpc/db_host.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace shoal::rpc {

absl::StatusOr<std::unique_ptr<DbHost>> DbHost::Open(const std::string& path,
                                                     const Options& options, Opener opener) {
  absl::StatusOr<std::unique_ptr<DB>> db = opener(path, options);
  if (!db.ok()) return db.status();
  return std::unique_ptr<DbHost>(new DbHost(*std::move(db), path, options, std::move(opener)));
}

DbHost::DbHost(std::unique_ptr<DB> owned, std::string path, const Options& options, Opener opener)
    : path_(std::move(path)),
      options_(options),
      opener_(std::move(opener)),
      owned_(std::move(owned)) {
  absl::MutexLock lock(&mu_);
  db_ = owned_.get();
}

DbHost::~DbHost() {
  absl::MutexLock lock(&mu_);
  db_ = nullptr;
  owned_.reset();
}

DB* DbHost::LockShared() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  mu_.ReaderLock();
  return db_;
}

DbHost::Lease::Lease(DbHost* host) : host_(host), db_(host->LockShared()) {}

DbHost::Lease::~Lease() { host_->mu_.ReaderUnlock(); }

absl::Status DbHost::Lease::status() const {
  if (db_ != nullptr) return absl::OkStatus();
  return absl::UnavailableError("the database is not open (a restore failed to reopen it)");
}

absl::Status DbHost::Restore(const std::string& snapshot_dir) {
  if (path_.empty()) {
    return absl::FailedPreconditionError("this server does not own its database directory");
  }
  absl::MutexLock lock(&mu_);
  db_ = nullptr;
  owned_.reset();  // closes the directory (every acknowledged write is already durable)
  const absl::Status restored = DB::RestoreSnapshot(snapshot_dir, path_);
  absl::StatusOr<std::unique_ptr<DB>> reopened = opener_(path_, options_);
  if (!reopened.ok()) {
    return absl::Status(reopened.status().code(),
                        absl::StrCat(restored.ok() ? "" : absl::StrCat(restored.message(), "; "),
                                     "reopening ", path_, ": ", reopened.status().message()));
  }
  owned_ = *std::move(reopened);
  db_ = owned_.get();
  return restored;
}

}  // namespace shoal::rpc

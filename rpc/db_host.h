// DbHost: the DB a server serves, lent to one RPC at a time through a Lease, and swappable for
// a restored snapshot (Restore) while the server keeps running.
//
//   SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<DbHost> host, DbHost::Open("/data", options));
//   DbHost::Lease lease = host->Acquire();       // in a handler
//   if (!lease.ok()) return lease.status();      // UNAVAILABLE: a restore failed to reopen
//   lease->Search(...);
//
// A Lease holds a shared lock for its lifetime: Restore (exclusive) waits for every lease to be
// released, and leases asked for while a Restore waits block until it is done. Handlers take one
// lease per unit of work (a stream takes one per message), never one for a whole stream.
//
// Thread safety: all methods are thread-safe. A Lease must be released by the thread that took
// it (it is a scoped object).
#ifndef SHOAL_RPC_DB_HOST_H_
#define SHOAL_RPC_DB_HOST_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "shoal/db.h"
#include "shoal/options.h"

namespace shoal::rpc {

class DbHost {
 public:
  // How the host opens (and, after a Restore, reopens) its DB: DB::Open by default.
  using Opener =
      std::function<absl::StatusOr<std::unique_ptr<DB>>(const std::string&, const Options&)>;
  // Opens (creating it if needed) and owns the DB in `path`; Restore is supported.
  static absl::StatusOr<std::unique_ptr<DbHost>> Open(const std::string& path,
                                                      const Options& options,
                                                      Opener opener = &DB::Open);
  // Serves `db` (not owned; must outlive the host). Restore answers FAILED_PRECONDITION.
  explicit DbHost(DB* db) : db_(db) {}
  ~DbHost();
  DbHost(const DbHost&) = delete;
  DbHost& operator=(const DbHost&) = delete;

  class ABSL_SCOPED_LOCKABLE Lease {
   public:
    explicit Lease(DbHost* host) ABSL_SHARED_LOCK_FUNCTION(host->mu_);
    ~Lease() ABSL_UNLOCK_FUNCTION();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

    // False (status UNAVAILABLE) when no DB is open: a restore could not reopen it.
    bool ok() const { return db_ != nullptr; }
    absl::Status status() const;
    DB* operator->() const { return db_; }
    DB& operator*() const { return *db_; }

   private:
    DbHost* const host_;
    DB* const db_;
  };

  // Takes the shared lock; see the file comment.
  Lease Acquire() { return Lease(this); }

  // Waits for every lease to end, closes the DB, replaces its directory with the snapshot in
  // `snapshot_dir` (DB::RestoreSnapshot) and reopens it. If the restore itself fails the old
  // database is reopened; if reopening fails, leases report UNAVAILABLE until a later Restore
  // succeeds.
  absl::Status Restore(const std::string& snapshot_dir);

 private:
  DbHost(std::unique_ptr<DB> owned, std::string path, const Options& options, Opener opener);
  // Takes mu_ shared and returns the DB (for Lease's constructor).
  DB* LockShared();

  const std::string path_;  // empty when the DB is not owned
  const Options options_;
  const Opener opener_;
  absl::Mutex mu_;
  std::unique_ptr<DB> owned_ ABSL_GUARDED_BY(mu_);
  DB* db_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_DB_HOST_H_

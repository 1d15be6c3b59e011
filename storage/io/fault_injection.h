// FaultInjectingFileSystem: a FileSystem (file_system.h) for tests that makes chosen operations
// fail, tears writes and simulates a power loss — for Shoal's own files and, through
// rocksdb_env(), for RocksDB's files (WAL, MANIFEST, SSTs) with the same rules.
//
//   storage::FaultInjectingFileSystem fs;
//   db::StorageHooks hooks{&fs, fs.rocksdb_env()};
//   auto db = db::DBImpl::Open(dir, options, hooks);
//   fs.Fail(FaultOp::kSync, ".log", EIO);        // the next WAL fsync fails with EIO
//   db->Upsert(..., {.sync = true});              // -> Internal "... injected EIO ..."
//   fs.Fail(FaultOp::kWrite, "postings.dat", ENOSPC, /*one_shot=*/false);  // until Clear()
//   fs.TearWrite("vectors.dat", 100);             // the next write stores only 100 bytes, EIO
//   fs.FailAfter(7, "snap.tmp", ENOSPC);          // the 8th write/sync/rename there fails
//   fs.PowerOff();                                // every later write/sync/rename fails
//   fs.PowerOffAfter(12);                         // ... after 12 more of them went through
//   db.reset();
//   fs.DropUnsyncedData();                        // files back to their last synced content
//
// A rule matches an operation of its kind on a path containing `path_substring` (RocksDB's
// paths are DIR/rocksdb/NNNNNN.log for the WAL, MANIFEST-NNNNNN, NNNNNN.sst, CURRENT).
//
// Power-loss model (DropUnsyncedData): a file written through this file system goes back to
// its content at its last successful Sync (Shoal's files: a copy taken at each Sync; RocksDB's
// append-only files: truncated to the synced length); a file never synced since it was created
// is deleted. Renames and directory creation are taken as durable when they return (directory
// fsyncs are counted, not modelled).
//
// Thread-safe.
#ifndef SHOAL_STORAGE_IO_FAULT_INJECTION_H_
#define SHOAL_STORAGE_IO_FAULT_INJECTION_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "storage/io/file_system.h"

namespace rocksdb {
class Env;
}  // namespace rocksdb

namespace shoal::storage {

enum class FaultOp { kWrite = 0, kSync = 1, kRename = 2 };

class FaultInjectingFileSystem final : public FileSystem {
 public:
  // Wraps `base` (not owned) for Shoal's files and RocksDB's default file system for RocksDB's.
  explicit FaultInjectingFileSystem(FileSystem* base = FileSystem::Default());
  ~FaultInjectingFileSystem() override;

  // The next matching `op` (one_shot) or every one until Clear() fails with errno `err` (EIO,
  // ENOSPC, ...) without touching the file.
  void Fail(FaultOp op, std::string path_substring, int err, bool one_shot = true);
  // The next matching write (or every one) stores only its first `prefix` bytes, then fails
  // with EIO: a torn write.
  void TearWrite(std::string path_substring, size_t prefix, bool one_shot = true);
  // The first `operations` writes, syncs and renames on paths containing `path_substring` go
  // through; the one after them fails with errno `err` (once; the power stays on). To fail each
  // step of a procedure in turn, as PowerOffAfter crashes it at each step. Replaces an earlier
  // FailAfter that has not fired; Clear() removes it.
  void FailAfter(uint64_t operations, std::string path_substring, int err);
  // Every matching sync sleeps `delay` first (to make concurrent writers observable).
  void SetSyncDelay(std::string path_substring, absl::Duration delay);
  // Every matching sync runs `hook` first, on the syncing thread (a test may hold a thread
  // there; the sync is under way meanwhile, so PowerOff waits for it).
  void SetSyncHook(std::string path_substring, std::function<void()> hook);
  // Removes all rules, delays and hooks (PowerOff stays until DropUnsyncedData).
  void Clear();

  // Operations of kind `op` attempted on paths containing `path_substring` (failed ones too).
  uint64_t Count(FaultOp op, const std::string& path_substring) const;
  // Faults injected so far.
  uint64_t injected() const;

  // Simulated power loss, part 1: from now on every write, sync and rename fails with EIO, and
  // so does every creation and removal of a file or directory (so that what a dying process
  // does after this moment never reaches the disk). Operations already let through finish
  // first: PowerOff waits for them, so a sync that returned OK was recorded as synced.
  void PowerOff();
  // The next `operations` writes, syncs and renames (Shoal's and RocksDB's) go through; the one
  // after them fails and the power is off (as PowerOff). To crash at each step of a procedure.
  void PowerOffAfter(uint64_t operations);
  // Part 2, with the DB closed: every file written since it was opened through this file system
  // goes back to its last synced content (see the file comment); then power is back on, unless
  // `power_back_on` is false: a process that simulates its own power loss with the DB still
  // open (shoald --testing-power-loss-on-sigusr1) drops, then exits without writing again.
  absl::Status DropUnsyncedData(bool power_back_on = true);

  // An Env for RocksDB (StoreOptions::env) whose files obey the same rules. Owned by this.
  rocksdb::Env* rocksdb_env();

  // ---- FileSystem ----
  absl::StatusOr<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override;
  absl::Status Rename(const std::string& from, const std::string& to) override;
  absl::Status Unlink(const std::string& path) override;
  absl::Status RemoveAll(const std::string& path) override;
  absl::Status CreateDirs(const std::string& path) override;
  absl::Status SyncDir(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override;
  absl::StatusOr<FileStat> Stat(const std::string& path) override;

  // ---- Used by the file wrappers (fault_injection.cc) ----
  // One operation on a file under way. While it lives, the power cannot go off (PowerOff waits
  // for it), so that what it writes and records lands before the power goes, never after.
  class [[nodiscard]] Operation {
   public:
    ~Operation();
    Operation(const Operation&) = delete;
    Operation& operator=(const Operation&) = delete;
    // 0: go ahead; else the errno to fail with.
    int err() const { return err_; }

   private:
    friend class FaultInjectingFileSystem;
    Operation(absl::Mutex* power_mu, int err);
    absl::Mutex* const power_mu_;
    const int err_;
  };
  // An operation of kind `op` on `path`, checked against the rules and the power; for a write,
  // *torn_prefix is set when only that many bytes may be written first.
  Operation Begin(FaultOp op, const std::string& path, size_t* torn_prefix = nullptr);
  // A creation or removal: checked against the power only.
  Operation BeginPowered();
  // Records the synced state of a file: Shoal's files pass their whole content, RocksDB's
  // their synced length.
  void RecordSynced(const std::string& path, std::string content);
  void RecordSyncedLength(const std::string& path, uint64_t length);
  // Records that a file was created (or truncated): unsynced until RecordSynced*.
  void RecordCreated(const std::string& path, bool rocksdb);
  void RecordRenamed(const std::string& from, const std::string& to);
  void RecordRemoved(const std::string& path);

 private:
  struct Rule {
    FaultOp op;
    std::string path_substring;
    int err;
    bool one_shot;
    size_t torn_prefix;  // SIZE_MAX: not a torn write
  };
  // What a power loss leaves of a file.
  struct Tracked {
    bool rocksdb = false;
    bool synced = false;  // synced at least once since created
    std::string content;  // Shoal's files: content at the last sync
    uint64_t length = 0;  // RocksDB's files: length at the last sync
  };

  FileSystem* const base_;
  std::unique_ptr<rocksdb::Env> rocksdb_env_;
  mutable absl::Mutex mu_;
  std::vector<Rule> rules_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<std::string, std::function<void()>>> sync_hooks_ ABSL_GUARDED_BY(mu_);
  struct Countdown {
    std::string path_substring;
    int err;
    uint64_t remaining;  // operations still let through
  };
  std::optional<Countdown> fail_after_ ABSL_GUARDED_BY(mu_);  // FailAfter
  // What to do with an operation on `path` (see Begin): 0 = go ahead, else the errno.
  int Check(FaultOp op, const std::string& path, size_t* torn_prefix);

  // Held shared by every operation under way and exclusively by PowerOff, so that the power
  // goes off between operations. Taken before mu_.
  absl::Mutex power_mu_;

  bool powered_off_ ABSL_GUARDED_BY(mu_) = false;
  int64_t power_off_countdown_ ABSL_GUARDED_BY(mu_) = -1;  // PowerOffAfter; -1: none
  uint64_t injected_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, std::array<uint64_t, 3>> counts_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Tracked> tracked_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_IO_FAULT_INJECTION_H_

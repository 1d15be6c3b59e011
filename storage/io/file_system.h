// FileSystem: the seam through which Shoal reads and writes its own files (posting files, vector
// files, index checkpoints and directories, centroid and quantizer files, snapshots and
// restores, the database directory itself). RocksDB writes through its own rocksdb::FileSystem;
// FaultInjectingFileSystem (fault_injection.h) wraps both, so tests can make any write, fsync or
// rename fail, tear a write, or drop what was never fsynced (a simulated power loss).
// Reads of sealed data files go through BlockReader (O_DIRECT, io_uring) and are not wrapped.
//
//   FileSystem* fs = FileSystem::Default();  // POSIX
//   SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<File> f, fs->Open(path, OpenMode::kCreate));
//   SHOAL_RETURN_IF_ERROR(f->Write(0, bytes));
//   SHOAL_RETURN_IF_ERROR(f->Sync());           // the bytes are durable
//   SHOAL_RETURN_IF_ERROR(fs->SyncDir(dir));    // and so is the file's name
//
// Errors map errno to canonical codes the same way everywhere (ErrnoStatus): ENOENT NotFound,
// ENOSPC/EDQUOT ResourceExhausted, anything else (EIO, ...) Internal; the message names the
// operation, the path and the errno text.
//
// Thread safety: FileSystem methods may be called concurrently. A File may be used by one thread
// at a time (callers serialise; PostingFileWriter and VectorFile hold their own mutex).
#ifndef SHOAL_STORAGE_IO_FILE_SYSTEM_H_
#define SHOAL_STORAGE_IO_FILE_SYSTEM_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shoal::storage {

// `what PATH: strerror(err)` with the canonical code of `err` (see the file comment).
absl::Status ErrnoStatus(std::string_view what, const std::string& path, int err);

// An open file, read-write, addressed by offset.
class File {
 public:
  virtual ~File() = default;
  // Writes all of `data` at `offset` (the file grows as needed). After an error the bytes in
  // [offset, offset + data.size()) are unknown: any prefix of them may have reached the file.
  virtual absl::Status Write(uint64_t offset, std::span<const uint8_t> data) = 0;
  // Reads up to out.size() bytes at `offset`; returns how many (fewer only at the end of file).
  virtual absl::StatusOr<size_t> Read(uint64_t offset, std::span<uint8_t> out) = 0;
  // fdatasync: everything written so far is durable (the name needs FileSystem::SyncDir).
  // After a failed Sync the file's unsynced content is unknown; do not retry and trust it.
  virtual absl::Status Sync() = 0;
  virtual absl::StatusOr<uint64_t> Size() = 0;
  virtual const std::string& path() const = 0;
};

enum class OpenMode {
  kCreate,    // create, or truncate an existing file
  kExisting,  // open an existing file (NotFound if missing)
  kRead,      // open an existing file read-only (NotFound if missing); Write fails
};

// What Stat reports of a path (symbolic links followed).
struct FileStat {
  bool is_directory = false;
  uint64_t size = 0;                  // bytes (of a regular file)
  int64_t modified_unix_seconds = 0;  // last modification
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // The process-wide POSIX file system (never destroyed).
  static FileSystem* Default();

  virtual absl::StatusOr<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) = 0;
  // rename(2): atomically replaces `to` (a file, or an empty directory) with `from`.
  virtual absl::Status Rename(const std::string& from, const std::string& to) = 0;
  // Removes a file; NotFound if missing.
  virtual absl::Status Unlink(const std::string& path) = 0;
  // Removes a file or a directory tree; OK if it does not exist.
  virtual absl::Status RemoveAll(const std::string& path) = 0;
  // mkdir -p.
  virtual absl::Status CreateDirs(const std::string& path) = 0;
  // fsync of a directory: the names created, renamed or removed in it are durable.
  virtual absl::Status SyncDir(const std::string& path) = 0;
  // The names in a directory (no "." or ".."), unsorted. NotFound if it does not exist.
  virtual absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) = 0;
  // stat(2). NotFound if `path` does not exist.
  virtual absl::StatusOr<FileStat> Stat(const std::string& path) = 0;
};

// Whether `path` exists; errors other than NotFound (EACCES, EIO) are returned.
absl::StatusOr<bool> Exists(FileSystem& fs, const std::string& path);

// The whole content of the file `path`.
absl::StatusOr<std::string> ReadFile(FileSystem& fs, const std::string& path);

// Creates (or truncates) `path`, writes `bytes` and syncs the file.
absl::Status WriteFileSynced(FileSystem& fs, const std::string& path, std::string_view bytes);

// Publishes a directory built under a temporary name: syncs `tmp_dir` (its entries), renames it
// to `final_dir` (which must not exist or be empty) and syncs their parent, so after a crash
// either the complete directory exists under `final_dir` or only the temporary one does.
absl::Status PublishDir(FileSystem& fs, const std::string& tmp_dir, const std::string& final_dir);

// Copies the directory tree `from` to `to` (which must not exist: AlreadyExists), syncing every
// file and directory written, then the parent of `to`: once it returns OK the copy is durable.
// Regular files and directories only. After an error a partial copy is left under `to`.
absl::Status CopyTree(FileSystem& fs, const std::string& from, const std::string& to);

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_IO_FILE_SYSTEM_H_

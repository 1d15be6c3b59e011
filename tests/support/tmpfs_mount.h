// TmpfsMount: a real, small file system for tests of what Shoal does when a disk fills up.
// The fault-injection layer (storage/io/fault_injection.h) fails the operations it is told to;
// a real full file system fails every writer at once — RocksDB's info log, WAL, MANIFEST and
// SSTs, Shoal's index files — including the ones nobody thought to inject into.
//
//   absl::StatusOr<std::unique_ptr<TmpfsMount>> fs = TmpfsMount::Create(16 << 20);
//   if (absl::IsPermissionDenied(fs.status())) GTEST_SKIP() << fs.status();
//   std::string dir = (*fs)->path() + "/db";
//   ...                                    // open a database in dir
//   ASSERT_TRUE((*fs)->Fill().ok());       // no byte left
//   ...                                    // writes fail with ResourceExhausted
//   ASSERT_TRUE((*fs)->Unfill().ok());     // the space is back
//
// mount(2) needs CAP_SYS_ADMIN (root in the test and CI containers). The mount is made in a
// mount namespace private to the test process (and the children it starts), so it vanishes
// with them even when a test aborts. Not thread-safe.
#ifndef SHOAL_TESTS_SUPPORT_TMPFS_MOUNT_H_
#define SHOAL_TESTS_SUPPORT_TMPFS_MOUNT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shoal::testing {

class TmpfsMount {
 public:
  // Mounts a tmpfs of `size_bytes` on a fresh directory under $TEST_TMPDIR (or /tmp).
  // PermissionDenied when mount(2) is refused (not root, no CAP_SYS_ADMIN, a seccomp filter):
  // callers skip. Other errors: Internal.
  static absl::StatusOr<std::unique_ptr<TmpfsMount>> Create(uint64_t size_bytes);
  // Unmounts (lazily, so a file still open elsewhere does not block it) and removes the
  // mount point.
  ~TmpfsMount();
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;

  // The mount point.
  const std::string& path() const { return path_; }

  // Writes a filler file until the file system refuses more (ENOSPC) but leaves `keep_bytes`
  // free (rounded to whole 4 KiB pages), or none by default. Calling it again grows the filler.
  absl::Status Fill(uint64_t keep_bytes = 0);
  // Deletes the filler: the space Fill took is free again.
  absl::Status Unfill();
  // Bytes free now (statvfs).
  absl::StatusOr<uint64_t> FreeBytes() const;

 private:
  explicit TmpfsMount(std::string path) : path_(std::move(path)) {}
  std::string filler_path() const { return path_ + "/filler"; }

  std::string path_;
};

}  // namespace shoal::testing

#endif  // SHOAL_TESTS_SUPPORT_TMPFS_MOUNT_H_

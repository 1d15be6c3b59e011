#include "tests/support/tmpfs_mount.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace shoal::testing {
namespace {

constexpr uint64_t kPage = 4096;

absl::Status Errno(const char* what, const std::string& path, int err) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(err)));
}

// Moves this process into a mount namespace of its own (once; unshare(2) needs the process still
// single-threaded, as it is when the first test's SetUp runs), so a mount made afterwards goes
// away with the process and its children — a shoald started by the test inherits it — even when
// the test aborts, and no other process sees it. If that fails the mount is made where we are.
void EnterOwnMountNamespace() {
  static const bool entered = [] {
    return unshare(CLONE_NEWNS) == 0 &&
           mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
  }();
  (void)entered;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TmpfsMount>> TmpfsMount::Create(uint64_t size_bytes) {
  EnterOwnMountNamespace();
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(base != nullptr ? base : "/tmp", "/shoal-tmpfs-XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) return Errno("mkdtemp", dir, errno);
  const std::string options = absl::StrCat("size=", size_bytes, ",mode=0700");
  if (mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    const int err = errno;
    rmdir(dir.c_str());
    if (err == EPERM || err == EACCES) {
      return absl::PermissionDeniedError(
          absl::StrCat("mount(2) of a ", size_bytes, "-byte tmpfs refused (", std::strerror(err),
                       "): this test needs root or CAP_SYS_ADMIN to make a small real disk"));
    }
    return Errno("mount tmpfs on", dir, err);
  }
  return std::unique_ptr<TmpfsMount>(new TmpfsMount(std::move(dir)));
}

TmpfsMount::~TmpfsMount() {
  umount2(path_.c_str(), MNT_DETACH);
  rmdir(path_.c_str());
}

absl::StatusOr<uint64_t> TmpfsMount::FreeBytes() const {
  struct statvfs st;
  if (statvfs(path_.c_str(), &st) != 0) return Errno("statvfs", path_, errno);
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

absl::Status TmpfsMount::Fill(uint64_t keep_bytes) {
  const std::string path = filler_path();
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("open", path, errno);
  std::vector<char> chunk(1 << 20, 'x');
  absl::Status status;
  while (true) {
    absl::StatusOr<uint64_t> free_bytes = FreeBytes();
    if (!free_bytes.ok()) {
      status = free_bytes.status();
      break;
    }
    if (*free_bytes <= keep_bytes) break;
    // Large steps while far from the target, then page by page.
    const uint64_t want = std::max(kPage, (*free_bytes - keep_bytes) / 2 / kPage * kPage);
    const ssize_t n = write(fd, chunk.data(), std::min<uint64_t>(want, chunk.size()));
    if (n < 0) {
      if (errno != ENOSPC) status = Errno("write", path, errno);
      break;
    }
  }
  close(fd);
  return status;
}

absl::Status TmpfsMount::Unfill() {
  if (unlink(filler_path().c_str()) != 0 && errno != ENOENT) {
    return Errno("unlink", filler_path(), errno);
  }
  return absl::OkStatus();
}

}  // namespace shoal::testing

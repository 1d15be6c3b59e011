#include "storage/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace shoal::storage {
namespace {

class PosixFile final : public File {
 public:
  PosixFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixFile() override { ::close(fd_); }

  absl::Status Write(uint64_t offset, std::span<const uint8_t> data) override {
    const uint8_t* p = data.data();
    size_t n = data.size();
    while (n > 0) {
      ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("write", path_, errno);
      }
      p += w;
      n -= static_cast<size_t>(w);
      offset += static_cast<uint64_t>(w);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<size_t> Read(uint64_t offset, std::span<uint8_t> out) override {
    size_t done = 0;
    while (done < out.size()) {
      ssize_t r =
          ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return ErrnoStatus("read", path_, errno);
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return done;
  }

  absl::Status Sync() override {
    if (::fdatasync(fd_) != 0) return ErrnoStatus("fdatasync", path_, errno);
    return absl::OkStatus();
  }

  absl::StatusOr<uint64_t> Size() override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return ErrnoStatus("stat", path_, errno);
    return static_cast<uint64_t>(st.st_size);
  }

  const std::string& path() const override { return path_; }

 private:
  const int fd_;
  const std::string path_;
};

class PosixFileSystem final : public FileSystem {
 public:
  absl::StatusOr<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    const int flags = O_RDWR | O_CLOEXEC | (mode == OpenMode::kCreate ? O_CREAT | O_TRUNC : 0);
    const int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return ErrnoStatus(mode == OpenMode::kCreate ? "create" : "open", path, errno);
    return std::unique_ptr<File>(new PosixFile(fd, path));
  }

  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return ErrnoStatus(absl::StrCat("rename to ", to, ":"), from, errno);
    }
    return absl::OkStatus();
  }

  absl::Status Unlink(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return ErrnoStatus("unlink", path, errno);
    return absl::OkStatus();
  }

  absl::Status RemoveAll(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return ErrnoStatus("remove", path, ec.value());
    return absl::OkStatus();
  }

  absl::Status CreateDirs(const std::string& path) override {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return ErrnoStatus("mkdir", path, ec.value());
    return absl::OkStatus();
  }

  absl::Status SyncDir(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus("open directory", path, errno);
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return ErrnoStatus("fsync directory", path, err);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override {
    DIR* d = ::opendir(path.c_str());
    if (d == nullptr) return ErrnoStatus("list", path, errno);
    std::vector<std::string> out;
    while (struct dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") out.push_back(name);
    }
    ::closedir(d);
    return out;
  }
};

}  // namespace

absl::Status ErrnoStatus(std::string_view what, const std::string& path, int err) {
  std::string msg = absl::StrCat(std::string(what), " ", path, ": ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

FileSystem* FileSystem::Default() {
  static FileSystem* const fs = new PosixFileSystem();
  return fs;
}

absl::Status WriteFileSynced(FileSystem& fs, const std::string& path, std::string_view bytes) {
  absl::StatusOr<std::unique_ptr<File>> f = fs.Open(path, OpenMode::kCreate);
  if (!f.ok()) return f.status();
  auto data = std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (absl::Status s = (*f)->Write(0, data); !s.ok()) return s;
  return (*f)->Sync();
}

absl::Status PublishDir(FileSystem& fs, const std::string& tmp_dir, const std::string& final_dir) {
  if (absl::Status s = fs.SyncDir(tmp_dir); !s.ok()) return s;
  if (absl::Status s = fs.Rename(tmp_dir, final_dir); !s.ok()) return s;
  return fs.SyncDir(std::filesystem::path(final_dir).parent_path().string());
}

}  // namespace shoal::storage

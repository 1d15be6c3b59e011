#include "storage/io/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

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
    int flags = O_RDWR | O_CLOEXEC;
    if (mode == OpenMode::kCreate) flags |= O_CREAT | O_TRUNC;
    if (mode == OpenMode::kRead) flags = O_RDONLY | O_CLOEXEC;
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

  absl::StatusOr<FileStat> Stat(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ErrnoStatus("stat", path, errno);
    FileStat out;
    out.is_directory = S_ISDIR(st.st_mode);
    out.size = static_cast<uint64_t>(st.st_size);
    out.modified_unix_seconds = static_cast<int64_t>(st.st_mtim.tv_sec);
    return out;
  }
};

// Through File rather than std::filesystem::copy_file, which (libstdc++'s sendfile path) reports
// a copy cut short by a full disk as EIO instead of ENOSPC, and which a test cannot fault.
absl::Status CopyFile(FileSystem& fs, const std::string& from, const std::string& to) {
  absl::StatusOr<std::unique_ptr<File>> in = fs.Open(from, OpenMode::kRead);
  if (!in.ok()) return in.status();
  absl::StatusOr<std::unique_ptr<File>> out = fs.Open(to, OpenMode::kCreate);
  if (!out.ok()) return out.status();
  std::vector<uint8_t> buffer(1 << 20);
  for (uint64_t offset = 0;;) {
    absl::StatusOr<size_t> n = (*in)->Read(offset, buffer);
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    absl::Status s = (*out)->Write(offset, std::span<const uint8_t>(buffer.data(), *n));
    if (!s.ok()) return s;
    offset += *n;
  }
  return (*out)->Sync();
}

// CopyTree below the top: `to` is created here and synced once its entries are in place.
absl::Status CopyTreeInto(FileSystem& fs, const std::string& from, const std::string& to) {
  if (absl::Status s = fs.CreateDirs(to); !s.ok()) return s;
  absl::StatusOr<std::vector<std::string>> names = fs.ListDir(from);
  if (!names.ok()) return names.status();
  for (const std::string& name : *names) {
    const std::string source = absl::StrCat(from, "/", name);
    const std::string target = absl::StrCat(to, "/", name);
    absl::StatusOr<FileStat> st = fs.Stat(source);
    if (!st.ok()) return st.status();
    absl::Status s =
        st->is_directory ? CopyTreeInto(fs, source, target) : CopyFile(fs, source, target);
    if (!s.ok()) return s;
  }
  return fs.SyncDir(to);
}

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

absl::StatusOr<bool> Exists(FileSystem& fs, const std::string& path) {
  absl::StatusOr<FileStat> st = fs.Stat(path);
  if (absl::IsNotFound(st.status())) return false;
  if (!st.ok()) return st.status();
  return true;
}

absl::StatusOr<std::string> ReadFile(FileSystem& fs, const std::string& path) {
  absl::StatusOr<std::unique_ptr<File>> f = fs.Open(path, OpenMode::kRead);
  if (!f.ok()) return f.status();
  absl::StatusOr<uint64_t> size = (*f)->Size();
  if (!size.ok()) return size.status();
  std::string bytes(*size, '\0');
  absl::StatusOr<size_t> n =
      (*f)->Read(0, {reinterpret_cast<uint8_t*>(bytes.data()), bytes.size()});
  if (!n.ok()) return n.status();
  bytes.resize(*n);
  return bytes;
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

absl::Status CopyTree(FileSystem& fs, const std::string& from, const std::string& to) {
  absl::StatusOr<bool> exists = Exists(fs, to);
  if (!exists.ok()) return exists.status();
  if (*exists) return absl::AlreadyExistsError(absl::StrCat(to, " already exists"));
  if (absl::Status s = CopyTreeInto(fs, from, to); !s.ok()) return s;
  return fs.SyncDir(std::filesystem::path(to).parent_path().string());
}

}  // namespace shoal::storage

#include "cli/ingest_checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shoal::cli {
namespace {

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::Status WriteAll(int fd, const std::string& text, const std::string& path) {
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("write", path);
    written += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

std::string Checkpoint::Mismatch(const Checkpoint& other) const {
  if (file != other.file) return absl::StrCat("file (", file, " vs ", other.file, ")");
  if (collection != other.collection) {
    return absl::StrCat("collection (", collection, " vs ", other.collection, ")");
  }
  if (key_prefix != other.key_prefix) return "key_prefix";
  if (key_offset != other.key_offset) return "key_offset";
  if (rows != other.rows) return absl::StrCat("rows (", rows, " vs ", other.rows, ")");
  return "";
}

absl::StatusOr<std::optional<Checkpoint>> LoadCheckpoint(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    if (!std::filesystem::exists(path)) return std::nullopt;
    return Errno("open", path);
  }
  Checkpoint c;
  std::string line;
  int number = 0;
  bool has_done = false;
  while (std::getline(in, line)) {
    ++number;
    const size_t eq = line.find('=');
    const std::string key = line.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : line.substr(eq + 1);
    bool ok = eq != std::string::npos;
    if (key == "file") {
      c.file = value;
    } else if (key == "collection") {
      c.collection = value;
    } else if (key == "key_prefix") {
      c.key_prefix = value;
    } else if (key == "key_offset") {
      ok = ok && absl::SimpleAtoi(value, &c.key_offset);
    } else if (key == "rows") {
      ok = ok && absl::SimpleAtoi(value, &c.rows);
    } else if (key == "done") {
      ok = ok && absl::SimpleAtoi(value, &c.done);
      has_done = ok;
    } else if (key != "format") {
      ok = false;
    }
    if (!ok)
      return absl::DataLossError(absl::StrCat(path, ":", number, ": bad line \"", line, "\""));
  }
  if (!has_done || c.done > c.rows) {
    return absl::DataLossError(absl::StrCat(path, ": no valid `done` line"));
  }
  return c;
}

absl::Status SaveCheckpoint(const std::string& path, const Checkpoint& c) {
  const std::string text =
      absl::StrCat("format=shoal-ingest-checkpoint-1\nfile=", c.file, "\ncollection=", c.collection,
                   "\nkey_prefix=", c.key_prefix, "\nkey_offset=", c.key_offset, "\nrows=", c.rows,
                   "\ndone=", c.done, "\n");
  const std::string temp = path + ".tmp";
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("open", temp);
  absl::Status status = WriteAll(fd, text, temp);
  if (status.ok() && fsync(fd) != 0) status = Errno("fsync", temp);
  close(fd);
  if (!status.ok()) return status;
  if (std::rename(temp.c_str(), path.c_str()) != 0) return Errno("rename", temp);
  std::string dir = std::filesystem::path(path).parent_path().string();
  const int dir_fd = open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    fsync(dir_fd);
    close(dir_fd);
  }
  return absl::OkStatus();
}

uint64_t AckedPrefix::Ack(uint64_t first, uint64_t count) {
  absl::MutexLock lock(&mu_);
  if (first + count > done_) pending_[first] = count;
  for (auto it = pending_.begin(); it != pending_.end() && it->first <= done_;) {
    done_ = std::max(done_, it->first + it->second);
    it = pending_.erase(it);
  }
  return done_;
}

uint64_t AckedPrefix::done() const {
  absl::MutexLock lock(&mu_);
  return done_;
}

}  // namespace shoal::cli

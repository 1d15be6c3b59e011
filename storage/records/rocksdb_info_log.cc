#include "storage/records/rocksdb_info_log.h"

#include <sys/time.h>

#include <cstdarg>
#include <cstdio>
#include <ctime>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "rocksdb/env.h"
#include "rocksdb/file_system.h"

namespace shoal::storage {
namespace {

class InfoLog final : public rocksdb::Logger {
 public:
  InfoLog(rocksdb::Env* env, std::unique_ptr<rocksdb::FSWritableFile> file)
      : env_(env), file_(std::move(file)) {}
  ~InfoLog() override { CloseFile().PermitUncheckedError(); }

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    // The same line shape as RocksDB's logger: local time, thread id, message.
    char buffer[1024];
    struct timeval now;
    gettimeofday(&now, nullptr);
    struct tm t;
    localtime_r(&now.tv_sec, &t);
    int n = std::snprintf(buffer, sizeof(buffer), "%04d/%02d/%02d-%02d:%02d:%02d.%06ld %llu ",
                          t.tm_year + 1900, t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                          static_cast<long>(now.tv_usec),
                          static_cast<unsigned long long>(env_->GetThreadID()));
    std::string line(buffer, n > 0 ? static_cast<size_t>(n) : 0);
    va_list copy;
    va_copy(copy, ap);
    n = std::vsnprintf(buffer, sizeof(buffer), format, copy);
    va_end(copy);
    if (n >= static_cast<int>(sizeof(buffer))) {
      std::string long_message(static_cast<size_t>(n) + 1, '\0');
      std::vsnprintf(long_message.data(), long_message.size(), format, ap);
      long_message.resize(static_cast<size_t>(n));
      line += long_message;
    } else if (n > 0) {
      line.append(buffer, static_cast<size_t>(n));
    }
    if (line.back() != '\n') line.push_back('\n');
    Append(line);
  }

  void Flush() override {
    absl::MutexLock lock(&mu_);
    if (file_ != nullptr) file_->Flush(rocksdb::IOOptions(), nullptr).PermitUncheckedError();
  }

 protected:
  rocksdb::Status CloseImpl() override { return CloseFile(); }

 private:
  // One Append per line and nothing kept after an error: a later line goes to the file as if
  // the failed one had never been (a torn line at worst), and no error state outlives the call.
  void Append(const std::string& line) {
    absl::MutexLock lock(&mu_);
    if (file_ == nullptr) return;
    const rocksdb::IOOptions io;
    if (dropped_ > 0) {
      const std::string note =
          absl::StrCat("(shoal: ", dropped_, " info log lines dropped: ", first_error_, ")\n");
      if (!file_->Append(note, io, nullptr).ok()) {
        ++dropped_;
        return;
      }
      dropped_ = 0;
    }
    if (rocksdb::IOStatus s = file_->Append(line, io, nullptr); !s.ok()) {
      if (dropped_++ == 0) first_error_ = s.ToString();
    }
  }

  rocksdb::Status CloseFile() {
    absl::MutexLock lock(&mu_);
    if (file_ == nullptr) return rocksdb::Status::OK();
    rocksdb::IOStatus s = file_->Close(rocksdb::IOOptions(), nullptr);
    file_.reset();
    return s;
  }

  rocksdb::Env* const env_;
  absl::Mutex mu_;
  std::unique_ptr<rocksdb::FSWritableFile> file_ ABSL_GUARDED_BY(mu_);
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  std::string first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::shared_ptr<rocksdb::Logger> NewInfoLog(rocksdb::Env* env, const std::string& db_dir) {
  rocksdb::FileSystem* fs = env->GetFileSystem().get();
  const rocksdb::IOOptions io;
  const std::string path = db_dir + "/LOG";
  if (fs->FileExists(path, io, nullptr).ok()) {
    fs->RenameFile(path, absl::StrCat(path, ".old.", env->NowMicros()), io, nullptr)
        .PermitUncheckedError();
  }
  std::unique_ptr<rocksdb::FSWritableFile> file;
  if (!fs->NewWritableFile(path, rocksdb::FileOptions(), &file, nullptr).ok()) file.reset();
  return std::make_shared<InfoLog>(env, std::move(file));
}

}  // namespace shoal::storage

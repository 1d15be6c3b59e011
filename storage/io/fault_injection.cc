#include "storage/io/fault_injection.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "rocksdb/env.h"
#include "rocksdb/file_system.h"

namespace shoal::storage {
namespace {

absl::Status Injected(std::string_view what, const std::string& path, int err) {
  absl::Status s = ErrnoStatus(what, path, err);
  return absl::Status(s.code(), absl::StrCat(s.message(), " (injected)"));
}

rocksdb::IOStatus RocksInjected(std::string_view what, const std::string& path, int err) {
  const std::string msg = absl::StrCat(std::string(what), " ", path, " (injected)");
  if (err == ENOSPC) return rocksdb::IOStatus::NoSpace(msg, std::strerror(err));
  return rocksdb::IOStatus::IOError(msg, std::strerror(err));
}

bool Under(const std::string& path, const std::string& dir) {
  return path == dir || absl::StartsWith(path, dir + "/");
}

// A Shoal file: checks each write and sync against the rules, keeps the synced content.
class FaultFile final : public File {
 public:
  FaultFile(std::unique_ptr<File> base, FaultInjectingFileSystem* fs)
      : base_(std::move(base)), fs_(fs) {}

  absl::Status Write(uint64_t offset, std::span<const uint8_t> data) override {
    size_t torn = SIZE_MAX;
    const auto op = fs_->Begin(FaultOp::kWrite, path(), &torn);
    if (int err = op.err(); err != 0) {
      if (torn != SIZE_MAX) {
        absl::Status s = base_->Write(offset, data.first(std::min(torn, data.size())));
        if (!s.ok()) return s;
      }
      return Injected("write", path(), err);
    }
    return base_->Write(offset, data);
  }

  absl::StatusOr<size_t> Read(uint64_t offset, std::span<uint8_t> out) override {
    return base_->Read(offset, out);
  }

  absl::Status Sync() override {
    const auto op = fs_->Begin(FaultOp::kSync, path());
    if (int err = op.err(); err != 0) {
      return Injected("fdatasync", path(), err);
    }
    if (absl::Status s = base_->Sync(); !s.ok()) return s;
    absl::StatusOr<uint64_t> size = base_->Size();
    if (!size.ok()) return size.status();
    std::string content(*size, '\0');
    absl::StatusOr<size_t> n =
        base_->Read(0, {reinterpret_cast<uint8_t*>(content.data()), content.size()});
    if (!n.ok()) return n.status();
    content.resize(*n);
    fs_->RecordSynced(path(), std::move(content));
    return absl::OkStatus();
  }

  absl::StatusOr<uint64_t> Size() override { return base_->Size(); }
  const std::string& path() const override { return base_->path(); }

 private:
  const std::unique_ptr<File> base_;
  FaultInjectingFileSystem* const fs_;
};

// A RocksDB file: checks appends and syncs, tracks the synced length.
class RocksFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  RocksFile(std::unique_ptr<rocksdb::FSWritableFile> base, std::string path, uint64_t size,
            FaultInjectingFileSystem* fs)
      : FSWritableFileOwnerWrapper(std::move(base)), path_(std::move(path)), size_(size), fs_(fs) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    size_t torn = SIZE_MAX;
    const auto op = fs_->Begin(FaultOp::kWrite, path_, &torn);
    if (int err = op.err(); err != 0) {
      if (torn != SIZE_MAX) {
        const size_t n = std::min(torn, data.size());
        if (target()->Append(rocksdb::Slice(data.data(), n), options, dbg).ok()) size_ += n;
      }
      return RocksInjected("write", path_, err);
    }
    rocksdb::IOStatus s = target()->Append(data, options, dbg);
    if (s.ok()) size_ += data.size();
    return s;
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& /*info*/,
                           rocksdb::IODebugContext* dbg) override {
    return Append(data, options, dbg);
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     rocksdb::IODebugContext* dbg) override {
    const auto op = fs_->Begin(FaultOp::kWrite, path_);
    if (int err = op.err(); err != 0) {
      return RocksInjected("write", path_, err);
    }
    rocksdb::IOStatus s = target()->PositionedAppend(data, offset, options, dbg);
    if (s.ok()) size_ = std::max<uint64_t>(size_, offset + data.size());
    return s;
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     const rocksdb::DataVerificationInfo& /*info*/,
                                     rocksdb::IODebugContext* dbg) override {
    return PositionedAppend(data, offset, options, dbg);
  }
  rocksdb::IOStatus Truncate(uint64_t size, const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->Truncate(size, options, dbg);
    if (s.ok()) size_ = size;
    return s;
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    return DoSync([&] { return target()->Sync(options, dbg); });
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    return DoSync([&] { return target()->Fsync(options, dbg); });
  }

 private:
  template <typename F>
  rocksdb::IOStatus DoSync(F sync) {
    const auto op = fs_->Begin(FaultOp::kSync, path_);
    if (int err = op.err(); err != 0) {
      return RocksInjected("fsync", path_, err);
    }
    rocksdb::IOStatus s = sync();
    if (s.ok()) fs_->RecordSyncedLength(path_, size_);
    return s;
  }

  const std::string path_;
  uint64_t size_;
  FaultInjectingFileSystem* const fs_;
};

class RocksFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  explicit RocksFileSystem(FaultInjectingFileSystem* fs)
      : FileSystemWrapper(rocksdb::FileSystem::Default()), fs_(fs) {}
  const char* Name() const override { return "ShoalFaultInjection"; }

  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& opts,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override {
    const auto op = fs_->BeginPowered();
    if (int err = op.err(); err != 0) return RocksInjected("create", f, err);
    rocksdb::IOStatus s = target()->NewWritableFile(f, opts, r, dbg);
    if (!s.ok()) return s;
    fs_->RecordCreated(f, /*rocksdb=*/true);
    *r = std::make_unique<RocksFile>(std::move(*r), f, 0, fs_);
    return s;
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& opts,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->ReopenWritableFile(f, opts, r, dbg);
    if (!s.ok()) return s;
    const uint64_t size = (*r)->GetFileSize(rocksdb::IOOptions(), dbg);
    *r = std::make_unique<RocksFile>(std::move(*r), f, size, fs_);
    return s;
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& opts,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* dbg) override {
    const auto op = fs_->BeginPowered();
    if (int err = op.err(); err != 0) return RocksInjected("create", f, err);
    rocksdb::IOStatus s = target()->ReuseWritableFile(f, old, opts, r, dbg);
    if (!s.ok()) return s;
    fs_->RecordRemoved(old);
    fs_->RecordCreated(f, /*rocksdb=*/true);
    *r = std::make_unique<RocksFile>(std::move(*r), f, 0, fs_);
    return s;
  }
  rocksdb::IOStatus RenameFile(const std::string& from, const std::string& to,
                               const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override {
    const auto op = fs_->Begin(FaultOp::kRename, from);
    if (int err = op.err(); err != 0) {
      return RocksInjected("rename", from, err);
    }
    rocksdb::IOStatus s = target()->RenameFile(from, to, options, dbg);
    if (s.ok()) fs_->RecordRenamed(from, to);
    return s;
  }
  rocksdb::IOStatus DeleteFile(const std::string& f, const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->DeleteFile(f, options, dbg);
    if (s.ok()) fs_->RecordRemoved(f);
    return s;
  }

 private:
  FaultInjectingFileSystem* const fs_;
};

}  // namespace

FaultInjectingFileSystem::FaultInjectingFileSystem(FileSystem* base)
    : base_(base),
      rocksdb_env_(rocksdb::NewCompositeEnv(std::make_shared<RocksFileSystem>(this))) {}

FaultInjectingFileSystem::~FaultInjectingFileSystem() = default;

rocksdb::Env* FaultInjectingFileSystem::rocksdb_env() { return rocksdb_env_.get(); }

void FaultInjectingFileSystem::Fail(FaultOp op, std::string path_substring, int err,
                                    bool one_shot) {
  absl::MutexLock lock(&mu_);
  rules_.push_back({op, std::move(path_substring), err, one_shot, SIZE_MAX});
}

void FaultInjectingFileSystem::TearWrite(std::string path_substring, size_t prefix, bool one_shot) {
  absl::MutexLock lock(&mu_);
  rules_.push_back({FaultOp::kWrite, std::move(path_substring), EIO, one_shot, prefix});
}

void FaultInjectingFileSystem::FailAfter(uint64_t operations, std::string path_substring, int err) {
  absl::MutexLock lock(&mu_);
  fail_after_ = Countdown{std::move(path_substring), err, operations};
}

void FaultInjectingFileSystem::SetSyncDelay(std::string path_substring, absl::Duration delay) {
  SetSyncHook(std::move(path_substring), [delay] { absl::SleepFor(delay); });
}

void FaultInjectingFileSystem::SetSyncHook(std::string path_substring, std::function<void()> hook) {
  absl::MutexLock lock(&mu_);
  sync_hooks_.emplace_back(std::move(path_substring), std::move(hook));
}

void FaultInjectingFileSystem::Clear() {
  absl::MutexLock lock(&mu_);
  rules_.clear();
  sync_hooks_.clear();
  fail_after_.reset();
}

uint64_t FaultInjectingFileSystem::Count(FaultOp op, const std::string& path_substring) const {
  absl::MutexLock lock(&mu_);
  uint64_t n = 0;
  for (const auto& [path, counts] : counts_) {
    if (absl::StrContains(path, path_substring)) n += counts[static_cast<int>(op)];
  }
  return n;
}

uint64_t FaultInjectingFileSystem::injected() const {
  absl::MutexLock lock(&mu_);
  return injected_;
}

void FaultInjectingFileSystem::PowerOff() {
  absl::WriterMutexLock hold(&power_mu_);  // waits for the operations under way
  absl::MutexLock lock(&mu_);
  powered_off_ = true;
}

void FaultInjectingFileSystem::PowerOffAfter(uint64_t operations) {
  absl::MutexLock lock(&mu_);
  power_off_countdown_ = static_cast<int64_t>(operations);
}

FaultInjectingFileSystem::Operation::Operation(absl::Mutex* power_mu, int err)
    : power_mu_(power_mu), err_(err) {}

FaultInjectingFileSystem::Operation::~Operation() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  power_mu_->ReaderUnlock();
}

FaultInjectingFileSystem::Operation FaultInjectingFileSystem::Begin(
    FaultOp op, const std::string& path, size_t* torn_prefix) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  power_mu_.ReaderLock();  // released by ~Operation
  return Operation(&power_mu_, Check(op, path, torn_prefix));
}

FaultInjectingFileSystem::Operation FaultInjectingFileSystem::BeginPowered()
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  power_mu_.ReaderLock();  // released by ~Operation
  absl::MutexLock lock(&mu_);
  if (powered_off_) ++injected_;
  return Operation(&power_mu_, powered_off_ ? EIO : 0);
}

int FaultInjectingFileSystem::Check(FaultOp op, const std::string& path, size_t* torn_prefix) {
  std::vector<std::function<void()>> hooks;
  int err = 0;
  {
    absl::MutexLock lock(&mu_);
    ++counts_[path][static_cast<int>(op)];
    if (power_off_countdown_ == 0) {
      powered_off_ = true;
      power_off_countdown_ = -1;
    } else if (power_off_countdown_ > 0) {
      --power_off_countdown_;
    }
    if (powered_off_) {
      err = EIO;
    } else if (fail_after_ && absl::StrContains(path, fail_after_->path_substring) &&
               fail_after_->remaining-- == 0) {
      err = fail_after_->err;
      fail_after_.reset();
    } else {
      for (auto it = rules_.begin(); it != rules_.end(); ++it) {
        if (it->op != op || !absl::StrContains(path, it->path_substring)) continue;
        err = it->err;
        if (torn_prefix != nullptr) *torn_prefix = it->torn_prefix;
        if (it->one_shot) rules_.erase(it);
        break;
      }
    }
    if (err != 0) ++injected_;
    if (op == FaultOp::kSync && err == 0) {
      for (const auto& [sub, hook] : sync_hooks_) {
        if (absl::StrContains(path, sub)) hooks.push_back(hook);
      }
    }
  }
  for (const auto& hook : hooks) hook();
  return err;
}

void FaultInjectingFileSystem::RecordCreated(const std::string& path, bool rocksdb) {
  absl::MutexLock lock(&mu_);
  tracked_[path] = Tracked{rocksdb, false, {}, 0};
}

void FaultInjectingFileSystem::RecordSynced(const std::string& path, std::string content) {
  absl::MutexLock lock(&mu_);
  Tracked& t = tracked_[path];
  t.synced = true;
  t.content = std::move(content);
}

void FaultInjectingFileSystem::RecordSyncedLength(const std::string& path, uint64_t length) {
  absl::MutexLock lock(&mu_);
  auto it = tracked_.find(path);
  if (it == tracked_.end()) {
    it = tracked_.emplace(path, Tracked{}).first;
    it->second.rocksdb = true;
  }
  it->second.synced = true;
  it->second.length = length;
}

void FaultInjectingFileSystem::RecordRenamed(const std::string& from, const std::string& to) {
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<std::string, Tracked>> moved;
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    if (Under(it->first, to)) {
      tracked_.erase(it++);
    } else if (Under(it->first, from)) {
      moved.emplace_back(to + it->first.substr(from.size()), std::move(it->second));
      tracked_.erase(it++);
    } else {
      ++it;
    }
  }
  for (auto& [path, t] : moved) tracked_[path] = std::move(t);
}

void FaultInjectingFileSystem::RecordRemoved(const std::string& path) {
  absl::MutexLock lock(&mu_);
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    if (Under(it->first, path)) {
      tracked_.erase(it++);
    } else {
      ++it;
    }
  }
}

absl::Status FaultInjectingFileSystem::DropUnsyncedData(bool power_back_on) {
  absl::flat_hash_map<std::string, Tracked> tracked;
  {
    absl::MutexLock lock(&mu_);
    tracked.swap(tracked_);
  }
  for (auto& [path, t] : tracked) {
    if (!t.synced) {
      if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus("unlink", path, errno);
    } else if (t.rocksdb) {
      if (::truncate(path.c_str(), static_cast<off_t>(t.length)) != 0 && errno != ENOENT) {
        return ErrnoStatus("truncate", path, errno);
      }
    } else if (absl::Status s = WriteFileSynced(*base_, path, t.content); !s.ok()) {
      return s;
    }
  }
  if (!power_back_on) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  powered_off_ = false;
  power_off_countdown_ = -1;
  return absl::OkStatus();
}

// ---- FileSystem ----

absl::StatusOr<std::unique_ptr<File>> FaultInjectingFileSystem::Open(const std::string& path,
                                                                     OpenMode mode) {
  if (mode == OpenMode::kCreate) {  // it truncates: a change to the disk, under the power
    const Operation op = BeginPowered();
    if (op.err() != 0) return Injected("create", path, op.err());
    absl::StatusOr<std::unique_ptr<File>> f = base_->Open(path, mode);
    if (!f.ok()) return f.status();
    RecordCreated(path, /*rocksdb=*/false);
    return std::unique_ptr<File>(new FaultFile(*std::move(f), this));
  }
  absl::StatusOr<std::unique_ptr<File>> f = base_->Open(path, mode);
  if (!f.ok()) return f.status();
  if (mode == OpenMode::kExisting) {
    absl::MutexLock lock(&mu_);
    if (!tracked_.contains(path)) {
      // Existing content counts as synced: what a power loss would leave of it is unknown here.
      absl::StatusOr<uint64_t> size = (*f)->Size();
      std::string content(size.ok() ? *size : 0, '\0');
      absl::StatusOr<size_t> n =
          (*f)->Read(0, {reinterpret_cast<uint8_t*>(content.data()), content.size()});
      content.resize(n.ok() ? *n : 0);
      tracked_[path] = Tracked{false, true, std::move(content), 0};
    }
  }
  return std::unique_ptr<File>(new FaultFile(*std::move(f), this));
}

absl::Status FaultInjectingFileSystem::Rename(const std::string& from, const std::string& to) {
  const Operation op = Begin(FaultOp::kRename, from);
  if (int err = op.err(); err != 0) {
    return Injected(absl::StrCat("rename to ", to, ":"), from, err);
  }
  if (absl::Status s = base_->Rename(from, to); !s.ok()) return s;
  RecordRenamed(from, to);
  return absl::OkStatus();
}

absl::Status FaultInjectingFileSystem::Unlink(const std::string& path) {
  const Operation op = BeginPowered();
  if (op.err() != 0) return Injected("unlink", path, op.err());
  if (absl::Status s = base_->Unlink(path); !s.ok()) return s;
  RecordRemoved(path);
  return absl::OkStatus();
}

absl::Status FaultInjectingFileSystem::RemoveAll(const std::string& path) {
  const Operation op = BeginPowered();
  if (op.err() != 0) return Injected("remove", path, op.err());
  if (absl::Status s = base_->RemoveAll(path); !s.ok()) return s;
  RecordRemoved(path);
  return absl::OkStatus();
}

absl::Status FaultInjectingFileSystem::CreateDirs(const std::string& path) {
  const Operation op = BeginPowered();
  if (op.err() != 0) return Injected("mkdir", path, op.err());
  return base_->CreateDirs(path);
}

absl::Status FaultInjectingFileSystem::SyncDir(const std::string& path) {
  const Operation op = Begin(FaultOp::kSync, path);
  if (int err = op.err(); err != 0) {
    return Injected("fsync directory", path, err);
  }
  return base_->SyncDir(path);
}

absl::StatusOr<std::vector<std::string>> FaultInjectingFileSystem::ListDir(
    const std::string& path) {
  return base_->ListDir(path);
}

absl::StatusOr<FileStat> FaultInjectingFileSystem::Stat(const std::string& path) {
  return base_->Stat(path);
}

}  // namespace shoal::storage

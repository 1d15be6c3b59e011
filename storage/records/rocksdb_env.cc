#include "storage/records/rocksdb_env.h"

#include "rocksdb/env.h"
#include "rocksdb/file_system.h"
#include "rocksdb/listener.h"

namespace shoal::storage {
namespace {

// NoSpace is turned into a plain (retryable) I/O error too: RocksDB 7.8 clears a NoSpace WAL
// error without replacing the failed WAL writer, and the next write then trips an assertion.
// The message keeps "No space left on device", which FromRocks maps to ResourceExhausted.
rocksdb::IOStatus Recoverable(rocksdb::IOStatus s) {
  if (!s.IsIOError() || s.GetDataLoss()) return s;
  rocksdb::IOStatus out = s.IsNoSpace() ? rocksdb::IOStatus::IOError(s.ToString()) : s;
  out.SetRetryable(true);
  return out;
}

class RecoverableFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  using FSWritableFileOwnerWrapper::FSWritableFileOwnerWrapper;

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* dbg) override {
    return Recoverable(target()->Append(data, o, dbg));
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    return Recoverable(target()->Append(data, o, info, dbg));
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& o,
                                     rocksdb::IODebugContext* dbg) override {
    return Recoverable(target()->PositionedAppend(data, offset, o, dbg));
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& o,
                                     const rocksdb::DataVerificationInfo& info,
                                     rocksdb::IODebugContext* dbg) override {
    return Recoverable(target()->PositionedAppend(data, offset, o, info, dbg));
  }
  rocksdb::IOStatus Flush(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    return Recoverable(target()->Flush(o, dbg));
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    return Recoverable(target()->Sync(o, dbg));
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    return Recoverable(target()->Fsync(o, dbg));
  }
  rocksdb::IOStatus Close(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    return Recoverable(target()->Close(o, dbg));
  }
};

class RecoverableFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  using FileSystemWrapper::FileSystemWrapper;
  const char* Name() const override { return "ShoalRecoverable"; }

  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override {
    return Wrap(target()->NewWritableFile(f, o, r, dbg), r);
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* dbg) override {
    return Wrap(target()->ReopenWritableFile(f, o, r, dbg), r);
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* dbg) override {
    return Wrap(target()->ReuseWritableFile(f, old, o, r, dbg), r);
  }

 private:
  static rocksdb::IOStatus Wrap(rocksdb::IOStatus s, std::unique_ptr<rocksdb::FSWritableFile>* r) {
    if (s.ok()) *r = std::make_unique<RecoverableFile>(std::move(*r));
    return Recoverable(std::move(s));
  }
};

class ManualRecoveryListener final : public rocksdb::EventListener {
 public:
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason /*reason*/, rocksdb::Status /*error*/,
                            bool* auto_recovery) override {
    *auto_recovery = false;
  }
};

}  // namespace

std::unique_ptr<rocksdb::Env> NewRecoverableEnv(rocksdb::Env* base) {
  return rocksdb::NewCompositeEnv(std::make_shared<RecoverableFileSystem>(base->GetFileSystem()));
}

std::shared_ptr<rocksdb::EventListener> NewManualRecoveryListener() {
  return std::make_shared<ManualRecoveryListener>();
}

}  // namespace shoal::storage

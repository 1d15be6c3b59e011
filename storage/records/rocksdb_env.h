// How Shoal runs RocksDB's files so that a failed WAL write or fsync does not end all writes
// until a restart.
//
// RocksDB treats an I/O error on a WAL write or sync as fatal (writes stop for good) unless the
// error is marked retryable; then it is a "hard" error that DB::Resume() clears by flushing the
// memtables to new SSTs and starting a fresh WAL, after which nothing depends on the WAL that
// failed. NewRecoverableEnv wraps an Env so that I/O errors of writable files (other than
// NoSpace, which RocksDB already treats as recoverable) are marked retryable.
// NewManualRecoveryListener turns RocksDB's own background recovery off, so that recovery
// happens only when RecordStore calls Resume() before the next write (deterministic, and the
// caller learns at once whether writes work again).
//
//   std::unique_ptr<rocksdb::Env> env = NewRecoverableEnv(rocksdb::Env::Default());
//   options.env = env.get();                       // env must outlive the DB
//   options.listeners.push_back(NewManualRecoveryListener());
//
// Thread-safe.
#ifndef SHOAL_STORAGE_RECORDS_ROCKSDB_ENV_H_
#define SHOAL_STORAGE_RECORDS_ROCKSDB_ENV_H_

#include <memory>

namespace rocksdb {
class Env;
class EventListener;
}  // namespace rocksdb

namespace shoal::storage {

std::unique_ptr<rocksdb::Env> NewRecoverableEnv(rocksdb::Env* base);
std::shared_ptr<rocksdb::EventListener> NewManualRecoveryListener();

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_RECORDS_ROCKSDB_ENV_H_

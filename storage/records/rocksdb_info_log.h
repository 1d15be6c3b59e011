// RocksDB's info log (DIR/rocksdb/LOG: options, flushes, compactions, background errors) as a
// logger that a failed write cannot bring down.
//
// RocksDB's own file logger writes through a WritableFileWriter; once one write fails (a full
// disk), the next line logged trips an assertion in the writer (kept in Debian's build) and the
// process aborts — the disk-full abort of issue 20. This logger appends each line with one
// FSWritableFile::Append and drops the lines it cannot write; once writing works again it first
// notes how many it dropped. Diagnostics are worth less than the server that produces them.
//
//   std::unique_ptr<rocksdb::Env> env = NewRecoverableEnv(rocksdb::Env::Default());
//   options.env = env.get();
//   options.info_log = NewInfoLog(env.get(), dir);  // before rocksdb::DB::Open
//
// The file is opened through `env`'s FileSystem, so the fault-injecting Env of the tests
// (fault_injection.h) sees its writes ("LOG" in the path). A LOG left by an earlier run is
// renamed to LOG.old.<microseconds>, as RocksDB does (RocksDB deletes the oldest beyond
// keep_log_file_num). Never fails: if the file cannot be created (`db_dir` does not exist yet:
// create it first) every line is dropped.
// Thread-safe (RocksDB logs from any thread).
#ifndef SHOAL_STORAGE_RECORDS_ROCKSDB_INFO_LOG_H_
#define SHOAL_STORAGE_RECORDS_ROCKSDB_INFO_LOG_H_

#include <memory>
#include <string>

namespace rocksdb {
class Env;
class Logger;
}  // namespace rocksdb

namespace shoal::storage {

// `env` (not owned) must outlive the logger; `db_dir` is RocksDB's directory.
std::shared_ptr<rocksdb::Logger> NewInfoLog(rocksdb::Env* env, const std::string& db_dir);

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_RECORDS_ROCKSDB_INFO_LOG_H_

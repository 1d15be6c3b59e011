// Options of Shoal's embedded API. Plain structs; copy freely.
#ifndef SHOAL_OPTIONS_H_
#define SHOAL_OPTIONS_H_

#include <cstddef>
#include <cstdint>

namespace shoal {

struct Options {
  bool create_if_missing = true;
  bool error_if_exists = false;
  // Threads used to answer a batch of queries (0 = hardware concurrency).
  uint32_t search_threads = 0;
  // Limits: exceeding them gives ResourceExhausted (batch) or InvalidArgument (k).
  size_t max_batch_records = 100000;
  size_t max_batch_queries = 100000;
  uint32_t max_k = 10000;
  // RocksDB block cache for metadata and vectors, in bytes.
  size_t block_cache_bytes = 256u << 20;
};

struct WriteOptions {
  // true: the write is fsync'ed to the WAL before it is acknowledged and survives a machine
  // crash. false: it survives a process crash (it is in the OS page cache) but may be lost
  // if the machine loses power.
  bool sync = false;
};

}  // namespace shoal

#endif  // SHOAL_OPTIONS_H_

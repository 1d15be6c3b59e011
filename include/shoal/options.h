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
  // Threads used by BuildIndex (0 = hardware concurrency).
  uint32_t build_threads = 0;
  // Limits: exceeding them gives ResourceExhausted (batch) or InvalidArgument (k).
  size_t max_batch_records = 100000;
  size_t max_batch_queries = 100000;
  uint32_t max_k = 10000;
  // RocksDB block cache for metadata and vectors, in bytes.
  size_t block_cache_bytes = 256u << 20;

  // ---- SSD-resident index ----
  // How posting lists and vectors are read: io_uring with O_DIRECT (kAuto falls back to pread
  // where io_uring is unavailable) or plain pread. Both give identical results.
  enum class Io { kAuto, kIoUring, kPread };
  Io io = Io::kAuto;
  // Bytes of decoded posting lists kept in RAM (part of the index RAM).
  size_t posting_cache_bytes = 256u << 20;
  // Upper bound on the RAM an index holds (centroids + navigator + caches); 0 = no bound.
  // BuildIndex fails with ResourceExhausted when the centroids alone would not fit, and the
  // posting cache shrinks to what is left.
  size_t index_ram_bytes_limit = 0;
};

struct WriteOptions {
  // true: the write is fsync'ed to the WAL before it is acknowledged and survives a machine
  // crash. false: it survives a process crash (it is in the OS page cache) but may be lost
  // if the machine loses power.
  bool sync = false;
};

}  // namespace shoal

#endif  // SHOAL_OPTIONS_H_

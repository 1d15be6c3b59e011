// Options of Shoal's embedded API. Plain structs; copy freely.
#ifndef SHOAL_OPTIONS_H_
#define SHOAL_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "shoal/types.h"

namespace shoal {

struct Options {
  bool create_if_missing = true;
  bool error_if_exists = false;
  // Open fails with DataLoss when a record of RocksDB's WAL is damaged (replaying past it would
  // drop acknowledged writes silently); a torn last record, never acknowledged, is tolerated.
  // true: copy the WAL to DIR/rocksdb.quarantine/<unix time>/ first, then keep every write before
  // the damage and drop the rest (`shoal offline --data DIR salvage-wal`).
  bool salvage_damaged_wal = false;
  // Threads used to answer a batch of queries (0 = hardware concurrency).
  uint32_t search_threads = 0;
  // Multi-tenancy (shoal/tenants.h): the most of one tenant's vector ids a node of its sub-tree
  // of the index's centroid tree keeps as a shortlist before it splits among the node's
  // children (Curator's cap). Smaller: finer sub-trees, more RAM per tenant.
  uint32_t tenant_shortlist_cap = 128;
  // Threads used by BuildIndex (0 = hardware concurrency). Nonzero also bounds how many cache
  // index builds run at once in the process (shared by every open DB: the last opened sets it).
  uint32_t build_threads = 0;
  // Limits: exceeding them gives ResourceExhausted (batch) or InvalidArgument (k).
  size_t max_batch_records = 100000;
  size_t max_batch_queries = 100000;
  uint32_t max_k = 10000;
  // Queries x k of one search request, checked before any work (ResourceExhausted): bounds the
  // memory one request can make the server allocate for its answer.
  size_t max_search_results = 1000000;
  // RocksDB block cache for metadata and vectors, in bytes.
  size_t block_cache_bytes = 256u << 20;

  // ---- SSD-resident index ----
  // How posting lists and vectors are read: io_uring with O_DIRECT (kAuto falls back to pread
  // where io_uring is unavailable) or plain pread. Both give identical results.
  enum class Io { kAuto, kIoUring, kPread };
  Io io = Io::kAuto;
  // Bytes of decoded posting lists and full vectors kept in RAM (part of the index RAM; filled
  // only as searches read them). By default (kAutoPostingCache) room for every indexed vector
  // and a quarter more, at least 256 MiB and at most a quarter of the machine's memory (or of its
  // container's limit), or under index_ram_bytes_limit whatever the limit leaves beside the
  // index's fixed part; a value set here caps the caches either way.
  static constexpr size_t kAutoPostingCache = SIZE_MAX;
  size_t posting_cache_bytes = kAutoPostingCache;
  // Upper bound on the RAM an index holds (centroids + navigator + caches); 0 = no bound.
  // BuildIndex fails with ResourceExhausted when the centroids alone would not fit; the caches
  // take what is left.
  size_t index_ram_bytes_limit = 0;

  // ---- Online index updates (SSD index) ----
  // Writes after a build are acknowledged once in RocksDB and are searchable at once from a
  // small exact buffer; background maintenance moves them into the posting lists (RNG replica
  // choice, copy-on-write rewrites), splits postings over their cap, merges nearly empty ones
  // and garbage-collects deleted vectors. At most this many collections run maintenance at
  // once (one thread each); 0 = no online updates: writes stay in the exact buffer until the
  // next BuildIndex.
  uint32_t index_update_threads = 1;
  // Vectors moved from the buffer into the postings per step (a backlog goes in bigger steps,
  // up to half of it or 16384).
  uint32_t index_update_batch = 1024;
  // Writers wait (up to 10 s, then Unavailable, nothing written) while the buffer holds more
  // vectors than this.
  size_t index_update_backlog = 100000;
  // Merge a posting with fewer live entries than this (0 = a tenth of the posting cap).
  uint32_t posting_merge_floor = 0;
  // fdatasync posting and vector pages before each directory change, and sync the change
  // (false: faster; the index still survives a process crash, but not a machine crash).
  bool index_update_sync = true;
  // vectors.dat keeps a slot for every vector ever indexed (ids are never reused); once fewer
  // than this fraction of its slots hold vectors still needed (live records and not yet swept
  // tombstones) and it is at least 64 KiB, maintenance rewrites it with the live ones only.
  // In [0, 1]; 0 = never.
  double index_update_compact_live_fraction = 0.5;
  // Writes (Upsert, Delete) run their calling thread under Linux's SCHED_BATCH for their
  // duration, when it runs SCHED_OTHER (restored after): the thread keeps its CPU share, but its
  // wake-ups inside the write (fsync completions, lock hand-offs) do not preempt a running
  // search. Measured (shoal_bench updates, 2 vCPUs, a writer at full speed): search p99 while
  // writing 0.21-0.56 -> 0.14-0.19 ms; acknowledged inserts 110-135k -> 118-133k/s (the
  // maintenance thread yields after each unit of work, so a waking writer does not wait for
  // it). false: writes keep the caller's scheduling.
  bool batch_scheduled_writes = true;
};

struct WriteOptions {
  // true: the write is fsync'ed to the WAL before it is acknowledged and survives a machine
  // crash, and so does every write acknowledged before it began (the WAL is one sequence) —
  // also when the call changes nothing (deleting absent keys still syncs). false: it survives
  // a process crash (it is in the OS page cache) but may be lost if the machine loses power.
  bool sync = false;
  // Multi-tenancy (shoal/tenants.h). Upsert: the tenant that owns the records (it must exist;
  // its quotas apply); "" = no owner (visible to calls that name no tenant only). Delete: with a
  // tenant, only keys it owns may be deleted (a key it sees but does not own is
  // PermissionDenied; one it cannot see counts as absent); a delete removes the vector for
  // every tenant it was granted to. Grant / Revoke ignore it.
  std::string tenant;
  // Upsert only. true: the caller ran shoal::CheckRecords (shoal/record_checks.h) on exactly
  // these records with this collection's spec, and Upsert does not repeat those checks (it
  // still checks the batch size). For a writer that checks every batch before handing it on
  // and applies it later, e.g. cluster mode's shard replicas, which apply a log whose writer
  // checked each entry. A batch that would fail the checks is then undefined behaviour (a
  // NaN or wrong-length vector corrupts the index): leave it false for anything else.
  bool records_checked = false;
};

// Options of reads (DB::Get).
struct ReadOptions {
  // "" = every record; otherwise only records the tenant owns or was granted (others read as
  // absent, exactly like keys that do not exist).
  std::string tenant;
  ReadConsistency consistency;  // cluster mode only (shoal/types.h)
};

}  // namespace shoal

#endif  // SHOAL_OPTIONS_H_

// The cost of a grant's durable write alone: a RocksDB of its own (a temporary directory, the
// options RecordStore opens with that matter here: WAL on, no sync) written the rows a Grant or
// Revoke writes (one key, or a batch), so that `shoal_bench tenants` can print Shoal's grant
// next to the bare write it cannot avoid, timed interleaved with it on the same (noisy) machine.
//
//   SHOAL_ASSIGN_OR_RETURN(auto bare, BareRocksWrite::Open(/*prefill=*/0));
//   double us = bare->TimeBatch(/*put=*/true, tenant, rows);   // a batched Grant's rows
//   double one = bare->Time(/*put=*/true, /*marker=*/false, tenant, row);
//
// Thread safety: none; one thread.
#ifndef SHOAL_BENCH_BARE_ROCKSDB_WRITE_H_
#define SHOAL_BENCH_BARE_ROCKSDB_WRITE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace rocksdb {
class DB;
}

namespace shoal::bench {

class BareRocksWrite {
 public:
  // Opens a fresh store under $TMPDIR (or /tmp) and puts `prefill` grant-shaped rows first (the
  // bench's catalog memtable holds every membership row when it times single grants).
  static absl::StatusOr<std::unique_ptr<BareRocksWrite>> Open(size_t prefill);
  ~BareRocksWrite();

  // Microseconds of one WriteBatch holding the 24-byte grant row of (tenant, row) -- a put (the
  // grant) or a delete (the revoke) -- and, with `marker`, the 15-byte marker row every
  // RecordStore batch carried before.
  double Time(bool put, bool marker, uint32_t tenant, uint64_t row);
  // CPU microseconds of the calling thread for one WriteBatch holding the grant rows of
  // (tenant, each of `rows`): puts or deletes.
  double TimeBatch(bool put, uint32_t tenant, std::span<const uint32_t> rows);

 private:
  BareRocksWrite() = default;
  std::string dir_;
  rocksdb::DB* db_ = nullptr;
};

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_BARE_ROCKSDB_WRITE_H_

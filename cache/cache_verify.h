// VerifyCacheRows: checks every semantic-cache row of a RecordStore (DB::Verify and the
// offline `shoal offline verify` call it): each cache's spec, policies, entries (they decode
// as entries of the cache's dimension, with a finite vector), metadata rows (they decode, and
// each belongs to an existing entry) and next-id row (above every entry id). Reads only.
//
//   cache::CacheVerifyCounts counts;
//   SHOAL_RETURN_IF_ERROR(cache::VerifyCacheRows(store, &problems, &counts));
//
// Problems go to *problems, one line each naming the cache and row; the returned status is
// only for I/O errors that stopped the scan. Thread-safe (reads a consistent-enough view:
// rows written meanwhile may or may not be seen).
#ifndef SHOAL_CACHE_CACHE_VERIFY_H_
#define SHOAL_CACHE_CACHE_VERIFY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "storage/records/record_store.h"

namespace shoal::cache {

struct CacheVerifyCounts {
  uint64_t caches = 0;
  uint64_t entries = 0;  // entry rows that decoded
};

absl::Status VerifyCacheRows(storage::RecordStore* store, std::vector<std::string>* problems,
                             CacheVerifyCounts* counts);

}  // namespace shoal::cache

#endif  // SHOAL_CACHE_CACHE_VERIFY_H_

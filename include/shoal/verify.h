// Offline consistency check of a Shoal database directory (no server, no DB::Open needed):
// every record decodes and has its collection's dimension with finite values, the key map and
// the records agree, and every page of each built index (posting lists, the vectors it holds,
// the centroid tree) passes its checksum.
//
//   SHOAL_ASSIGN_OR_RETURN(shoal::VerifyReport report, shoal::VerifyDatabase("/data/shoal"));
//   if (!report.problems.empty()) ...   // one line per problem, naming collection and record
//
// The directory must not be open in another process (Unavailable: it is locked). Problems in
// the data are reported in the VerifyReport, not as an error status; errors are only for a
// directory that cannot be read at all (NotFound, Unavailable, Internal).
// New durable structures add their checks to db/verify.cc (the one place verification lives).
#ifndef SHOAL_VERIFY_H_
#define SHOAL_VERIFY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shoal/types.h"

namespace shoal {

struct VerifyReport {
  struct CollectionReport {
    CollectionSpec spec;
    uint64_t records = 0;  // records that decoded
    uint64_t keys = 0;     // key-map rows
    std::string index = "flat";
    uint64_t index_postings = 0;  // posting lists read and checked
    uint64_t index_vectors = 0;   // vectors read back from the index's vector file
    uint64_t index_bytes = 0;     // bytes of index files checked
  };
  std::vector<CollectionReport> collections;
  // Human-readable, one per problem (at most kMaxProblems; the rest are counted).
  std::vector<std::string> problems;
  uint64_t problems_not_listed = 0;
  static constexpr size_t kMaxProblems = 100;
  bool ok() const { return problems.empty(); }
};

absl::StatusOr<VerifyReport> VerifyDatabase(const std::string& path);

}  // namespace shoal

#endif  // SHOAL_VERIFY_H_

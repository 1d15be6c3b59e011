// Consistency check of a Shoal database, two ways over one set of checks (db/verify.cc):
//  - offline, on a directory no process has open (no DB::Open needed):
//      SHOAL_ASSIGN_OR_RETURN(shoal::VerifyReport report, shoal::VerifyDatabase("/data/shoal"));
//      if (!report.problems.empty()) ...   // one line per problem, naming collection and record
//  - online, on an open DB (also checks the in-memory state that answers queries):
//      shoal::VerifyReport report;
//      absl::Status s = db->Verify("", &report);   // "" = every collection; DataLoss if broken
//
// Checked per collection, against what is durable:
//  - every record decodes and has its collection's dimension with finite values, below the id
//    counter; the key map and the records agree both ways;
//  - a built index: manifest decodes, centroid tree (checksummed) and quantizer open, one posting
//    row per posting, every page of every posting extent passes its checksum and owner checks,
//    each posting holds as many entries as its row says, of ids the index covered at build time;
//  - every live vector is reachable: the index holds it (in a posting, and vectors.dat holds the
//    same vector, checksummed) unless it was written after the build or rewritten (stale mark);
//  - no deleted record or old vector can be returned: every id a posting holds is a live record
//    or marked stale.
// Online, also: the in-memory key maps equal the records, the exact delta (FlatIndex) holds
// exactly the live vectors the index does not, the in-memory stale marks and index generation
// equal the stored ones.
//
// Offline: the directory must not be open in another process (Unavailable: it is locked), and
// nothing in it is written or deleted. A damaged RocksDB WAL or MANIFEST is DataLoss.
// Problems in the data are reported in the VerifyReport, not as an error status; errors are only
// for a directory that cannot be read at all (NotFound, Unavailable, Internal).
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
    uint64_t index_postings = 0;       // posting lists read and checked
    uint64_t index_vectors = 0;        // vectors read back from the index's vector file
    uint64_t index_bytes = 0;          // bytes of index files checked
    uint64_t vectors_in_postings = 0;  // live vectors the index holds (reachable by search)
    uint64_t vectors_in_delta = 0;     // live vectors written after the build or rewritten
    uint64_t stale_marks = 0;          // index copies marked out of date (rewritten / deleted)
  };
  std::vector<CollectionReport> collections;
  // Semantic caches' rows (checked when every collection is: DB::Verify("") and offline).
  uint64_t caches = 0;
  uint64_t cache_entries = 0;  // entry rows that decoded
  // Human-readable, one per problem (at most kMaxProblems; the rest are counted).
  std::vector<std::string> problems;
  uint64_t problems_not_listed = 0;
  // Not problems: what the reader should know (offline, e.g. a restore the next start finishes).
  std::vector<std::string> notes;
  static constexpr size_t kMaxProblems = 100;
  bool ok() const { return problems.empty(); }
};

// Offline, like VerifyDatabase, and like it never writes into `path`: the collections of a
// directory no process has open: spec, num_vectors (key-map rows) and index ("flat" or the
// index's spec); the fields that need a loaded index (RAM, unindexed vectors) stay 0.
absl::StatusOr<std::vector<CollectionInfo>> DescribeDatabase(const std::string& path);

absl::StatusOr<VerifyReport> VerifyDatabase(const std::string& path);

}  // namespace shoal

#endif  // SHOAL_VERIFY_H_

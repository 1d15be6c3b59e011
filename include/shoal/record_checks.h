// The checks DB::Upsert makes of a batch before writing anything, callable without a DB: for
// a writer that must refuse a bad batch before handing it on, e.g. cluster mode, which
// acknowledges a write once its shard's log has it and before any replica's DB sees it.
//
//   SHOAL_RETURN_IF_ERROR(shoal::CheckRecords(spec, records, shoal::Options{}));
//
// Errors: exactly Upsert's (INVALID_ARGUMENT naming the field, e.g. "records[3].vector[17]";
// RESOURCE_EXHAUSTED over options.max_batch_records). Reads nothing; thread-safe.
#ifndef SHOAL_RECORD_CHECKS_H_
#define SHOAL_RECORD_CHECKS_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "shoal/options.h"
#include "shoal/types.h"

namespace shoal {

absl::Status CheckRecords(const CollectionSpec& spec, std::span<const Record> records,
                          const Options& options);

// The bytes a record counts against its owner's max_bytes quota (shoal/tenants.h): its vector,
// its key (8 for an id), each attribute's name and value (8 for a value that is not a
// string) and its tags. What DB::Upsert counts; a cluster that enforces quotas over several
// DBs counts the same.
uint64_t RecordQuotaBytes(const Record& record);

}  // namespace shoal

#endif  // SHOAL_RECORD_CHECKS_H_

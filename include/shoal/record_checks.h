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

#include <span>

#include "absl/status/status.h"
#include "shoal/options.h"
#include "shoal/types.h"

namespace shoal {

absl::Status CheckRecords(const CollectionSpec& spec, std::span<const Record> records,
                          const Options& options);

}  // namespace shoal

#endif  // SHOAL_RECORD_CHECKS_H_

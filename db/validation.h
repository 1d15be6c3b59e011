// Request validation for the embedded API. Every error is InvalidArgument (or
// ResourceExhausted for a batch over the configured limit) and names the offending field,
// e.g. "records[3].vector[17]: NaN". Pure functions; thread-safe.
#ifndef SHOAL_DB_VALIDATION_H_
#define SHOAL_DB_VALIDATION_H_

#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "shoal/filter.h"
#include "shoal/options.h"
#include "shoal/tenants.h"
#include "shoal/types.h"

namespace shoal::db {

// Names: [A-Za-z_][A-Za-z0-9_-]{0,63}.
absl::Status ValidateCollectionName(std::string_view name, const std::string& field);
// A collection name, or cluster mode's local shard copy of one: "<name>@<shard>" (1..4 digits).
absl::Status ValidateCollectionOrShardName(std::string_view name, const std::string& field);
absl::Status ValidateSpec(const CollectionSpec& spec);
absl::Status ValidateKey(const Key& key, const std::string& field);
absl::Status ValidateRecords(const CollectionSpec& spec, std::span<const Record> records,
                             const Options& options);
// Only ValidateRecords' batch size rule ("records": empty, or over options.max_batch_records):
// what an Upsert with WriteOptions::records_checked still checks.
absl::Status ValidateRecordCount(size_t n, const Options& options);
// One vector's dimension and values (finite; squared norm at most 1e28; under cosine, a norm
// that can be normalised): the rules of shoal/types.h's Metric. Verify applies it to stored
// records.
absl::Status ValidateVector(const CollectionSpec& spec, std::span<const float> vector,
                            const std::string& field);
absl::Status ValidateKeys(std::span<const Key> keys, const Options& options);
// A key as error messages show it: 42 or "doc-7" (long strings cut at 64 bytes).
std::string KeyDebugString(const Key& key);
// Tenant quotas: finite, non-negative searches per second (errors name "quotas.<field>").
absl::Status ValidateTenantQuotas(const TenantQuotas& quotas);
// Shape and values of a filter tree (see shoal/filter.h); errors name the node by its path from
// `field`, e.g. "filter.and[1].range.lo: NaN". Unknown attribute names and tags are valid.
absl::Status ValidateFilter(const Filter& filter, const std::string& field = "filter");
// Also validates params.filter when set.
absl::Status ValidateSearch(const CollectionSpec& spec, std::span<const float> queries,
                            const SearchParams& params, const Options& options);

}  // namespace shoal::db

#endif  // SHOAL_DB_VALIDATION_H_

// Pieces shared by the command handlers (commands*.cc): argument checks and proto <-> text
// conversions. Internal to cli/.
#ifndef SHOAL_CLI_COMMANDS_INTERNAL_H_
#define SHOAL_CLI_COMMANDS_INTERNAL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/args.h"
#include "cli/connection.h"
#include "cli/output.h"
#include "shoal/v1/types.pb.h"

namespace shoal::cli {

// The message of the InvalidArgument that RunCommand replaces with the command's usage.
inline constexpr char kUsageError[] = "usage";

// InvalidArgument(kUsageError) unless min <= positional.size() <= max (command name included).
absl::Status ExpectPositional(const Args& args, size_t min, size_t max);

// "l2" / "ip" / "inner_product" / "cosine" (also "euclidean", "angular").
absl::StatusOr<::shoal::v1::Metric> ParseMetric(const std::string& name);
std::string MetricText(::shoal::v1::Metric metric);

// A number is a numeric key, anything else a string key.
::shoal::v1::Key ParseKey(const std::string& text);
Cell KeyCell(const ::shoal::v1::Key& key);

// "1,2,3" -> floats; InvalidArgument naming `field` and the bad element.
absl::Status ParseFloats(const std::string& text, const std::string& field,
                         google::protobuf::RepeatedField<float>* out);

// "name=value": an int, then a double, then true/false, else a string.
absl::StatusOr<std::pair<std::string, ::shoal::v1::AttributeValue>> ParseAttribute(
    const std::string& text);
// The value typed as JSON types it (int, double, bool, string); null when unset.
Cell AttributeCell(const ::shoal::v1::AttributeValue& value);

// `search --filter`: comma-separated terms, all of which must hold; a leading '!' negates one.
//   NAME=VALUE (typed as ParseAttribute)   NAME>=NUMBER   NAME<=NUMBER   tag:TAG
// e.g. "lang=en,year>=2020,!tag:draft". InvalidArgument naming the term.
absl::StatusOr<::shoal::v1::Filter> ParseFilter(const std::string& text);

// The columns every collection listing shares (`detailed`: also index RAM, unindexed vectors,
// vector bytes), and one row of it.
Table CollectionTable(bool detailed = false);
void AddCollectionRow(const ::shoal::v1::CollectionInfo& info, Table* table);

// Record and search handlers (commands_records.cc).
absl::StatusOr<Table> Upsert(const Connection& c, const Args& args);
absl::StatusOr<Table> Get(const Connection& c, const Args& args);
absl::StatusOr<Table> Delete(const Connection& c, const Args& args);
absl::StatusOr<Table> Search(const Connection& c, const Args& args);
// Records by filter (commands_scan.cc). DeleteMatching is `delete NAME --filter|--all`.
absl::StatusOr<Table> Count(const Connection& c, const Args& args);
absl::StatusOr<Table> Scroll(const Connection& c, const Args& args);
absl::StatusOr<Table> DeleteMatching(const Connection& c, const Args& args);

// Alias and admin handlers (commands_admin.cc).
absl::StatusOr<Table> Aliases(const Connection& c, const Args& args);
absl::StatusOr<Table> AliasCreate(const Connection& c, const Args& args);
absl::StatusOr<Table> AliasAlter(const Connection& c, const Args& args);
absl::StatusOr<Table> AliasDrop(const Connection& c, const Args& args);
absl::StatusOr<Table> BuildIndex(const Connection& c, const Args& args);
absl::StatusOr<Table> Compact(const Connection& c, const Args& args);
absl::StatusOr<Table> Snapshot(const Connection& c, const Args& args);
absl::StatusOr<Table> Snapshots(const Connection& c, const Args& args);
absl::StatusOr<Table> Restore(const Connection& c, const Args& args);
absl::StatusOr<Table> Stats(const Connection& c, const Args& args);
absl::StatusOr<Table> Cluster(const Connection& c, const Args& args);  // commands_cluster.cc

// `cache SUBCOMMAND ...` (commands_cache.cc).
absl::StatusOr<Table> Cache(const Connection& c, const Args& args);
// `tenant OP ...` (commands_tenants.cc).
absl::StatusOr<Table> Tenant(const Connection& c, const Args& args);

}  // namespace shoal::cli

#endif  // SHOAL_CLI_COMMANDS_INTERNAL_H_

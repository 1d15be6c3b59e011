// Conversions between the wire messages (shoal.v1) and the embedded API's value types.
//
//   SHOAL_ASSIGN_OR_RETURN(shoal::Record record,
//                          RecordFromProto(request.records(i), absl::StrCat("records[", i, "]")));
//
// *FromProto functions check the message's shape only (oneofs set, enums known) and name the
// offending field, prefixed with `field`, in INVALID_ARGUMENT errors; value rules that need the
// collection (dimension, NaN, key length, name syntax) are the DB's to check.
// *ToProto functions cannot fail. All functions are stateless and thread-safe.
#ifndef SHOAL_RPC_CONVERT_H_
#define SHOAL_RPC_CONVERT_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/filter.h"
#include "shoal/tenants.h"
#include "shoal/types.h"
#include "shoal/v1/tenant_service.pb.h"
#include "shoal/v1/types.pb.h"

namespace shoal::rpc {

absl::StatusOr<Key> KeyFromProto(const v1::Key& proto, absl::string_view field);
void KeyToProto(const Key& key, v1::Key* proto);

// Keys of a repeated field; errors name the element, e.g. "keys[2]: ...".
absl::StatusOr<std::vector<Key>> KeysFromProto(
    const google::protobuf::RepeatedPtrField<v1::Key>& protos, absl::string_view field);

absl::StatusOr<AttributeValue> AttributeValueFromProto(const v1::AttributeValue& proto,
                                                       absl::string_view field);
void AttributeValueToProto(const AttributeValue& value, v1::AttributeValue* proto);

absl::StatusOr<Record> RecordFromProto(const v1::Record& proto, absl::string_view field);
void RecordToProto(const Record& record, v1::Record* proto);

// METRIC_UNSPECIFIED and unknown values are INVALID_ARGUMENT.
absl::StatusOr<Metric> MetricFromProto(v1::Metric proto, absl::string_view field);
v1::Metric MetricToProto(Metric metric);

absl::StatusOr<CollectionSpec> CollectionSpecFromProto(const v1::CollectionSpec& proto,
                                                       absl::string_view field);
void CollectionSpecToProto(const CollectionSpec& spec, v1::CollectionSpec* proto);
void CollectionInfoToProto(const CollectionInfo& info, v1::CollectionInfo* proto);

void HitToProto(const Hit& hit, v1::Hit* proto);
// Errors name `field` ("hit.key", "hit.attributes[n]").
absl::StatusOr<Hit> HitFromProto(const v1::Hit& proto, absl::string_view field);

// Shape only: every node has its op set, an equals has a value, nesting is at most
// kMaxFilterDepth (errors name the wire path, e.g. "filter.all_of.filters[1]: op not set").
// Values (NaN bounds, lo > hi, empty lists, names) are the DB's to check. An unset range bound
// becomes -inf / +inf.
absl::StatusOr<Filter> FilterFromProto(const v1::Filter& proto, absl::string_view field);
void FilterToProto(const Filter& filter, v1::Filter* proto);

// Tenants (shoal/tenants.h). Quota values (NaN, negative rates) are the DB's to check.
TenantQuotas TenantQuotasFromProto(const v1::TenantQuotas& proto);
void TenantQuotasToProto(const TenantQuotas& quotas, v1::TenantQuotas* proto);
// TENANT_STATE_UNSPECIFIED and unknown values are INVALID_ARGUMENT naming `field`.
absl::StatusOr<TenantState> TenantStateFromProto(v1::TenantState proto, absl::string_view field);
v1::TenantState TenantStateToProto(TenantState state);
void TenantInfoToProto(const TenantInfo& info, v1::TenantInfo* proto);
// An unknown or unset state reads as kActive.
TenantInfo TenantInfoFromProto(const v1::TenantInfo& proto);

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_CONVERT_H_

#include "rpc/convert.h"

#include <limits>
#include <string>
#include <utility>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace shoal::rpc {
namespace {

// Overload set for std::visit.
template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

absl::StatusOr<Filter> FilterFromProtoAt(const v1::Filter& proto, const std::string& field,
                                         size_t depth);

absl::StatusOr<Filter> FilterListFromProto(const v1::FilterList& list, const std::string& field,
                                           size_t depth, Filter filter) {
  for (int i = 0; i < list.filters_size(); ++i) {
    absl::StatusOr<Filter> operand =
        FilterFromProtoAt(list.filters(i), absl::StrCat(field, ".filters[", i, "]"), depth + 1);
    if (!operand.ok()) return operand.status();
    filter.operands.push_back(*std::move(operand));
  }
  return filter;
}

absl::StatusOr<Filter> FilterFromProtoAt(const v1::Filter& proto, const std::string& field,
                                         size_t depth) {
  if (depth > kMaxFilterDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": nested deeper than ", kMaxFilterDepth, " levels"));
  }
  switch (proto.op_case()) {
    case v1::Filter::kEquals: {
      absl::StatusOr<AttributeValue> value =
          AttributeValueFromProto(proto.equals().value(), absl::StrCat(field, ".equals.value"));
      if (!value.ok()) return value.status();
      return Eq(proto.equals().name(), *std::move(value));
    }
    case v1::Filter::kRange: {
      const v1::AttributeRange& r = proto.range();
      Filter f = Range(r.name(), -std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::infinity());
      if (r.has_lo()) f.lo = r.lo();
      if (r.has_hi()) f.hi = r.hi();
      return f;
    }
    case v1::Filter::kHasTag:
      return HasTag(proto.has_tag());
    case v1::Filter::kAllOf:
      return FilterListFromProto(proto.all_of(), field + ".all_of", depth, And({}));
    case v1::Filter::kAnyOf:
      return FilterListFromProto(proto.any_of(), field + ".any_of", depth, Or({}));
    case v1::Filter::kNegate: {
      absl::StatusOr<Filter> operand =
          FilterFromProtoAt(proto.negate(), field + ".negate", depth + 1);
      if (!operand.ok()) return operand.status();
      return Not(*std::move(operand));
    }
    case v1::Filter::OP_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": op not set (equals, range, has_tag, all_of, any_of or negate)"));
}

}  // namespace

absl::StatusOr<Key> KeyFromProto(const v1::Key& proto, absl::string_view field) {
  switch (proto.kind_case()) {
    case v1::Key::kId:
      return Key(proto.id());
    case v1::Key::kName:
      return Key(proto.name());
    case v1::Key::KIND_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(field, ": key not set (id or name)"));
}

void KeyToProto(const Key& key, v1::Key* proto) {
  std::visit(Overloaded{[&](uint64_t id) { proto->set_id(id); },
                        [&](const std::string& name) { proto->set_name(name); }},
             key);
}

absl::StatusOr<std::vector<Key>> KeysFromProto(
    const google::protobuf::RepeatedPtrField<v1::Key>& protos, absl::string_view field) {
  std::vector<Key> keys;
  keys.reserve(protos.size());
  for (int i = 0; i < protos.size(); ++i) {
    absl::StatusOr<Key> key = KeyFromProto(protos[i], absl::StrCat(field, "[", i, "]"));
    if (!key.ok()) return key.status();
    keys.push_back(*std::move(key));
  }
  return keys;
}

absl::StatusOr<AttributeValue> AttributeValueFromProto(const v1::AttributeValue& proto,
                                                       absl::string_view field) {
  switch (proto.value_case()) {
    case v1::AttributeValue::kIntValue:
      return AttributeValue(static_cast<int64_t>(proto.int_value()));
    case v1::AttributeValue::kDoubleValue:
      return AttributeValue(proto.double_value());
    case v1::AttributeValue::kBoolValue:
      return AttributeValue(proto.bool_value());
    case v1::AttributeValue::kStringValue:
      return AttributeValue(proto.string_value());
    case v1::AttributeValue::VALUE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(field, ": attribute value not set"));
}

void AttributeValueToProto(const AttributeValue& value, v1::AttributeValue* proto) {
  std::visit(Overloaded{[&](int64_t v) { proto->set_int_value(v); },
                        [&](double v) { proto->set_double_value(v); },
                        [&](bool v) { proto->set_bool_value(v); },
                        [&](const std::string& v) { proto->set_string_value(v); }},
             value);
}

absl::StatusOr<Record> RecordFromProto(const v1::Record& proto, absl::string_view field) {
  Record record;
  if (!proto.has_key()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".key: required"));
  }
  // The fields' names are built only for an error (this runs for every record of a write):
  // every error of these conversions starts with the field given, so it is prefixed after.
  const auto named = [&](const absl::Status& s, absl::string_view sub) {
    return absl::Status(s.code(), absl::StrCat(field, sub, s.message()));
  };
  absl::StatusOr<Key> key = KeyFromProto(proto.key(), "");
  if (!key.ok()) return named(key.status(), ".key");
  record.key = *std::move(key);
  record.vector.assign(proto.vector().begin(), proto.vector().end());
  for (const auto& [name, value_proto] : proto.attributes()) {
    absl::StatusOr<AttributeValue> value = AttributeValueFromProto(value_proto, "");
    if (!value.ok()) return named(value.status(), absl::StrCat(".attributes[\"", name, "\"]"));
    record.attributes.emplace(name, *std::move(value));
  }
  record.tags.assign(proto.tags().begin(), proto.tags().end());
  return record;
}

void RecordToProto(const Record& record, v1::Record* proto) {
  KeyToProto(record.key, proto->mutable_key());
  proto->mutable_vector()->Assign(record.vector.begin(), record.vector.end());
  auto& attributes = *proto->mutable_attributes();
  for (const auto& [name, value] : record.attributes) {
    AttributeValueToProto(value, &attributes[name]);
  }
  for (const std::string& tag : record.tags) proto->add_tags(tag);
}

absl::StatusOr<Metric> MetricFromProto(v1::Metric proto, absl::string_view field) {
  switch (proto) {
    case v1::METRIC_L2:
      return Metric::kL2;
    case v1::METRIC_INNER_PRODUCT:
      return Metric::kInnerProduct;
    case v1::METRIC_COSINE:
      return Metric::kCosine;
    case v1::METRIC_UNSPECIFIED:
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": required (METRIC_L2, METRIC_INNER_PRODUCT or METRIC_COSINE)"));
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": unknown metric ", static_cast<int>(proto)));
}

v1::Metric MetricToProto(Metric metric) {
  switch (metric) {
    case Metric::kL2:
      return v1::METRIC_L2;
    case Metric::kInnerProduct:
      return v1::METRIC_INNER_PRODUCT;
    case Metric::kCosine:
      return v1::METRIC_COSINE;
  }
  return v1::METRIC_UNSPECIFIED;
}

absl::StatusOr<CollectionSpec> CollectionSpecFromProto(const v1::CollectionSpec& proto,
                                                       absl::string_view field) {
  CollectionSpec spec;
  spec.name = proto.name();
  spec.dimension = proto.dimension();
  absl::StatusOr<Metric> metric = MetricFromProto(proto.metric(), absl::StrCat(field, ".metric"));
  if (!metric.ok()) return metric.status();
  spec.metric = *metric;
  spec.shards = proto.shards();
  spec.replication = proto.replication();
  return spec;
}

void CollectionSpecToProto(const CollectionSpec& spec, v1::CollectionSpec* proto) {
  proto->set_name(spec.name);
  proto->set_dimension(spec.dimension);
  proto->set_metric(MetricToProto(spec.metric));
  proto->set_shards(spec.shards);
  proto->set_replication(spec.replication);
}

void CollectionInfoToProto(const CollectionInfo& info, v1::CollectionInfo* proto) {
  CollectionSpecToProto(info.spec, proto->mutable_spec());
  proto->set_num_vectors(info.num_vectors);
  proto->set_index(info.index);
  proto->set_index_ram_bytes(info.index_ram_bytes);
  proto->set_tenant_ram_bytes(info.tenant_ram_bytes);
  proto->set_unindexed_vectors(info.unindexed_vectors);
  proto->set_vector_bytes(info.num_vectors * info.spec.dimension * sizeof(float));
  for (const std::string& alias : info.aliases) proto->add_aliases(alias);
  proto->set_damage(info.damage);
}

void HitToProto(const Hit& hit, v1::Hit* proto) {
  KeyToProto(hit.key, proto->mutable_key());
  proto->set_distance(hit.distance);
  auto& attributes = *proto->mutable_attributes();
  for (const auto& [name, value] : hit.attributes) AttributeValueToProto(value, &attributes[name]);
  for (const std::string& tag : hit.tags) proto->add_tags(tag);
  proto->mutable_vector()->Assign(hit.vector.begin(), hit.vector.end());
}

absl::StatusOr<Hit> HitFromProto(const v1::Hit& proto, absl::string_view field) {
  Hit hit;
  absl::StatusOr<Key> key = KeyFromProto(proto.key(), absl::StrCat(field, ".key"));
  if (!key.ok()) return key.status();
  hit.key = *std::move(key);
  hit.distance = proto.distance();
  for (const auto& [name, value_proto] : proto.attributes()) {
    absl::StatusOr<AttributeValue> value =
        AttributeValueFromProto(value_proto, absl::StrCat(field, ".attributes[\"", name, "\"]"));
    if (!value.ok()) return value.status();
    hit.attributes.emplace(name, *std::move(value));
  }
  hit.tags.assign(proto.tags().begin(), proto.tags().end());
  hit.vector.assign(proto.vector().begin(), proto.vector().end());
  return hit;
}

absl::StatusOr<Filter> FilterFromProto(const v1::Filter& proto, absl::string_view field) {
  return FilterFromProtoAt(proto, std::string(field), 0);
}

void FilterToProto(const Filter& filter, v1::Filter* proto) {
  switch (filter.op) {
    case Filter::Op::kEq:
      proto->mutable_equals()->set_name(filter.name);
      AttributeValueToProto(filter.value, proto->mutable_equals()->mutable_value());
      return;
    case Filter::Op::kRange: {
      v1::AttributeRange* r = proto->mutable_range();
      r->set_name(filter.name);
      if (filter.lo != -std::numeric_limits<double>::infinity()) r->set_lo(filter.lo);
      if (filter.hi != std::numeric_limits<double>::infinity()) r->set_hi(filter.hi);
      return;
    }
    case Filter::Op::kHasTag:
      proto->set_has_tag(filter.name);
      return;
    case Filter::Op::kAnd:
    case Filter::Op::kOr: {
      v1::FilterList* list =
          filter.op == Filter::Op::kAnd ? proto->mutable_all_of() : proto->mutable_any_of();
      for (const Filter& operand : filter.operands) FilterToProto(operand, list->add_filters());
      return;
    }
    case Filter::Op::kNot:
      // A Not without exactly one operand is invalid; the wire can only say "not of one".
      if (!filter.operands.empty()) FilterToProto(filter.operands[0], proto->mutable_negate());
      return;
  }
}

TenantQuotas TenantQuotasFromProto(const v1::TenantQuotas& proto) {
  return TenantQuotas{.max_vectors = proto.max_vectors(),
                      .max_bytes = proto.max_bytes(),
                      .max_searches_per_second = proto.max_searches_per_second()};
}

void TenantQuotasToProto(const TenantQuotas& quotas, v1::TenantQuotas* proto) {
  proto->set_max_vectors(quotas.max_vectors);
  proto->set_max_bytes(quotas.max_bytes);
  proto->set_max_searches_per_second(quotas.max_searches_per_second);
}

absl::StatusOr<TenantState> TenantStateFromProto(v1::TenantState proto, absl::string_view field) {
  switch (proto) {
    case v1::TENANT_STATE_ACTIVE:
      return TenantState::kActive;
    case v1::TENANT_STATE_INACTIVE:
      return TenantState::kInactive;
    case v1::TENANT_STATE_OFFLOADED:
      return TenantState::kOffloaded;
    case v1::TENANT_STATE_UNSPECIFIED:
      return absl::InvalidArgumentError(absl::StrCat(
          field,
          ": required (TENANT_STATE_ACTIVE, TENANT_STATE_INACTIVE or TENANT_STATE_OFFLOADED)"));
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": unknown tenant state ", static_cast<int>(proto)));
}

v1::TenantState TenantStateToProto(TenantState state) {
  switch (state) {
    case TenantState::kActive:
      return v1::TENANT_STATE_ACTIVE;
    case TenantState::kInactive:
      return v1::TENANT_STATE_INACTIVE;
    case TenantState::kOffloaded:
      return v1::TENANT_STATE_OFFLOADED;
  }
  return v1::TENANT_STATE_UNSPECIFIED;
}

void TenantInfoToProto(const TenantInfo& info, v1::TenantInfo* proto) {
  proto->set_name(info.name);
  proto->set_state(TenantStateToProto(info.state));
  TenantQuotasToProto(info.quotas, proto->mutable_quotas());
  proto->set_vectors_owned(info.vectors_owned);
  proto->set_vectors_visible(info.vectors_visible);
  proto->set_bytes_owned(info.bytes_owned);
  proto->set_searches(info.searches);
  proto->set_search_p50_us(info.search_p50_us);
  proto->set_search_p99_us(info.search_p99_us);
  proto->set_buckets_scanned(info.buckets_scanned);
}

TenantInfo TenantInfoFromProto(const v1::TenantInfo& proto) {
  TenantInfo info;
  info.name = proto.name();
  info.state = TenantStateFromProto(proto.state(), "state").value_or(TenantState::kActive);
  info.quotas = TenantQuotasFromProto(proto.quotas());
  info.vectors_owned = proto.vectors_owned();
  info.vectors_visible = proto.vectors_visible();
  info.bytes_owned = proto.bytes_owned();
  info.searches = proto.searches();
  info.search_p50_us = proto.search_p50_us();
  info.search_p99_us = proto.search_p99_us();
  info.buckets_scanned = proto.buckets_scanned();
  return info;
}

}  // namespace shoal::rpc

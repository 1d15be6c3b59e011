// Record and search commands, and the conversions the handlers share.
#include <cmath>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "cli/commands_internal.h"

namespace shoal::cli {

namespace v1 = ::shoal::v1;

absl::Status ExpectPositional(const Args& args, size_t min, size_t max) {
  if (args.positional.size() < min || args.positional.size() > max) {
    return absl::InvalidArgumentError(kUsageError);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Metric> ParseMetric(const std::string& name) {
  if (name == "l2" || name == "euclidean") return v1::METRIC_L2;
  if (name == "ip" || name == "inner_product") return v1::METRIC_INNER_PRODUCT;
  if (name == "cosine" || name == "angular") return v1::METRIC_COSINE;
  return UsageError(absl::StrCat("--metric: \"", name, "\" is not one of l2, ip, cosine"));
}

std::string MetricText(v1::Metric metric) {
  switch (metric) {
    case v1::METRIC_L2:
      return "l2";
    case v1::METRIC_INNER_PRODUCT:
      return "ip";
    case v1::METRIC_COSINE:
      return "cosine";
    default:
      return "unspecified";
  }
}

v1::Key ParseKey(const std::string& text) {
  v1::Key key;
  uint64_t id = 0;
  if (absl::SimpleAtoi(text, &id) && text.find_first_not_of("0123456789") == std::string::npos) {
    key.set_id(id);
  } else {
    key.set_name(text);
  }
  return key;
}

Cell KeyCell(const v1::Key& key) {
  if (key.kind_case() == v1::Key::kId) return Cell::Number(static_cast<uint64_t>(key.id()));
  return Cell::Text(key.name());
}

absl::Status ParseFloats(const std::string& text, const std::string& field,
                         google::protobuf::RepeatedField<float>* out) {
  int index = 0;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    float value = 0;
    if (!absl::SimpleAtof(part, &value) || !std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", index, "]: \"", std::string(part), "\" is not a finite number"));
    }
    out->Add(value);
    ++index;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::pair<std::string, v1::AttributeValue>> ParseAttribute(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(absl::StrCat("--attrs: \"", text, "\" is not name=value"));
  }
  const std::string value = text.substr(eq + 1);
  v1::AttributeValue out;
  int64_t i = 0;
  double d = 0;
  if (absl::SimpleAtoi(value, &i)) {
    out.set_int_value(i);
  } else if (absl::SimpleAtod(value, &d)) {
    out.set_double_value(d);
  } else if (value == "true" || value == "false") {
    out.set_bool_value(value == "true");
  } else {
    out.set_string_value(value);
  }
  return std::make_pair(text.substr(0, eq), out);
}

Cell AttributeCell(const v1::AttributeValue& value) {
  switch (value.value_case()) {
    case v1::AttributeValue::kIntValue:
      return Cell::Number(static_cast<int64_t>(value.int_value()));
    case v1::AttributeValue::kDoubleValue:
      return Cell::Number(value.double_value());
    case v1::AttributeValue::kBoolValue:
      return Cell::Bool(value.bool_value());
    case v1::AttributeValue::kStringValue:
      return Cell::Text(value.string_value());
    default:
      return Cell::Null();
  }
}

Table CollectionTable(bool detailed) {
  Table t{.columns = {"name", "dimension", "metric", "vectors", "index", "aliases"}};
  if (detailed) {
    t.columns.insert(t.columns.end(),
                     {"index_ram_bytes", "tenant_ram_bytes", "unindexed_vectors", "vector_bytes"});
  }
  return t;
}

void AddCollectionRow(const v1::CollectionInfo& info, Table* table) {
  std::vector<Cell> aliases;
  for (const std::string& alias : info.aliases()) aliases.push_back(Cell::Text(alias));
  std::vector<Cell> row = {Cell::Text(info.spec().name()),
                           Cell::Number(static_cast<uint64_t>(info.spec().dimension())),
                           Cell::Text(MetricText(info.spec().metric())),
                           Cell::Number(static_cast<uint64_t>(info.num_vectors())),
                           Cell::Text(info.index()),
                           Cell::List(aliases)};
  if (table->columns.size() > row.size()) {
    row.push_back(Cell::Bytes(static_cast<uint64_t>(info.index_ram_bytes())));
    row.push_back(Cell::Bytes(static_cast<uint64_t>(info.tenant_ram_bytes())));
    row.push_back(Cell::Number(static_cast<uint64_t>(info.unindexed_vectors())));
    row.push_back(Cell::Bytes(static_cast<uint64_t>(info.vector_bytes())));
  }
  table->rows.push_back(std::move(row));
}

absl::StatusOr<Table> Upsert(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 4, 4));
  v1::UpsertRequest request;
  request.set_collection(args.positional[1]);
  request.set_tenant(args.Get("tenant", ""));
  request.set_sync(args.Has("sync"));
  v1::Record* record = request.add_records();
  *record->mutable_key() = ParseKey(args.positional[2]);
  SHOAL_RETURN_IF_ERROR(ParseFloats(args.positional[3], "vector", record->mutable_vector()));
  if (args.Has("attrs")) {
    for (absl::string_view part : absl::StrSplit(args.Get("attrs", ""), ',', absl::SkipEmpty())) {
      SHOAL_ASSIGN_OR_RETURN(auto attribute, ParseAttribute(std::string(part)));
      (*record->mutable_attributes())[attribute.first] = attribute.second;
    }
  }
  for (absl::string_view tag : absl::StrSplit(args.Get("tags", ""), ',', absl::SkipEmpty())) {
    record->add_tags(std::string(tag));
  }
  v1::UpsertResponse response;
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.vectors().Upsert(c.Context().get(), request, &response)));
  Table t{.columns = {"upserted"}, .single = true};
  t.rows.push_back({Cell::Number(static_cast<uint64_t>(response.upserted()))});
  return t;
}

absl::StatusOr<Table> Get(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 3, SIZE_MAX));
  v1::GetRequest request;
  request.set_collection(args.positional[1]);
  request.set_tenant(args.Get("tenant", ""));
  for (size_t i = 2; i < args.positional.size(); ++i) {
    *request.add_keys() = ParseKey(args.positional[i]);
  }
  v1::GetResponse response;
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.vectors().Get(c.Context().get(), request, &response)));
  Table t{.columns = {"key", "found", "vector", "attributes", "tags"}};
  for (int i = 0; i < response.results_size(); ++i) {
    const v1::GetResult& result = response.results(i);
    const v1::Record& r = result.record();
    // Attributes by name (the wire map has no order).
    std::vector<std::pair<std::string, Cell>> attributes;
    for (const auto& [name, value] : r.attributes()) {
      attributes.emplace_back(name, AttributeCell(value));
    }
    std::sort(attributes.begin(), attributes.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Cell> vector;
    for (float value : r.vector()) vector.push_back(Cell::Number(value));
    std::vector<Cell> tags;
    for (const std::string& tag : r.tags()) tags.push_back(Cell::Text(tag));
    t.rows.push_back({KeyCell(request.keys(i)), Cell::Bool(result.found()),
                      result.found() ? Cell::List(vector) : Cell::Null(), Cell::Object(attributes),
                      Cell::List(tags)});
  }
  return t;
}

absl::StatusOr<Table> Delete(const Connection& c, const Args& args) {
  if (args.Has("filter") || args.Has("all")) return DeleteMatching(c, args);
  if (args.Has("apply")) return UsageError("delete: --apply goes with --filter or --all");
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 3, SIZE_MAX));
  v1::DeleteRequest request;
  request.set_collection(args.positional[1]);
  request.set_sync(args.Has("sync"));
  request.set_tenant(args.Get("tenant", ""));
  for (size_t i = 2; i < args.positional.size(); ++i) {
    *request.add_keys() = ParseKey(args.positional[i]);
  }
  v1::DeleteResponse response;
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.vectors().Delete(c.Context().get(), request, &response)));
  Table t{.columns = {"deleted"}, .single = true};
  t.rows.push_back({Cell::Number(static_cast<uint64_t>(response.deleted()))});
  return t;
}

absl::StatusOr<v1::Filter> ParseFilter(const std::string& text) {
  v1::Filter all;
  int index = 0;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::string term(part);
    const std::string where = absl::StrCat("--filter: term ", index++, " \"", term, "\"");
    v1::Filter* f = all.mutable_all_of()->add_filters();
    if (term.starts_with("!")) {
      f = f->mutable_negate();
      term = term.substr(1);
    }
    if (term.starts_with("tag:") && term.size() > 4) {
      f->set_has_tag(term.substr(4));
      continue;
    }
    const size_t op = term.find_first_of("<>=");
    if (op == std::string::npos || op == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": want NAME=VALUE, NAME>=NUMBER, NAME<=NUMBER or tag:TAG"));
    }
    const std::string name = term.substr(0, op);
    if (term[op] == '=') {
      SHOAL_ASSIGN_OR_RETURN(auto attribute, ParseAttribute(term));
      f->mutable_equals()->set_name(name);
      *f->mutable_equals()->mutable_value() = attribute.second;
      continue;
    }
    double bound = 0;
    if (term.size() < op + 2 || term[op + 1] != '=' ||
        !absl::SimpleAtod(term.substr(op + 2), &bound)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": want NAME>=NUMBER or NAME<=NUMBER"));
    }
    f->mutable_range()->set_name(name);
    if (term[op] == '>') {
      f->mutable_range()->set_lo(bound);
    } else {
      f->mutable_range()->set_hi(bound);
    }
  }
  if (all.all_of().filters_size() == 1) return v1::Filter(all.all_of().filters(0));
  if (all.all_of().filters_size() == 0) return absl::InvalidArgumentError("--filter: empty");
  return all;
}

absl::StatusOr<Table> Search(const Connection& c, const Args& args) {
  SHOAL_RETURN_IF_ERROR(ExpectPositional(args, 3, 3));
  v1::SearchRequest request;
  request.set_collection(args.positional[1]);
  int queries = 0;
  for (absl::string_view query : absl::StrSplit(args.positional[2], ';', absl::SkipEmpty())) {
    const int before = request.queries_size();
    SHOAL_RETURN_IF_ERROR(ParseFloats(std::string(query), absl::StrCat("queries[", queries, "]"),
                                      request.mutable_queries()));
    if (queries == 0) request.set_dimension(request.queries_size() - before);
    ++queries;
  }
  SHOAL_ASSIGN_OR_RETURN(uint64_t k, args.GetUint("k", 10, UINT32_MAX));
  SHOAL_ASSIGN_OR_RETURN(uint64_t max_postings, args.GetUint("max-postings", 0, UINT32_MAX));
  SHOAL_ASSIGN_OR_RETURN(double pruning_ratio, args.GetDouble("pruning-ratio", 0));
  SHOAL_ASSIGN_OR_RETURN(double target_recall, args.GetDouble("target-recall", 0));
  request.set_k(static_cast<uint32_t>(k));
  request.set_target_recall(static_cast<float>(target_recall));
  request.set_max_postings(static_cast<uint32_t>(max_postings));
  request.set_pruning_ratio(static_cast<float>(pruning_ratio));
  request.set_tenant(args.Get("tenant", ""));
  if (args.Has("filter")) {
    SHOAL_ASSIGN_OR_RETURN(*request.mutable_filter(), ParseFilter(args.Get("filter", "")));
  }
  v1::SearchResponse response;
  SHOAL_RETURN_IF_ERROR(FromGrpc(c.search().Search(c.Context().get(), request, &response)));
  for (const std::string& warning : response.warnings())
    std::cerr << "warning: " << warning << "\n";
  Table t{.columns = {"query", "rank", "key", "distance"}};
  for (int q = 0; q < response.results_size(); ++q) {
    const auto& hits = response.results(q).hits();
    for (int rank = 0; rank < hits.size(); ++rank) {
      t.rows.push_back({Cell::Number(static_cast<uint64_t>(q)),
                        Cell::Number(static_cast<uint64_t>(rank)), KeyCell(hits[rank].key()),
                        Cell::Number(hits[rank].distance())});
    }
  }
  return t;
}

}  // namespace shoal::cli

#include "rpc/fake_db.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace shoal::rpc {

absl::StatusOr<FakeDB::Collection*> FakeDB::Find(std::string_view name) {
  auto it = collections_.find(name);
  if (it == collections_.end()) {
    return absl::NotFoundError(absl::StrCat("collection \"", std::string(name), "\" not found"));
  }
  return &it->second;
}

absl::Status FakeDB::CreateCollection(const CollectionSpec& spec) {
  if (spec.name.empty()) return absl::InvalidArgumentError("name: empty");
  if (spec.dimension == 0 || spec.dimension > kMaxDimension) {
    return absl::InvalidArgumentError(absl::StrCat("dimension: ", spec.dimension));
  }
  absl::MutexLock lock(&mu_);
  if (collections_.contains(spec.name)) {
    return absl::AlreadyExistsError(absl::StrCat("collection \"", spec.name, "\" exists"));
  }
  collections_[spec.name].spec = spec;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<CollectionInfo>> FakeDB::ListCollections() {
  absl::MutexLock lock(&mu_);
  std::vector<CollectionInfo> infos;
  for (const auto& [name, c] : collections_) infos.push_back({c.spec, c.records.size(), "flat"});
  return infos;
}

absl::StatusOr<CollectionInfo> FakeDB::DescribeCollection(std::string_view name) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Collection*> c = Find(name);
  if (!c.ok()) return c.status();
  return CollectionInfo{(*c)->spec, (*c)->records.size(), "flat"};
}

absl::Status FakeDB::DropCollection(std::string_view name) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Collection*> c = Find(name);
  if (!c.ok()) return c.status();
  collections_.erase(collections_.find(name));
  return absl::OkStatus();
}

absl::Status FakeDB::Upsert(std::string_view collection, std::span<const Record> records,
                            const WriteOptions& /*options*/) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Collection*> c = Find(collection);
  if (!c.ok()) return c.status();
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].vector.size() != (*c)->spec.dimension) {
      return absl::InvalidArgumentError(absl::StrCat("records[", i, "].vector: expected ",
                                                     (*c)->spec.dimension, " floats, got ",
                                                     records[i].vector.size()));
    }
  }
  for (const Record& record : records) (*c)->records[record.key] = record;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::optional<Record>>> FakeDB::Get(std::string_view collection,
                                                               std::span<const Key> keys) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Collection*> c = Find(collection);
  if (!c.ok()) return c.status();
  std::vector<std::optional<Record>> out;
  for (const Key& key : keys) {
    auto it = (*c)->records.find(key);
    out.push_back(it == (*c)->records.end() ? std::nullopt : std::optional<Record>(it->second));
  }
  return out;
}

absl::StatusOr<uint64_t> FakeDB::Delete(std::string_view collection, std::span<const Key> keys,
                                        const WriteOptions& /*options*/) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Collection*> c = Find(collection);
  if (!c.ok()) return c.status();
  uint64_t deleted = 0;
  for (const Key& key : keys) deleted += (*c)->records.erase(key);
  return deleted;
}

absl::StatusOr<std::vector<std::vector<Hit>>> FakeDB::Search(std::string_view collection,
                                                             std::span<const float> queries,
                                                             const SearchParams& params) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Collection*> c = Find(collection);
  if (!c.ok()) return c.status();
  const size_t dim = (*c)->spec.dimension;
  if (queries.empty() || queries.size() % dim != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("queries: length ", queries.size(), " is not a multiple of dimension ", dim));
  }
  if (params.k == 0) return absl::InvalidArgumentError("k: 0");
  std::vector<std::vector<Hit>> results;
  for (size_t q = 0; q < queries.size() / dim; ++q) {
    std::vector<Hit> hits;
    for (const auto& [key, record] : (*c)->records) {
      float distance = 0;
      for (size_t d = 0; d < dim; ++d) {
        const float diff = queries[q * dim + d] - record.vector[d];
        distance += diff * diff;
      }
      hits.push_back({key, distance});
    }
    std::sort(hits.begin(), hits.end(),
              [](const Hit& a, const Hit& b) { return a.distance < b.distance; });
    if (hits.size() > params.k) hits.resize(params.k);
    results.push_back(std::move(hits));
  }
  return results;
}

}  // namespace shoal::rpc

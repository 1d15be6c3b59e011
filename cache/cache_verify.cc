#include "cache/cache_verify.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cache/cache_policy.h"
#include "cache/cache_rows.h"

namespace shoal::cache {
namespace {

// One cache's rows after its spec row decoded.
absl::Status VerifyOne(storage::RecordStore* store, const CacheSpec& spec,
                       std::vector<std::string>* problems, CacheVerifyCounts* counts) {
  // Records a problem; the scan goes on.
  auto problem = [&](const auto& what) {
    problems->push_back(absl::StrCat("cache '", spec.name, "': ", std::string(what)));
    return absl::OkStatus();
  };
  SHOAL_RETURN_IF_ERROR(store->ScanCacheRows(
      PolicyPrefix(spec.name), [&](std::string_view key, std::string_view value) {
        absl::StatusOr<CachePolicy> p = DecodePolicy(value, key);
        return p.ok() ? absl::OkStatus() : problem(p.status().message());
      }));
  absl::flat_hash_set<uint64_t> ids;
  uint64_t max_id = 0;
  SHOAL_RETURN_IF_ERROR(store->ScanCacheRows(
      EntryPrefix(spec.name), [&](std::string_view key, std::string_view value) {
        absl::StatusOr<uint64_t> id = IdOfKey(key);
        if (!id.ok()) return problem(absl::StrCat("entry row: ", id.status().message()));
        ids.insert(*id);  // damaged or not: its metadata row is not an orphan
        max_id = std::max(max_id, *id);
        absl::StatusOr<StoredEntry> e = DecodeEntry(*id, value, spec.dimension);
        if (!e.ok()) return problem(e.status().message());
        for (float x : e->vector) {
          if (!std::isfinite(x)) return problem(absl::StrCat("entry ", *id, ": vector not finite"));
        }
        ++counts->entries;
        return absl::OkStatus();
      }));
  SHOAL_RETURN_IF_ERROR(store->ScanCacheRows(
      MetaPrefix(spec.name), [&](std::string_view key, std::string_view value) {
        absl::StatusOr<uint64_t> id = IdOfKey(key);
        if (!id.ok()) return problem(absl::StrCat("meta row: ", id.status().message()));
        absl::StatusOr<EntryMeta> m = DecodeMeta(*id, value);
        if (!m.ok()) return problem(m.status().message());
        if (ids.contains(*id)) return absl::OkStatus();
        return problem(absl::StrCat("metadata of entry ", *id, " without its entry"));
      }));
  SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> next, store->GetCacheRow(NextIdKey(spec.name)));
  if (next.has_value()) {
    absl::StatusOr<uint64_t> n = DecodeU64(*next, NextIdKey(spec.name));
    if (!n.ok()) return problem(n.status().message());
    if (!ids.empty() && *n <= max_id) {
      return problem(absl::StrCat("next id ", *n, " is not above entry ", max_id));
    }
  } else if (!ids.empty()) {
    return problem("entries but no next-id row");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status VerifyCacheRows(storage::RecordStore* store, std::vector<std::string>* problems,
                             CacheVerifyCounts* counts) {
  std::vector<CacheSpec> specs;
  SHOAL_RETURN_IF_ERROR(
      store->ScanCacheRows(kSpecPrefix, [&](std::string_view key, std::string_view value) {
        std::string_view name = key.substr(sizeof(kSpecPrefix) - 1);
        absl::StatusOr<CacheSpec> spec = DecodeSpec(name, value);
        if (!spec.ok()) {
          problems->push_back(
              absl::StrCat("cache '", std::string(name), "': spec row: ", spec.status().message()));
        } else {
          specs.push_back(*std::move(spec));
        }
        return absl::OkStatus();
      }));
  for (const CacheSpec& spec : specs) {
    ++counts->caches;
    SHOAL_RETURN_IF_ERROR(VerifyOne(store, spec, problems, counts));
  }
  return absl::OkStatus();
}

}  // namespace shoal::cache

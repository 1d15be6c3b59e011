#include "cache/cache_catalog.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace shoal::cache {

absl::Status ValidateCacheSpec(const CacheSpec& spec) {
  const std::string& n = spec.name;
  bool ok = !n.empty() && n.size() <= kMaxNameBytes;
  for (size_t i = 0; ok && i < n.size(); ++i) {
    const char c = n[i];
    ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
         (i > 0 && ((c >= '0' && c <= '9') || c == '-'));
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.name: '", n, "' must match [A-Za-z_][A-Za-z0-9_-]{0,63}"));
  }
  if (spec.dimension == 0 || spec.dimension > kMaxDimension) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.dimension: ", spec.dimension, " is not in 1..", kMaxDimension));
  }
  const int m = static_cast<int>(spec.metric);
  if (m < 0 || m > 2) return absl::InvalidArgumentError("spec.metric: unknown metric");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CacheCatalog>> CacheCatalog::Open(storage::RecordStore* store,
                                                                 const Clock* clock) {
  std::unique_ptr<CacheCatalog> catalog(new CacheCatalog(store, clock));
  std::vector<CacheSpec> specs;
  SHOAL_RETURN_IF_ERROR(store->ScanCacheRows(
      kSpecPrefix, [&](std::string_view key, std::string_view value) -> absl::Status {
        SHOAL_ASSIGN_OR_RETURN(CacheSpec spec,
                               DecodeSpec(key.substr(sizeof(kSpecPrefix) - 1), value));
        specs.push_back(std::move(spec));
        return absl::OkStatus();
      }));
  absl::MutexLock lock(&catalog->mu_);
  for (const CacheSpec& spec : specs) {
    absl::StatusOr<std::unique_ptr<SemanticCache>> c =
        SemanticCache::Load(spec, store, clock, &catalog->loads_);
    if (c.ok()) {
      catalog->caches_[spec.name] = *std::move(c);
    } else if (absl::IsDataLoss(c.status())) {
      catalog->quarantined_[spec.name] = {spec, c.status()};  // the others still serve
    } else {
      return c.status();
    }
  }
  return catalog;
}

CacheCatalog::~CacheCatalog() {
  {
    absl::MutexLock lock(&sweeper_mu_);
    stopping_ = true;
  }
  if (sweeper_.joinable()) sweeper_.join();
}

void CacheCatalog::StartSweeper(absl::Duration period) {
  absl::MutexLock lock(&sweeper_mu_);
  if (sweeper_.joinable() || stopping_) return;
  sweeper_ = std::thread([this, period] { SweepLoop(period); });
}

uint64_t CacheCatalog::BackgroundSweeps() const {
  absl::MutexLock lock(&sweeper_mu_);
  return sweeps_;
}

void CacheCatalog::SweepLoop(absl::Duration period) {
  absl::MutexLock lock(&sweeper_mu_);
  while (!sweeper_mu_.AwaitWithTimeout(absl::Condition(&stopping_), period)) {
    sweeper_mu_.Unlock();
    // Errors are retried next period (the rows are past their TTL either way).
    Sweep().IgnoreError();
    sweeper_mu_.Lock();
    ++sweeps_;
  }
}

absl::Status CacheCatalog::Create(const CacheSpec& spec) {
  SHOAL_RETURN_IF_ERROR(ValidateCacheSpec(spec));
  absl::MutexLock lock(&mu_);
  if (caches_.contains(spec.name) || quarantined_.contains(spec.name)) {
    return absl::AlreadyExistsError(absl::StrCat("spec.name: cache '", spec.name, "' exists"));
  }
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<SemanticCache> c,
                         SemanticCache::Create(spec, store_, clock_, &loads_));
  caches_[spec.name] = std::move(c);
  return absl::OkStatus();
}

absl::Status CacheCatalog::Drop(std::string_view name) {
  absl::MutexLock lock(&mu_);
  if (auto q = quarantined_.find(std::string(name)); q != quarantined_.end()) {
    // Its rows never loaded: delete them through a cache object that holds nothing.
    SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<SemanticCache> empty,
                           SemanticCache::Create(q->second.first, store_, clock_, &loads_));
    SHOAL_RETURN_IF_ERROR(empty->Drop());
    quarantined_.erase(q);
    return absl::OkStatus();
  }
  auto it = caches_.find(std::string(name));
  if (it == caches_.end()) {
    return absl::NotFoundError(absl::StrCat("cache: no cache '", std::string(name), "'"));
  }
  SHOAL_RETURN_IF_ERROR(it->second->Drop());
  caches_.erase(it);
  return absl::OkStatus();
}

std::vector<CacheInfo> CacheCatalog::List() {
  std::vector<std::shared_ptr<SemanticCache>> all;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, c] : caches_) all.push_back(c);
  }
  std::vector<CacheInfo> out;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, q] : quarantined_) {
      out.push_back({.spec = q.first, .quarantine = q.second.ToString()});
    }
  }
  for (const auto& c : all) out.push_back(c->Info());
  std::sort(out.begin(), out.end(),
            [](const CacheInfo& a, const CacheInfo& b) { return a.spec.name < b.spec.name; });
  return out;
}

absl::StatusOr<std::shared_ptr<SemanticCache>> CacheCatalog::Find(std::string_view name) {
  absl::MutexLock lock(&mu_);
  auto it = caches_.find(absl::string_view(name.data(), name.size()));  // no copy
  if (it == caches_.end()) {
    if (auto q = quarantined_.find(std::string(name)); q != quarantined_.end()) {
      return absl::DataLossError(absl::StrCat(
          "cache: cache '", std::string(name), "' is quarantined: it could not be loaded (",
          q->second.second.ToString(), "); DropCache removes it"));
    }
    return absl::NotFoundError(absl::StrCat("cache: no cache '", std::string(name), "'"));
  }
  return it->second;
}

absl::Status CacheCatalog::ReportModelLoad(std::string_view model, double load) {
  if (model.size() > 256) return absl::InvalidArgumentError("model: longer than 256 bytes");
  if (!std::isfinite(load) || load < 0 || load > 1) {
    return absl::InvalidArgumentError(absl::StrCat("load: ", load, " is not in [0, 1]"));
  }
  loads_.Set(model, load);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> CacheCatalog::Sweep() {
  std::vector<std::shared_ptr<SemanticCache>> all;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, c] : caches_) all.push_back(c);
  }
  uint64_t removed = 0;
  for (const auto& c : all) {
    auto n = c->Sweep();
    if (n.ok()) {
      removed += *n;
    } else if (!absl::IsFailedPrecondition(n.status())) {
      return n.status();
    }
  }
  return removed;
}

}  // namespace shoal::cache

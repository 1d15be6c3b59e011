// DBImpl's semantic-cache calls (include/shoal/db.h "Semantic caches"): each finds the cache
// in the catalog (cache/cache_catalog.h) and delegates to its engine (cache/semantic_cache.h).
// Kept apart from db_impl.cc so that the cache's DB surface is one file.
#include <memory>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/db_impl.h"

namespace shoal::db {

absl::Status DBImpl::CreateCache(const CacheSpec& spec) { return caches_->Create(spec); }

absl::Status DBImpl::DropCache(std::string_view cache) { return caches_->Drop(cache); }

absl::StatusOr<std::vector<CacheInfo>> DBImpl::ListCaches() { return caches_->List(); }

absl::Status DBImpl::SetCachePolicy(std::string_view cache, std::string_view category,
                                    const CachePolicy& policy) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<cache::SemanticCache> c, caches_->Find(cache));
  return c->SetPolicy(category, policy);
}

absl::StatusOr<CachePolicy> DBImpl::GetCachePolicy(std::string_view cache,
                                                   std::string_view category) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<cache::SemanticCache> c, caches_->Find(cache));
  return c->GetPolicy(category);
}

absl::StatusOr<CacheLookupResult> DBImpl::CacheLookup(std::string_view cache,
                                                      const CacheLookupRequest& request) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<cache::SemanticCache> c, caches_->Find(cache));
  return c->Lookup(request);
}

absl::StatusOr<uint64_t> DBImpl::CacheStore(std::string_view cache,
                                            const CacheStoreRequest& request,
                                            const WriteOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<cache::SemanticCache> c, caches_->Find(cache));
  return c->Store(request, options.sync);
}

absl::StatusOr<uint64_t> DBImpl::CacheInvalidate(std::string_view cache,
                                                 const CacheInvalidation& which) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<cache::SemanticCache> c, caches_->Find(cache));
  return c->Invalidate(which);
}

absl::Status DBImpl::CacheFeedback(std::string_view cache, const CacheFeedbackReport& feedback) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<cache::SemanticCache> c, caches_->Find(cache));
  return c->Feedback(feedback);
}

absl::StatusOr<CacheStats> DBImpl::GetCacheStats(std::string_view cache) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<cache::SemanticCache> c, caches_->Find(cache));
  return c->Stats();
}

absl::Status DBImpl::ReportModelLoad(std::string_view model, double load) {
  return caches_->ReportModelLoad(model, load);
}

}  // namespace shoal::db

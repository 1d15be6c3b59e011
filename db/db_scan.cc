// DBImpl: records by filter (shoal/db.h "Records by filter"): resolve the name, delegate to
// the Collection (db/collection_scan.cc).
#include "base/status_macros.h"
#include "db/db_impl.h"

namespace shoal::db {

absl::StatusOr<uint64_t> DBImpl::Count(std::string_view collection, const Filter* filter,
                                       const ReadOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  return c->Count(filter, options);
}

absl::StatusOr<ScrollPage> DBImpl::Scroll(std::string_view collection, const Filter* filter,
                                          const ScrollOptions& scroll, const ReadOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  return c->Scroll(filter, scroll, options);
}

absl::StatusOr<uint64_t> DBImpl::DeleteByFilter(std::string_view collection, const Filter* filter,
                                                const WriteOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  absl::ReaderMutexLock change(&change_mu_);
  return c->DeleteByFilter(filter, options);
}

}  // namespace shoal::db

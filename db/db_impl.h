// DBImpl: the implementation of shoal::DB (include/shoal/db.h). Holds the RecordStore and the
// open collections by name; each call finds its Collection and delegates.
//
// Thread safety: as shoal::DB. mu_ guards the name -> collection map and serialises create/drop;
// a Collection stays alive (shared_ptr) while a call that found it is still running.
#ifndef SHOAL_DB_DB_IMPL_H_
#define SHOAL_DB_DB_IMPL_H_

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "db/collection.h"
#include "shoal/db.h"
#include "storage/record_store.h"

namespace shoal::db {

class DBImpl final : public DB {
 public:
  static absl::StatusOr<std::unique_ptr<DB>> Open(const std::string& path, const Options& options);
  ~DBImpl() override;

  absl::Status CreateCollection(const CollectionSpec& spec) override;
  absl::StatusOr<std::vector<CollectionInfo>> ListCollections() override;
  absl::StatusOr<CollectionInfo> DescribeCollection(std::string_view name) override;
  absl::Status DropCollection(std::string_view name) override;

  absl::Status Upsert(std::string_view collection, std::span<const Record> records,
                      const WriteOptions& options) override;
  absl::StatusOr<std::vector<std::optional<Record>>> Get(std::string_view collection,
                                                         std::span<const Key> keys) override;
  absl::StatusOr<uint64_t> Delete(std::string_view collection, std::span<const Key> keys,
                                  const WriteOptions& options) override;
  absl::Status BuildIndex(std::string_view collection, std::string_view spec) override;
  absl::StatusOr<std::vector<std::vector<Hit>>> Search(std::string_view collection,
                                                       std::span<const float> queries,
                                                       const SearchParams& params) override;

 private:
  explicit DBImpl(const Options& options) : options_(options) {}
  absl::StatusOr<std::shared_ptr<Collection>> Find(std::string_view name);

  const Options options_;
  std::string index_root_;  // DIR/index: SSD index files, one directory per build
  std::unique_ptr<storage::RecordStore> store_;  // declared first: destroyed last
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Collection>> collections_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::db

#endif  // SHOAL_DB_DB_IMPL_H_

// FakeDB: an in-memory shoal::DB for testing the gRPC layer without storage. Exact search,
// no persistence, the DB contract's main error codes (NOT_FOUND, ALREADY_EXISTS,
// INVALID_ARGUMENT naming the field). Test-only; thread-safe (one mutex).
//
//   FakeDB db;
//   auto server = Server::Start(&db, options);
#ifndef SHOAL_RPC_FAKE_DB_H_
#define SHOAL_RPC_FAKE_DB_H_

#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "shoal/db.h"

namespace shoal::rpc {

class FakeDB final : public DB {
 public:
  FakeDB() = default;

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
  absl::Status BuildIndex(std::string_view collection, std::string_view spec) override {
    return absl::UnimplementedError("FakeDB has no index builds");
  }
  absl::StatusOr<std::vector<std::vector<Hit>>> Search(std::string_view collection,
                                                       std::span<const float> queries,
                                                       const SearchParams& params) override;

 private:
  struct Collection {
    CollectionSpec spec;
    std::map<Key, Record> records;
  };
  absl::StatusOr<Collection*> Find(std::string_view name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::map<std::string, Collection, std::less<>> collections_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_FAKE_DB_H_

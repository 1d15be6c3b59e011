// TenantModelDB: a test double of shoal::DB that forwards everything to a real DB except
// tenancy, which it answers from a small in-memory model of the contracts in
// include/shoal/db.h ("Tenants") and shoal/options.h (WriteOptions / ReadOptions::tenant):
// owners, grants, visibility of Get / Search / Delete, quotas on max_vectors. It lets the gRPC
// layer's tenant handling (rpc/tenant_scope.h, rpc/tenant_service.cc) be tested end to end
// in-process without the engine, and records the tenant of every record call so a test can
// check which tenant the wire passed down.
//
//   TenantModelDB db(real_db.get());
//   auto server = rpc::Server::Start(&db, options);
//   ... db.tenants_seen() ...
//
// It is not the engine: searches are answered by the real DB's exact search over every
// record, then filtered (fine for small test collections). Thread-safe (one mutex).
#ifndef SHOAL_TESTS_SUPPORT_TENANT_MODEL_DB_H_
#define SHOAL_TESTS_SUPPORT_TENANT_MODEL_DB_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "shoal/db.h"

namespace shoal::testing {

class TenantModelDB final : public DB {
 public:
  // `base` is not owned and must outlive this.
  explicit TenantModelDB(DB* base) : base_(base) {}

  // The WriteOptions / ReadOptions / SearchParams tenant of every Upsert, Get, Delete and
  // Search so far, in order.
  std::vector<std::string> tenants_seen() const;

  absl::Status CreateCollection(const CollectionSpec& spec) override;
  absl::StatusOr<std::vector<CollectionInfo>> ListCollections() override;
  absl::StatusOr<CollectionInfo> DescribeCollection(std::string_view name) override;
  absl::Status DropCollection(std::string_view name) override;
  absl::Status CreateAlias(std::string_view alias, std::string_view collection) override;
  absl::Status AlterAlias(std::string_view alias, std::string_view collection) override;
  absl::Status DropAlias(std::string_view alias) override;
  absl::StatusOr<std::vector<AliasInfo>> ListAliases() override;
  absl::Status Upsert(std::string_view collection, std::span<const Record> records,
                      const WriteOptions& options) override;
  absl::StatusOr<std::vector<std::optional<Record>>> Get(std::string_view collection,
                                                         std::span<const Key> keys,
                                                         const ReadOptions& options) override;
  absl::StatusOr<uint64_t> Delete(std::string_view collection, std::span<const Key> keys,
                                  const WriteOptions& options) override;
  // Records by filter: the base DB's answer without a tenant, then the model's visibility (a
  // tenant's Scroll pages may be short; its DeleteByFilter becomes a Delete of the keys it owns).
  absl::StatusOr<uint64_t> Count(std::string_view collection, const Filter* filter,
                                 const ReadOptions& options) override;
  absl::StatusOr<ScrollPage> Scroll(std::string_view collection, const Filter* filter,
                                    const ScrollOptions& scroll,
                                    const ReadOptions& options) override;
  absl::StatusOr<uint64_t> DeleteByFilter(std::string_view collection, const Filter* filter,
                                          const WriteOptions& options) override;
  absl::Status BuildIndex(std::string_view collection, std::string_view spec,
                          const IndexBuildProgressFn& progress) override;
  absl::Status FlushIndexUpdates(std::string_view collection) override;
  absl::Status DrainIndexUpdates(std::string_view collection) override;
  absl::Status Compact(std::string_view collection) override;
  absl::Status Snapshot(const std::string& dir) override;
  absl::StatusOr<std::vector<std::vector<Hit>>> Search(std::string_view collection,
                                                       std::span<const float> queries,
                                                       const SearchParams& params) override;
  absl::Status CreateTenant(std::string_view collection, const TenantSpec& spec) override;
  absl::StatusOr<uint64_t> DropTenant(std::string_view collection, std::string_view tenant,
                                      const WriteOptions& options) override;
  absl::StatusOr<TenantPage> ListTenants(std::string_view collection, uint32_t page_size,
                                         std::string_view page_token) override;
  absl::StatusOr<TenantInfo> DescribeTenant(std::string_view collection,
                                            std::string_view tenant) override;
  absl::Status SetTenantQuotas(std::string_view collection, std::string_view tenant,
                               const TenantQuotas& quotas) override;
  absl::Status SetTenantState(std::string_view collection, std::string_view tenant,
                              TenantState state) override;
  absl::Status Grant(std::string_view collection, std::string_view tenant,
                     std::span<const Key> keys, const WriteOptions& options) override;
  absl::Status Revoke(std::string_view collection, std::string_view tenant,
                      std::span<const Key> keys, const WriteOptions& options) override;
  absl::StatusOr<std::vector<std::string>> ListKeyTenants(std::string_view collection,
                                                          const Key& key) override;
  absl::StatusOr<uint64_t> CountByTenant(std::string_view collection, std::string_view tenant,
                                         bool owned_only) override;
  absl::StatusOr<uint64_t> DeleteByTenant(std::string_view collection, std::string_view tenant,
                                          const WriteOptions& options) override;
  absl::Status Verify(std::string_view collection, VerifyReport* report) override;

  // Semantic caches: passed through to the base DB.
  absl::Status CreateCache(const CacheSpec& spec) override { return base_->CreateCache(spec); }
  absl::Status DropCache(std::string_view cache) override { return base_->DropCache(cache); }
  absl::StatusOr<std::vector<CacheInfo>> ListCaches() override { return base_->ListCaches(); }
  absl::Status SetCachePolicy(std::string_view cache, std::string_view category,
                              const CachePolicy& policy) override {
    return base_->SetCachePolicy(cache, category, policy);
  }
  absl::StatusOr<CachePolicy> GetCachePolicy(std::string_view cache,
                                             std::string_view category) override {
    return base_->GetCachePolicy(cache, category);
  }
  absl::StatusOr<CacheLookupResult> CacheLookup(std::string_view cache,
                                                const CacheLookupRequest& request) override {
    return base_->CacheLookup(cache, request);
  }
  absl::StatusOr<uint64_t> CacheStore(std::string_view cache, const CacheStoreRequest& request,
                                      const WriteOptions& options) override {
    return base_->CacheStore(cache, request, options);
  }
  absl::StatusOr<uint64_t> CacheInvalidate(std::string_view cache,
                                           const CacheInvalidation& which) override {
    return base_->CacheInvalidate(cache, which);
  }
  absl::Status CacheFeedback(std::string_view cache, const CacheFeedbackReport& feedback) override {
    return base_->CacheFeedback(cache, feedback);
  }
  absl::StatusOr<CacheStats> GetCacheStats(std::string_view cache) override {
    return base_->GetCacheStats(cache);
  }
  absl::Status ReportModelLoad(std::string_view model, double load) override {
    return base_->ReportModelLoad(model, load);
  }

 private:
  struct Owned {
    std::string owner;               // "" = none
    std::set<std::string> grantees;  // tenants it was granted to
  };
  struct Collection {
    std::map<std::string, TenantInfo> tenants;
    std::map<Key, Owned> records;  // every live record's owner and grants
  };

  // NotFound naming the collection or the tenant.
  absl::StatusOr<Collection*> Find(std::string_view collection) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<TenantInfo*> FindTenant(std::string_view collection, std::string_view tenant)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static bool Visible(const Owned& owned, std::string_view tenant);
  // Every key of the base DB that passes `filter` and that `tenant` sees (or, with
  // `owned_only`, owns).
  absl::StatusOr<std::vector<Key>> MatchingKeys(std::string_view collection, const Filter* filter,
                                                std::string_view tenant, bool owned_only)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Seen(std::string_view tenant) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  DB* const base_;
  mutable absl::Mutex mu_;
  std::map<std::string, Collection, std::less<>> collections_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> tenants_seen_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::testing

#endif  // SHOAL_TESTS_SUPPORT_TENANT_MODEL_DB_H_

// The systems `shoal_bench tenants` compares, behind one interface: a search is (tenant, query)
// and must return only vectors the tenant sees.
//   - "hnswlib-per-tenant", "faiss-ivf-per-tenant": one `ann` peer (bench/ann_system.h) built on
//     each tenant's vectors (copies: a vector shared by three tenants is indexed three times);
//   - "shoal-tenant": one Shoal collection, every vector stored once, granted to its tenants,
//     searched with SearchParams::tenant (the tenant's sub-tree of the shared index);
//   - "shoal-filter": the same collection searched with a tag filter naming the tenant (each
//     record is tagged with its tenants) and no tenant: the shared index plus a filter.
//   - "faiss-hnsw-filter", "faiss-ivf-filter": one FAISS index (HNSW or IVF-Flat) over every
//     base row, searched with a faiss::IDSelectorBitmap of the tenant's rows: the shared index
//     plus a filter as FAISS users have it (bench/tenant_shared_faiss.cc).
//
//   SHOAL_ASSIGN_OR_RETURN(auto shoal, ShoalTenantIndex::Create(spec, sweep));
//   SHOAL_RETURN_IF_ERROR(shoal->Load(base, workload, metric, threads));
//   std::unique_ptr<TenantSystem> t = shoal->TenantView(), f = shoal->FilterView();
//
// Thread safety: Build and SetParams exclusively; Search from one client thread.
#ifndef SHOAL_BENCH_TENANT_SYSTEMS_H_
#define SHOAL_BENCH_TENANT_SYSTEMS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/ann_system.h"
#include "bench/shoal_collection.h"
#include "bench/sweep.h"
#include "bench/tenant_workload.h"

namespace shoal::bench {

class BareRocksWrite;

class TenantSystem {
 public:
  virtual ~TenantSystem() = default;
  virtual std::string name() const = 0;
  virtual std::string build_params() const = 0;
  // Indexes what each tenant of `w` sees (rows of `base`); `w` and `base` must outlive this.
  virtual absl::StatusOr<BuildInfo> Build(const Matrix& base, const TenantWorkload& w,
                                          Metric metric, int threads) = 0;
  virtual std::vector<std::string> points() const = 0;
  virtual absl::Status SetParams(size_t point) = 0;
  virtual void PrepareClientThread() {}
  // Writes the k nearest of `query` among what `tenant` sees (base rows; -1 pads) into row `row`.
  virtual absl::Status Search(uint32_t tenant, const float* query, size_t k, Neighbors* out,
                              size_t row) = 0;
  virtual double RamBytes() const = 0;
  virtual double SsdBytes() const { return 0; }
  // Postings (index buckets) each query of the last pass scanned, by its row; empty when the
  // system does not count them.
  virtual std::vector<uint32_t> PostingsPerQuery() const { return {}; }
};

// One `ann` peer per tenant, made by `make(tenant_rows)`; every one must offer the same points.
std::unique_ptr<TenantSystem> MakePerTenantSystem(
    std::string name, std::string params,
    std::function<std::unique_ptr<AnnSystem>(size_t rows)> make);

// One FAISS index of `factory` over every base row (`build`: parameters set before adding, e.g.
// efConstruction), searched per tenant with a bitmap selector of its rows; `sweep` the search
// points (efSearch or nprobe).
std::unique_ptr<TenantSystem> MakeSharedFaissSystem(std::string name, std::string factory,
                                                    GridPoint build, std::vector<GridPoint> sweep);

// What the shared Shoal collection measured while loading.
struct ShoalTenantLoad {
  double load_seconds = 0;      // Upserts (records tagged with their tenants, no owner)
  double build_seconds = 0;     // BuildIndex + FlushIndexUpdates
  double shared_ram_bytes = 0;  // index RAM before any tenant exists
  double tenant_ram_bytes = 0;  // index RAM added by the tenants (access table + sub-trees)
  // CPU us per key, Grant of each tenant's keys in batches: the first grant of a vector no tenant
  // saw (it was upserted without an owner) also reads its record and finds its tree leaf.
  double grant_batched_us = 0;
  // Per key, 100 tenants' keys revoked and granted again in batches (leaves known, as for a
  // vector upserted with an owner and then granted).
  double revoke_batched_us = 0, regrant_batched_us = 0;
  // Per key, a bare RocksDB batch of the same rows after each of those calls (puts for the
  // grants, deletes for the revokes; bench/bare_rocksdb_write.h).
  double bare_grant_batched_us = 0, bare_revoke_batched_us = 0, bare_regrant_batched_us = 0;
  std::vector<double> grant_us;   // single-key Grant calls (a key the tenant did not see)
  std::vector<double> revoke_us;  // single-key Revoke of the same keys
  // Interleaved with those calls, a bare RocksDB write of the same row into a store whose
  // memtable holds the same grant rows as Shoal's catalog (bench/bare_rocksdb_write.h): put
  // (grant) and delete (revoke), each alone and with the memtable marker row.
  std::vector<double> bare_put_us, bare_put_marker_us, bare_delete_us, bare_delete_marker_us;
};

class ShoalTenantIndex {
 public:
  static absl::StatusOr<std::unique_ptr<ShoalTenantIndex>> Create(const std::string& spec,
                                                                  std::vector<double> recalls);
  // Loads, builds, creates tenants "t<i>" and grants them their rows; then times single-key
  // grants and revokes of `grant_samples` random (tenant, row it does not see) pairs.
  absl::StatusOr<ShoalTenantLoad> Load(const Matrix& base, const TenantWorkload& w, Metric metric,
                                       size_t grant_samples);
  // Drops every tenant and grants `w`'s instead (same base rows); the RAM the new tenants added.
  absl::StatusOr<double> ReplaceTenants(const TenantWorkload& w);
  // Views over this collection (it must outlive them); their Build is a no-op.
  std::unique_ptr<TenantSystem> TenantView();
  std::unique_ptr<TenantSystem> FilterView();

  ShoalCollection& collection() { return *collection_; }
  const ShoalTenantLoad& load() const { return load_; }
  double RamBytes() const;
  // Of RamBytes, the tenants' (CollectionInfo::tenant_ram_bytes).
  double TenantRamBytes() const;
  double SsdBytes() const;

 private:
  ShoalTenantIndex(std::string spec, std::vector<double> recalls)
      : spec_(std::move(spec)), recalls_(std::move(recalls)) {}
  // With `bare`, each call's rows are also written to it (timed into *bare_us_per_key).
  absl::Status GrantAll(const TenantWorkload& w, BareRocksWrite* bare, double* us_per_key,
                        double* bare_us_per_key);
  absl::Status TimeSingleGrants(const TenantWorkload& w, size_t n, size_t rows,
                                BareRocksWrite& bare);
  absl::Status TimeRegrants(const TenantWorkload& w, size_t tenants, BareRocksWrite& bare);
  // Grant (or revoke) `rows` to `tenant` in calls of <= 10k keys; adds their CPU time to
  // *seconds, and with `bare` that of a bare batch of the same rows after each call to
  // *bare_seconds.
  absl::Status SetAccessBatched(size_t tenant, const std::vector<uint32_t>& rows, bool grant,
                                double* seconds, BareRocksWrite* bare = nullptr,
                                double* bare_seconds = nullptr);

  std::string spec_;
  std::vector<double> recalls_;
  std::unique_ptr<ShoalCollection> collection_;
  size_t tenants_ = 0;
  ShoalTenantLoad load_;
};

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_TENANT_SYSTEMS_H_

// `shoal_bench tenants`: a multi-tenant workload (bench/tenant_workload.h) and its peers in one
// run (bench/tenant_systems.h): one hnswlib index per tenant, one FAISS IVF-Flat per tenant,
// Shoal's shared index with a tenant tag filter, and Shoal's tenant search; exact search among
// each tenant's vectors is the recall oracle. Per system and sweep point: recall@10 of small
// and large tenants apart, QPS and p50/p99 (one client thread, single queries) and isolation
// violations; then per system the best point at recall@10 >= 0.95, index RAM and SSD bytes,
// build time, Shoal's grant and revoke latency, the ratios of Shoal's tenant search to each
// peer, and the tenant structures' RAM at 100, 1,000 and 10,000 tenants.
//
//   shoal_bench tenants --dataset fashion-mnist --tenants 1000 --runs 3
//   shoal_bench tenants --dataset synthetic:n=1000000,d=128,seed=1 --n 200000 --tenants 5000
#ifndef SHOAL_BENCH_TENANTS_BENCH_H_
#define SHOAL_BENCH_TENANTS_BENCH_H_

#include <string>

#include "absl/status/status.h"
#include "bench/tenant_workload.h"

namespace CLI {
class App;
}  // namespace CLI

namespace shoal::bench {

struct TenantsBenchOptions {
  std::string dataset = "fashion-mnist";  // a shoal::LoadDataset spec
  size_t n = 0;                           // the first n base rows (0 = all)
  int classes = 10;  // unlabelled sets: classes by NearestSeedClasses (Fashion-MNIST has 10)
  TenantWorkloadOptions workload;
  std::string systems = "shoal-tenant,shoal-filter,hnswlib,faiss-ivf";
  int runs = 1;  // timed passes per point, interleaved across systems; the fastest is kept
  // Also time each call's CPU (the `by CPU time` ratios): two clock reads, ~0.4 us each on the
  // Zen 5 VM, added to every call of every system, so off unless asked for.
  bool cpu_time = false;
  int build_threads = 2;
  std::string shoal_spec = "auto";
  std::string shoal_recalls = "0.8,0.85,0.9,0.91,0.92,0.93,0.95,0.97,0.99";  // target_recall sweep
  int hnsw_m = 16;
  int hnsw_ef_construction = 100;
  std::string hnsw_ef = "10,12,14,16,20,24,32,40,64,80,160";
  std::string faiss_nprobe = "1,2,4,8,16,32";
  // The shared FAISS indexes searched with a tenant's bitmap: a filter that admits few rows
  // needs a wide search to find k of them.
  int shared_hnsw_ef_construction = 200;
  std::string shared_hnsw_ef = "16,32,64,128,256,512,1024,2048,4096,8192";
  std::string shared_nprobe = "1,2,4,8,16,32,64,128,256";
  size_t grant_samples = 1000;                   // single-key Grant / Revoke calls timed
  std::string scale_tenants = "100,1000,10000";  // tenant RAM at these counts ("" = skip)
  std::string csv;                               // append one row per sweep point
};

absl::Status RunTenantsBench(const TenantsBenchOptions& options);

// Adds the `tenants` subcommand; when it runs, its exit status goes to *exit_code.
void RegisterTenantsCommand(CLI::App& app, int* exit_code);

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_TENANTS_BENCH_H_

// ServerMetrics: shoald's Prometheus metrics (prometheus-cpp), served over HTTP on their own
// port (--metrics-listen), which answers GET /metrics and nothing else.
//
//   shoal_rpc_duration_seconds{method,code}       histogram, every RPC (auth failures included)
//   shoal_rejections_total{reason}                counter: unauthenticated, permission_denied,
//                                                 rate_limited, message_too_large,
//                                                 ingest_backpressure, deadline_exceeded,
//                                                 cross_origin (web console), tenant_denied (a
//                                                 tenant-bound key went beyond its tenant)
//   shoal_wal_sync_seconds                        histogram: writes asked to sync (Upsert,
//                                                 Delete, Batch, Ingest with sync=true)
//   shoal_ingested_records_total                  counter: records written by Ingest
//   shoal_ingest_inflight_bytes                   gauge: ingest batches being applied
//   shoal_index_builds_in_progress                gauge
//   shoal_index_build_progress{collection}        gauge 0..1 (1 once the last build finished)
//   shoal_collection_vectors{collection}          gauge, read from the DB at scrape time
//   shoal_collection_vector_bytes{collection}     gauge, read from the DB at scrape time
//   shoal_collection_index_ram_bytes{collection}  gauge, read from the DB at scrape time
//   shoal_build_info{version,revision}            gauge, always 1: project version, git describe
//   shoal_cache_*                                 the semantic caches' series (rpc/cache_metrics.h)
//   shoal_tenant_*{collection,tenant}             per-tenant series, bounded: rpc/tenant_metrics.h
//
// Recording works whether or not the endpoint is served. Thread safety: all methods are
// thread-safe.
#ifndef SHOAL_RPC_METRICS_H_
#define SHOAL_RPC_METRICS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace prometheus {
class Collectable;
class Counter;
class Exposer;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace shoal::rpc {

class DbHost;
class TenantMetrics;

// The registry's main series summed over their labels, read at one moment (for the web
// console's charts). Every number is cumulative since the server started: a reader takes the
// difference of two samples for rates and for the latency distribution over an interval.
struct MetricsSample {
  double rpcs = 0;        // RPCs answered (shoal_rpc_duration_seconds' count, every method)
  double rpc_errors = 0;  // those answered with a code other than OK
  // shoal_rpc_duration_seconds over every method: bucket upper bounds in seconds and the
  // cumulative count of RPCs at or below each (the last bound is +infinity).
  std::vector<double> latency_bounds;
  std::vector<double> latency_counts;
  double wal_syncs = 0;                      // shoal_wal_sync_seconds' count
  double wal_sync_seconds = 0;               // ... and sum
  std::map<std::string, double> rejections;  // shoal_rejections_total by reason
  double ingested_records = 0;
  double builds_in_progress = 0;
};

class ServerMetrics {
 public:
  // Per-tenant series: at most this many (collection, tenant) pairs get their own label.
  static constexpr size_t kDefaultMaxTenantSeries = 500;
  // Per-tenant vectors gauge: the largest tenants of each collection shown by name.
  static constexpr size_t kTopTenantsByVectors = 100;

  explicit ServerMetrics(size_t max_tenant_series = kDefaultMaxTenantSeries);
  ~ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // Serves GET /metrics on `listen` (HOST:PORT; port 0 picks one, see port()). Per-collection
  // gauges are read from `host` (not owned; must outlive this) at each scrape.
  // UNAVAILABLE when the address cannot be bound.
  // `extra`: more collectables served beside the built-in ones.
  absl::Status Serve(const std::string& listen, DbHost* host,
                     std::vector<std::shared_ptr<prometheus::Collectable>> extra = {});
  // The bound port; 0 when not serving.
  int port() const { return port_; }

  // `code` is the gRPC status code's name, e.g. "OK", "INVALID_ARGUMENT".
  void RecordRpc(const std::string& method, const std::string& code, double seconds);
  void RecordRejection(const std::string& reason);
  void RecordWalSync(double seconds);
  void RecordIngested(uint64_t records);
  void SetIngestInflightBytes(uint64_t bytes);
  void AddBuildsInProgress(int delta);
  void SetBuildProgress(const std::string& collection, double fraction);
  // Per-tenant series (rpc/tenant_metrics.h); a call naming no tenant records nothing.
  void RecordTenantSearch(absl::string_view collection, absl::string_view tenant,
                          const absl::Status& status, double seconds);
  void RecordTenantWriteRejection(absl::string_view collection, absl::string_view tenant,
                                  const absl::Status& status);

  // The main series now (see MetricsSample).
  MetricsSample Sample() const;

 private:
  class CollectionCollector;

  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<CollectionCollector> collections_;
  std::shared_ptr<prometheus::Collectable> caches_;  // rpc/cache_metrics.h
  std::vector<std::shared_ptr<prometheus::Collectable>> extra_;
  std::unique_ptr<TenantMetrics> tenants_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
  prometheus::Family<prometheus::Histogram>* rpc_duration_;
  prometheus::Family<prometheus::Counter>* rejections_;
  prometheus::Family<prometheus::Gauge>* build_progress_;
  prometheus::Histogram* wal_sync_;
  prometheus::Counter* ingested_;
  prometheus::Gauge* ingest_inflight_;
  prometheus::Gauge* builds_in_progress_;
};

// The canonical name of a gRPC status code ("OK", "NOT_FOUND", ...).
std::string GrpcCodeName(int code);

}  // namespace shoal::rpc

#endif  // SHOAL_RPC_METRICS_H_

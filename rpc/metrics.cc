#include "rpc/metrics.h"

#include <CivetServer.h>
#include <civetweb.h>
#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <cstring>
#include <exception>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/build_info.h"
#include "rpc/cache_metrics.h"
#include "rpc/db_host.h"
#include "rpc/tenant_metrics.h"
#include "shoal/db.h"

namespace shoal::rpc {
namespace {

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
      0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30};
  return *buckets;
}

prometheus::MetricFamily GaugeFamily(const std::string& name, const std::string& help) {
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = prometheus::MetricType::Gauge;
  return family;
}

// civetweb matches a handler's path as a case-insensitive prefix ("/metricsX", "/METRICS/"
// would be served too): answer exactly "/metrics" and nothing else.
int OnlyTheMetricsPath(mg_connection* connection) {
  const mg_request_info* info = mg_get_request_info(connection);
  if (info != nullptr && info->local_uri != nullptr &&
      std::strcmp(info->local_uri, "/metrics") == 0) {
    return 0;  // civetweb goes on to prometheus-cpp's handler
  }
  mg_send_http_error(connection, 404, "%s", "not found: this port serves /metrics only\n");
  return 1;
}

const CivetCallbacks kExactMetricsPath = [] {
  CivetCallbacks callbacks;
  callbacks.begin_request = OnlyTheMetricsPath;
  return callbacks;
}();

}  // namespace

std::string GrpcCodeName(int code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  if (code >= 0 && code < static_cast<int>(std::size(kNames))) return kNames[code];
  return absl::StrCat("CODE_", code);
}

// Per-collection gauges, read from the DB when Prometheus scrapes (never stale, no upkeep on
// the write path).
class ServerMetrics::CollectionCollector : public prometheus::Collectable {
 public:
  explicit CollectionCollector(DbHost* host) : host_(host) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    prometheus::MetricFamily vectors =
        GaugeFamily("shoal_collection_vectors", "Live records per collection.");
    prometheus::MetricFamily bytes =
        GaugeFamily("shoal_collection_vector_bytes", "Bytes of vector data per collection.");
    prometheus::MetricFamily ram =
        GaugeFamily("shoal_collection_index_ram_bytes", "RAM held by each collection's index.");
    prometheus::MetricFamily tenant_ram = GaugeFamily(
        "shoal_collection_tenant_ram_bytes",
        "Of each collection's index RAM, what its tenants hold (access table, sub-trees).");
    prometheus::MetricFamily tenants;
    prometheus::MetricFamily quarantined = GaugeFamily(
        "shoal_collection_quarantined",
        "1 for a collection that could not be opened (damaged) and is quarantined, else 0.");
    DbHost::Lease lease = host_->Acquire();
    if (lease.ok()) {
      absl::StatusOr<std::vector<CollectionInfo>> infos = lease->ListCollections();
      if (infos.ok()) {
        for (const CollectionInfo& info : *infos) {
          const double vector_bytes =
              static_cast<double>(info.num_vectors) * info.spec.dimension * sizeof(float);
          Add(vectors, info.spec.name, static_cast<double>(info.num_vectors));
          Add(bytes, info.spec.name, vector_bytes);
          Add(ram, info.spec.name, static_cast<double>(info.index_ram_bytes));
          Add(tenant_ram, info.spec.name, static_cast<double>(info.tenant_ram_bytes));
          Add(quarantined, info.spec.name, info.damage.empty() ? 0 : 1);
        }
      }
      tenants = TenantMetrics::CollectVectors(*lease, kTopTenantsByVectors);
    }
    std::vector<prometheus::MetricFamily> families = {vectors, bytes, ram, tenant_ram, quarantined};
    if (!tenants.metric.empty()) families.push_back(std::move(tenants));
    return families;
  }

 private:
  static void Add(prometheus::MetricFamily& family, const std::string& collection, double value) {
    prometheus::ClientMetric metric;
    metric.label.push_back({"collection", collection});
    metric.gauge.value = value;
    family.metric.push_back(std::move(metric));
  }

  DbHost* const host_;
};

ServerMetrics::ServerMetrics(size_t max_tenant_series)
    : registry_(std::make_shared<prometheus::Registry>()) {
  tenants_ = std::make_unique<TenantMetrics>(*registry_, max_tenant_series);
  rpc_duration_ = &prometheus::BuildHistogram()
                       .Name("shoal_rpc_duration_seconds")
                       .Help("Time to answer an RPC, by method and gRPC status code.")
                       .Register(*registry_);
  rejections_ = &prometheus::BuildCounter()
                     .Name("shoal_rejections_total")
                     .Help("Requests refused before reaching the database, by reason.")
                     .Register(*registry_);
  build_progress_ = &prometheus::BuildGauge()
                         .Name("shoal_index_build_progress")
                         .Help("Progress of the collection's latest index build, 0..1.")
                         .Register(*registry_);
  wal_sync_ = &prometheus::BuildHistogram()
                   .Name("shoal_wal_sync_seconds")
                   .Help("Latency of writes acknowledged after a WAL fsync (sync=true).")
                   .Register(*registry_)
                   .Add({}, LatencyBuckets());
  ingested_ = &prometheus::BuildCounter()
                   .Name("shoal_ingested_records_total")
                   .Help("Records written through the Ingest stream.")
                   .Register(*registry_)
                   .Add({});
  ingest_inflight_ = &prometheus::BuildGauge()
                          .Name("shoal_ingest_inflight_bytes")
                          .Help("Bytes of ingest batches being applied now.")
                          .Register(*registry_)
                          .Add({});
  builds_in_progress_ = &prometheus::BuildGauge()
                             .Name("shoal_index_builds_in_progress")
                             .Help("Index builds running now.")
                             .Register(*registry_)
                             .Add({});
  // Constant 1; the labels say what is running (the usual *_build_info idiom).
  prometheus::BuildGauge()
      .Name("shoal_build_info")
      .Help("The running shoald's version (project version and git describe); always 1.")
      .Register(*registry_)
      .Add({{"version", base::ProjectVersion()}, {"revision", base::GitDescribe()}})
      .Set(1);
}

ServerMetrics::~ServerMetrics() = default;

absl::Status ServerMetrics::Serve(const std::string& listen, DbHost* host,
                                  std::vector<std::shared_ptr<prometheus::Collectable>> extra) {
  if (exposer_ != nullptr) return absl::FailedPreconditionError("metrics: already serving");
  try {
    // Several threads and a short request timeout: one client that sends half a request and
    // goes idle must not hold the only thread for civetweb's default 30 s.
    exposer_ = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", listen, "num_threads", "4",
                                 "request_timeout_ms", "3000"},
        &kExactMetricsPath);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("metrics-listen: cannot bind ", listen, ": ", e.what()));
  }
  collections_ = std::make_shared<CollectionCollector>(host);
  exposer_->RegisterCollectable(registry_);
  exposer_->RegisterCollectable(collections_);
  caches_ = MakeCacheCollector(host);
  exposer_->RegisterCollectable(caches_);
  extra_ = std::move(extra);
  for (const auto& collectable : extra_) exposer_->RegisterCollectable(collectable);
  const std::vector<int> ports = exposer_->GetListeningPorts();
  port_ = ports.empty() ? 0 : ports.front();
  return absl::OkStatus();
}

void ServerMetrics::RecordRpc(const std::string& method, const std::string& code, double seconds) {
  rpc_duration_->Add({{"method", method}, {"code", code}}, LatencyBuckets()).Observe(seconds);
}

void ServerMetrics::RecordRejection(const std::string& reason) {
  rejections_->Add({{"reason", reason}}).Increment();
}

void ServerMetrics::RecordWalSync(double seconds) { wal_sync_->Observe(seconds); }

void ServerMetrics::RecordIngested(uint64_t records) {
  ingested_->Increment(static_cast<double>(records));
}

void ServerMetrics::SetIngestInflightBytes(uint64_t bytes) {
  ingest_inflight_->Set(static_cast<double>(bytes));
}

void ServerMetrics::AddBuildsInProgress(int delta) { builds_in_progress_->Increment(delta); }

void ServerMetrics::RecordTenantSearch(absl::string_view collection, absl::string_view tenant,
                                       const absl::Status& status, double seconds) {
  tenants_->RecordSearch(collection, tenant, status, seconds);
}

void ServerMetrics::RecordTenantWriteRejection(absl::string_view collection,
                                               absl::string_view tenant,
                                               const absl::Status& status) {
  tenants_->RecordWriteRejection(collection, tenant, status);
}

void ServerMetrics::SetBuildProgress(const std::string& collection, double fraction) {
  build_progress_->Add({{"collection", collection}}).Set(fraction);
}

namespace {

std::string LabelValue(const prometheus::ClientMetric& metric, const std::string& name) {
  for (const auto& label : metric.label) {
    if (label.name == name) return label.value;
  }
  return "";
}

// Adds one method's latency histogram into `sample`'s (every method has the same buckets).
void AddLatency(const prometheus::ClientMetric& metric, MetricsSample& sample) {
  const auto& buckets = metric.histogram.bucket;
  if (sample.latency_bounds.empty()) {
    for (const auto& bucket : buckets) sample.latency_bounds.push_back(bucket.upper_bound);
    sample.latency_counts.assign(buckets.size(), 0);
  }
  for (size_t i = 0; i < buckets.size() && i < sample.latency_counts.size(); ++i) {
    sample.latency_counts[i] += static_cast<double>(buckets[i].cumulative_count);
  }
  const double count = static_cast<double>(metric.histogram.sample_count);
  sample.rpcs += count;
  if (LabelValue(metric, "code") != "OK") sample.rpc_errors += count;
}

}  // namespace

MetricsSample ServerMetrics::Sample() const {
  MetricsSample sample;
  for (const prometheus::MetricFamily& family : registry_->Collect()) {
    for (const prometheus::ClientMetric& metric : family.metric) {
      if (family.name == "shoal_rpc_duration_seconds") {
        AddLatency(metric, sample);
      } else if (family.name == "shoal_rejections_total") {
        sample.rejections[LabelValue(metric, "reason")] += metric.counter.value;
      } else if (family.name == "shoal_wal_sync_seconds") {
        sample.wal_syncs += static_cast<double>(metric.histogram.sample_count);
        sample.wal_sync_seconds += metric.histogram.sample_sum;
      } else if (family.name == "shoal_ingested_records_total") {
        sample.ingested_records += metric.counter.value;
      } else if (family.name == "shoal_index_builds_in_progress") {
        sample.builds_in_progress += metric.gauge.value;
      }
    }
  }
  if (sample.latency_bounds.empty()) {  // no RPC yet: the buckets every method will have
    sample.latency_bounds = LatencyBuckets();
    sample.latency_bounds.push_back(std::numeric_limits<double>::infinity());
    sample.latency_counts.assign(sample.latency_bounds.size(), 0);
  }
  return sample;
}

}  // namespace shoal::rpc

#include "rpc/cluster_metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cluster/cluster_node.h"
#include "cluster/shard_map.h"

namespace shoal::rpc {
namespace {

using Labels = std::vector<prometheus::ClientMetric::Label>;

prometheus::MetricFamily Gauge(const std::string& name, const std::string& help) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = prometheus::MetricType::Gauge;
  return f;
}

void Add(prometheus::MetricFamily& f, Labels labels, double value) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  f.metric.push_back(std::move(m));
}

class ClusterCollector final : public prometheus::Collectable {
 public:
  explicit ClusterCollector(const cluster::ClusterNode* node) : node_(node) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    auto live = Gauge("shoal_cluster_live_nodes", "Live nodes in this node's view.");
    auto coordinator = Gauge("shoal_cluster_coordinator", "1 when this node is the coordinator.");
    auto etcd = Gauge("shoal_cluster_etcd_reachable", "1 when etcd answered the last read.");
    auto applied = Gauge("shoal_shard_applied_sequence",
                         "Last stream entry this node's shard copy applied (reads see it).");
    auto durable = Gauge("shoal_shard_durable_sequence",
                         "Last stream entry this node's shard copy recorded durably.");
    auto lag = Gauge("shoal_shard_lag_entries",
                     "Stream entries after the last one this copy fetched (0 when idle).");
    auto ready = Gauge("shoal_shard_ready", "1 once this shard copy serves reads.");
    const cluster::ClusterView view = node_->View();
    Add(live, {}, static_cast<double>(view.nodes.size()));
    Add(coordinator, {}, view.coordinator == node_->node_id() ? 1 : 0);
    Add(etcd, {}, view.etcd_reachable ? 1 : 0);
    for (const auto& replica : node_->LocalReplicas()) {
      auto name = cluster::ParseShardCollectionName(replica->local_name());
      if (!name) continue;
      const Labels labels = {{"collection", name->first}, {"shard", absl::StrCat(name->second)}};
      Add(applied, labels, static_cast<double>(replica->applied()));
      Add(durable, labels, static_cast<double>(replica->durable_applied()));
      Add(lag, labels, static_cast<double>(replica->pending()));
      Add(ready, labels, replica->ready() ? 1 : 0);
    }
    return {std::move(live),    std::move(coordinator), std::move(etcd), std::move(applied),
            std::move(durable), std::move(lag),         std::move(ready)};
  }

 private:
  const cluster::ClusterNode* const node_;
};

}  // namespace

std::shared_ptr<prometheus::Collectable> MakeClusterCollector(const cluster::ClusterNode* node) {
  return std::make_shared<ClusterCollector>(node);
}

}  // namespace shoal::rpc

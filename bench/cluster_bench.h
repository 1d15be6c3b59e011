// `shoal_bench cluster`: the scale-out goal figures of issue 21, measured in one run.
//  - ingest: the base vectors written by embedded DB::Upsert (--streams threads), then through
//    a 1-node and an N-node cluster (real etcd, nats-server and shoald processes on loopback;
//    a collection of --shards shards, replication 1, so the work splits over the nodes) with
//    --streams writers per node, each through its own node. Timed until every record is
//    applied by its replica (a read-your-writes Get of every shard), not only acknowledged.
//    Prints records/s per node and the ratio per node / embedded (goal >= 0.50). The embedded
//    ingest runs once as a warm-up, then --embedded-runs times before, between and after the
//    two cluster runs; the ratios use the median of those.
//  - search: the same query batches sent round robin to the nodes of each cluster with
//    --client-threads callers; prints QPS and the ratio QPS(N) / (N x QPS(1)) (goal >= 0.80).
//  - CPU: each shoald's CPU seconds (its CPU-time clock) per query and per record, and from
//    them what the ratios would be with one machine per node (the busiest node bounds the
//    throughput): on loopback every process shares this machine's cores, so the measured QPS
//    cannot scale. Also each node's minor page faults per record during ingest.
// Needs etcd and nats-server (Debian etcd-server, nats-server) and shoald beside shoal_bench
// (or in $SHOAL_BIN_DIR).
#ifndef SHOAL_BENCH_CLUSTER_BENCH_H_
#define SHOAL_BENCH_CLUSTER_BENCH_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace CLI {
class App;
}  // namespace CLI

namespace shoal::bench {

struct ClusterBenchOptions {
  std::string dataset = "synthetic:n=60000,d=64,q=1000";  // any shoal::LoadDataset spec
  uint32_t nodes = 3;      // of the larger cluster (the smaller has 1)
  uint32_t shards = 3;     // of the sharded collection; replication 1
  size_t queries = 1000;   // capped by the dataset's test set
  int client_threads = 4;  // search callers
  size_t k = 10;
  size_t batch = 10;          // queries per Search call
  size_t ingest_batch = 500;  // records per Upsert
  int streams = 2;            // ingest threads (embedded) and writers per node (cluster)
  int embedded_runs = 2;      // embedded ingests at each of 3 points (after one warm-up)
};

absl::Status RunClusterBench(const ClusterBenchOptions& options);

// Adds the `cluster` subcommand; when it runs, its exit status goes to *exit_code.
void RegisterClusterCommand(CLI::App& app, int* exit_code);

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_CLUSTER_BENCH_H_

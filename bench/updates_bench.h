// `shoal_bench updates`: online updates of the SSD index, all in one run on one dataset:
//  1. load the first half of the base vectors ("old"), BuildIndex(spec);
//  2. idle: single-query search latency (p50/p99) from one thread at a fixed pace, after one
//     untimed pass over the queries (cold reads after the build count in neither phase). The
//     idle time and the churn below are cut into --rounds parts (10) that alternate, each churn
//     part drained before the next idle one: on a shared machine the host's own slow moments
//     (measured on the 2-vCPU VM: idle p99 0.10-0.50 ms from run to run, the slow queries on
//     the CPU, with no context switch or page fault) fall on both sides alike instead of
//     deciding the ratio. --rounds 1 is one idle phase, then all the churn;
//  3. churn: a writer inserts the second half ("new") and deletes every old key (100% churn),
//     batch by batch with WriteOptions::sync — as fast as it can, or at --write-rate inserts per
//     second (a steady stream, as a live service sees) — while one thread keeps searching at the
//     same pace:
//     acknowledged insert and delete throughput, search p50/p99 during updates (also split into
//     while writing / while draining, with postings, cache hits, bytes read and the exact
//     buffer's size per query, to tell why a phase is slower); then the time until
//     background maintenance has moved everything into the postings (DrainIndexUpdates after
//     each round: deleted vectors garbage-collected as background maintenance does, lazily), and
//     the sustained insert throughput that includes it; then the time of one FlushIndexUpdates
//     (every tombstone swept out) after the churn, printed apart and with the rate it would
//     give counted in. --sweep-every-round: FlushIndexUpdates after each round instead (a full
//     sweep each time, as this bench did before DrainIndexUpdates existed);
//  4. recall@k of the churned index vs a fresh BuildIndex of the same live set, same knobs;
//  5. sustained inserts, the quantity: a database of its own built on the same first
//     half, the second half inserted in the same synced batches as fast as can be (no deletes,
//     no searches, never paced), timed until DrainIndexUpdates returns: acknowledged and
//     sustained insert rates, CPU per inserted vector (writer, index side);
//  6. raw RocksDB: the same number of synced WriteBatches with the same key + record bytes
//     written straight to a RocksDB instance (same options class as Shoal's store); and again
//     with the churn's deletes (record row, key row, tombstone row) between them, since the
//     sustained rate's time includes the deletes. CPU seconds beside the wall-clock rates
//     (writer thread, the rest of the process: index maintenance, publisher, RocksDB's threads;
//     raw RocksDB's process): on a shared machine the waits decide the rates, the CPU does not.
// Prints each number and the ratios the issue sets goals for: p99 updates/idle (<= 1.5, with a
// bootstrap interval and the ratio of each busy phase alone), recall churned - fresh (>= -0.01),
// insert throughput / RocksDB inserts (>= 0.5; step 5 against step 6's inserts, acknowledged and
// sustained); and the churn's, index work included, against RocksDB's churn (both sides' deletes
// counted).
#ifndef SHOAL_BENCH_UPDATES_BENCH_H_
#define SHOAL_BENCH_UPDATES_BENCH_H_

#include <string>

#include "absl/status/status.h"

namespace CLI {
class App;
}  // namespace CLI

namespace shoal::bench {

struct UpdatesBenchOptions {
  std::string dataset = "synthetic:n=100000,d=64,q=500,clusters=100,seed=3";
  std::string spec = "spann:centroid_ratio=0.02,replicas=4";
  size_t batch = 100;  // records per Upsert / keys per Delete
  bool sync = true;    // WriteOptions::sync of every write
  size_t k = 10;
  uint32_t max_postings = 16;  // search knob, the same for every measurement
  double idle_seconds = 5;     // idle latency phase
  double search_qps = 500;     // the searching thread's pace, idle and during updates
  size_t backlog = 100000;     // Options::index_update_backlog (writers wait above it)
  bool warm_up = true;         // one untimed pass over the queries before the idle phase
  size_t rounds = 10;          // churn parts, each after an idle window (alternating in time)
  bool batch_scheduled_writes = true;  // Options::batch_scheduled_writes
  double write_rate = 0;  // inserts/s during the churn (deletes alike); 0 = as fast as can be
  bool sweep_every_round = false;   // FlushIndexUpdates (full sweep) after each round
  uint32_t index_update_batch = 0;  // Options::index_update_batch (0: its default)
  std::string dir;                  // scratch directory (default: a fresh one under /tmp)
};

absl::Status RunUpdatesBench(const UpdatesBenchOptions& options);

// Adds the `updates` subcommand; when it runs, its exit status goes to *exit_code.
void RegisterUpdatesCommand(CLI::App& app, int* exit_code);

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_UPDATES_BENCH_H_

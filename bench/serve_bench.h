// `shoal_bench serve`: what serving over gRPC costs, measured in one run on one DB.
//  - search: the same batches of test queries answered by DB::Search in-process and by the C++
//    client SDK over loopback gRPC (an in-process shoald Server on 127.0.0.1:0), by unary Search
//    calls and by SearchStream sessions (one per thread), and with --unix-socket both again over
//    a Unix-domain socket; and over bare loopback TCP sockets with no protocol at all (one
//    server thread per client thread; the floor any socket transport pays on this machine);
//    each with --client-threads threads, the paths' passes alternating.
//    Prints QPS, CPU and context switches per call, and the ratios to in-process (goal >= 0.70).
//  - ingest: the base vectors written by embedded DB::Upsert (--streams threads) and by the
//    SDK's streaming Ingest (--streams streams) into two fresh collections of the same DB;
//    prints records/s and the ratio gRPC / embedded (goal >= 0.50).
#ifndef SHOAL_BENCH_SERVE_BENCH_H_
#define SHOAL_BENCH_SERVE_BENCH_H_

#include <string>

#include "absl/status/status.h"

namespace CLI {
class App;
}  // namespace CLI

namespace shoal::bench {

struct ServeBenchOptions {
  std::string dataset = "fashion-mnist";  // any shoal::LoadDataset spec
  std::string index = "flat";             // BuildIndex spec of the searched collection
  size_t queries = 10000;                 // capped by the dataset's test set
  int client_threads = 2;                 // callers, in-process and over gRPC alike
  uint32_t search_threads = 1;            // Options::search_threads (per Search call)
  size_t k = 10;
  size_t batch = 100;          // queries per Search call
  size_t ingest_batch = 1000;  // records per Upsert / Ingest message
  int streams = 2;             // ingest threads (embedded) and streams (gRPC)
  size_t max_records = 0;      // ingest at most this many base vectors (0 = all)
  int runs = 3;                // timed search passes per path, rotating which goes first; best kept
  bool unix_socket = false;    // also search over a Unix-domain socket
  std::string calls = "both";  // gRPC searches by "unary" calls, "stream" sessions or "both"
};

absl::Status RunServeBench(const ServeBenchOptions& options);

// Adds the `serve` subcommand; when it runs, its exit status goes to *exit_code.
void RegisterServeCommand(CLI::App& app, int* exit_code);

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_SERVE_BENCH_H_

#include "bench/serve_bench.h"

#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <span>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "bench/recall.h"
#include "bench/report.h"
#include "rpc/client/shoal_client.h"
#include "rpc/server.h"
#include "shoal/dataset.h"
#include "shoal/db.h"

namespace shoal::bench {
namespace {

constexpr int kMessageBytes = 256 << 20;

// Runs work(0..n-1) on `threads` threads (items handed out in order) and returns the seconds
// it took; the first error stops every thread.
absl::StatusOr<double> Parallel(size_t n, int threads,
                                const std::function<absl::Status(size_t)>& work) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  absl::Mutex mu;
  absl::Status first_error;
  const double t0 = NowSeconds();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i; !failed && (i = next++) < n;) {
        absl::Status s = work(i);
        if (!s.ok()) {
          absl::MutexLock lock(&mu);
          if (first_error.ok()) first_error = s;
          failed = true;
        }
      }
    });
  }
  for (std::thread& thread : pool) thread.join();
  if (!first_error.ok()) return first_error;
  return NowSeconds() - t0;
}

struct Dir {
  std::string path;
  ~Dir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

absl::StatusOr<std::string> MakeDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = absl::StrCat(base != nullptr ? base : "/tmp", "/shoal-serve-bench-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  return pattern;
}

struct IngestRates {
  double embedded = 0;  // records per second
  double grpc = 0;
};

absl::StatusOr<IngestRates> BenchIngest(const ServeBenchOptions& o, DB& db, client::Client& client,
                                        const CollectionSpec& spec,
                                        std::span<const Record> records) {
  CollectionSpec embedded = spec, grpc = spec;
  embedded.name = "ingest_embedded";
  grpc.name = "ingest_grpc";
  SHOAL_RETURN_IF_ERROR(db.CreateCollection(embedded));
  SHOAL_RETURN_IF_ERROR(db.CreateCollection(grpc));
  const size_t n = records.size();
  const size_t batches = (n + o.ingest_batch - 1) / o.ingest_batch;
  SHOAL_ASSIGN_OR_RETURN(double embedded_s, Parallel(batches, o.streams, [&](size_t b) {
                           const size_t first = b * o.ingest_batch;
                           return db.Upsert(
                               embedded.name,
                               records.subspan(first, std::min(o.ingest_batch, n - first)), {});
                         }));
  // One contiguous share of the records per stream.
  const size_t share = (n + o.streams - 1) / o.streams;
  std::atomic<uint64_t> retries{0};
  SHOAL_ASSIGN_OR_RETURN(double grpc_s, Parallel(o.streams, o.streams, [&](size_t s) {
                           const size_t first = std::min(n, s * share);
                           absl::StatusOr<client::IngestResult> result = client.Ingest(
                               grpc.name, records.subspan(first, std::min(share, n - first)),
                               {.batch_records = o.ingest_batch, .max_in_flight = 4});
                           if (result.ok()) retries += result->retries;
                           return result.status();
                         }));
  SHOAL_ASSIGN_OR_RETURN(CollectionInfo a, db.DescribeCollection(embedded.name));
  SHOAL_ASSIGN_OR_RETURN(CollectionInfo b, db.DescribeCollection(grpc.name));
  if (a.num_vectors != n || b.num_vectors != n) {
    return absl::InternalError(
        absl::StrCat("ingested ", a.num_vectors, " and ", b.num_vectors, " records, expected ", n));
  }
  IngestRates rates{n / embedded_s, n / grpc_s};
  std::printf("ingest %zu records x %u floats, batches of %zu, %d threads/streams:\n", n,
              spec.dimension, o.ingest_batch, o.streams);
  std::printf("  embedded DB::Upsert      %9.0f records/s (%.2f s)\n", rates.embedded, embedded_s);
  std::printf("  gRPC Ingest stream       %9.0f records/s (%.2f s, %llu back-off retries)\n",
              rates.grpc, grpc_s, static_cast<unsigned long long>(retries.load()));
  std::printf("  ratio gRPC/embedded ingest: %.3f (goal >= 0.50)\n", rates.grpc / rates.embedded);
  return rates;
}

absl::Status BenchSearch(const ServeBenchOptions& o, DB& db, client::Client& client,
                         const std::string& collection, const Matrix& queries, size_t nq) {
  const size_t dim = queries.cols;
  const size_t batches = (nq + o.batch - 1) / o.batch;
  std::vector<std::vector<std::vector<Hit>>> local(batches), remote(batches);
  auto span_of = [&](size_t b) {
    const size_t first = b * o.batch;
    return std::span<const float>(queries.Row(first), std::min(o.batch, nq - first) * dim);
  };
  const SearchParams params{.k = static_cast<uint32_t>(o.k)};
  auto in_process = [&](size_t b) -> absl::Status {
    SHOAL_ASSIGN_OR_RETURN(local[b], db.Search(collection, span_of(b), params));
    return absl::OkStatus();
  };
  auto over_grpc = [&](size_t b) -> absl::Status {
    SHOAL_ASSIGN_OR_RETURN(remote[b], client.Search(collection, span_of(b), params));
    return absl::OkStatus();
  };
  // Warm both paths (caches, connection) on the first batch, untimed. Then timed passes that
  // alternate which path goes first, best of each kept: a single pass of each favoured whichever
  // ran second (the first warmed the caches of full vectors for the same queries).
  SHOAL_RETURN_IF_ERROR(in_process(0));
  SHOAL_RETURN_IF_ERROR(over_grpc(0));
  double local_s = 1e300, remote_s = 1e300;
  for (int r = 0; r < o.runs; ++r) {
    for (int path = 0; path < 2; ++path) {
      if ((path == 0) == (r % 2 == 0)) {
        SHOAL_ASSIGN_OR_RETURN(double s, Parallel(batches, o.client_threads, in_process));
        local_s = std::min(local_s, s);
      } else {
        SHOAL_ASSIGN_OR_RETURN(double s, Parallel(batches, o.client_threads, over_grpc));
        remote_s = std::min(remote_s, s);
      }
    }
  }
  size_t differing = 0;
  for (size_t b = 0; b < batches; ++b) differing += local[b] != remote[b];
  const double local_qps = nq / local_s, remote_qps = nq / remote_s;
  std::printf(
      "search %zu queries, k=%zu, batches of %zu, %d client threads, index %s, best of %d:\n", nq,
      o.k, o.batch, o.client_threads, o.index.c_str(), o.runs);
  std::printf("  in-process DB::Search    %9.1f QPS (%.2f s)\n", local_qps, local_s);
  std::printf("  gRPC Search (C++ SDK)    %9.1f QPS (%.2f s)\n", remote_qps, remote_s);
  std::printf("  batches with different answers: %zu of %zu\n", differing, batches);
  std::printf("  ratio gRPC/in-process search QPS: %.3f (goal >= 0.70)\n", remote_qps / local_qps);
  return absl::OkStatus();
}

}  // namespace

absl::Status RunServeBench(const ServeBenchOptions& o) {
  if (o.k == 0 || o.queries == 0 || o.client_threads < 1 || o.batch == 0 || o.ingest_batch == 0 ||
      o.streams < 1 || o.runs < 1) {
    return absl::InvalidArgumentError(
        "--k, --queries, --client-threads, --batch, --ingest-batch, --streams and --runs must be "
        ">= 1");
  }
  SHOAL_ASSIGN_OR_RETURN(AnnDataset ds, LoadDataset(o.dataset));
  SHOAL_ASSIGN_OR_RETURN(Metric metric, MetricOfDataset(ds));
  const size_t nq = std::min(o.queries, ds.test.rows);
  const size_t n = o.max_records == 0 ? ds.train.rows : std::min(o.max_records, ds.train.rows);
  std::printf("dataset %s: %zu x %zu base (%zu used), %zu queries, %s\n", ds.name.c_str(),
              ds.train.rows, ds.train.cols, n, nq, ds.distance.c_str());
  std::vector<Record> records(n);
  for (size_t i = 0; i < n; ++i) {
    records[i].key = uint64_t{i};
    records[i].vector.assign(ds.train.Row(i), ds.train.Row(i) + ds.train.cols);
  }

  Dir dir;
  SHOAL_ASSIGN_OR_RETURN(dir.path, MakeDir());
  Options options;
  options.search_threads = o.search_threads;
  options.max_batch_queries = std::max<size_t>(options.max_batch_queries, o.batch);
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<DB> db, DB::Open(dir.path, options));
  rpc::ServerOptions server_options;
  server_options.listen_address = "127.0.0.1:0";
  server_options.max_message_bytes = kMessageBytes;
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<rpc::Server> server,
                         rpc::Server::Start(db.get(), server_options));
  SHOAL_ASSIGN_OR_RETURN(
      std::unique_ptr<client::Client> client,
      client::Client::Connect(server->address(),
                              {.timeout = absl::Minutes(30), .max_message_bytes = kMessageBytes}));
  std::printf("shoald (in-process) on %s, data in %s\n", server->address().c_str(),
              dir.path.c_str());
  std::fflush(stdout);

  const CollectionSpec spec{
      .name = "", .dimension = static_cast<uint32_t>(ds.train.cols), .metric = metric};
  SHOAL_RETURN_IF_ERROR(BenchIngest(o, *db, *client, spec, records).status());
  std::fflush(stdout);
  if (o.index != "flat") {
    const double t0 = NowSeconds();
    SHOAL_RETURN_IF_ERROR(db->BuildIndex("ingest_embedded", o.index));
    std::printf("built %s in %.1f s\n", o.index.c_str(), NowSeconds() - t0);
  }
  SHOAL_RETURN_IF_ERROR(BenchSearch(o, *db, *client, "ingest_embedded", ds.test, nq));
  client.reset();
  server->Shutdown(absl::Seconds(1));
  return absl::OkStatus();
}

void RegisterServeCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ServeBenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "gRPC (C++ SDK, loopback) vs in-process: batch search QPS and ingest rate");
  cmd->add_option("--dataset", options->dataset, "fashion-mnist[:DIR] | PATH.hdf5 | synthetic:...")
      ->capture_default_str();
  cmd->add_option("--index", options->index, "index spec of the searched collection")
      ->capture_default_str();
  cmd->add_option("--queries", options->queries, "test queries")->capture_default_str();
  cmd->add_option("--client-threads", options->client_threads, "search callers, both paths")
      ->capture_default_str();
  cmd->add_option("--search-threads", options->search_threads, "DB threads per Search call")
      ->capture_default_str();
  cmd->add_option("--k", options->k, "neighbours per query")->capture_default_str();
  cmd->add_option("--batch", options->batch, "queries per Search call")->capture_default_str();
  cmd->add_option("--ingest-batch", options->ingest_batch, "records per Upsert / Ingest message")
      ->capture_default_str();
  cmd->add_option("--streams", options->streams, "ingest threads / streams")->capture_default_str();
  cmd->add_option("--max-records", options->max_records, "ingest at most N base vectors")
      ->capture_default_str();
  cmd->add_option("--runs", options->runs,
                  "timed search passes per path, alternating which goes first (best kept)")
      ->capture_default_str();
  cmd->callback([options, exit_code] {
    absl::Status status = RunServeBench(*options);
    if (!status.ok()) std::fprintf(stderr, "shoal_bench serve: %s\n", status.ToString().c_str());
    *exit_code = status.ok() ? 0 : 1;
  });
}

}  // namespace shoal::bench

#include "bench/serve_bench.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

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

// Runs work(0..n-1, thread) on `threads` threads (items handed out in order) and returns the
// seconds it took; the first error stops every thread.
absl::StatusOr<double> Parallel(size_t n, int threads,
                                const std::function<absl::Status(size_t, int)>& work) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  absl::Mutex mu;
  absl::Status first_error;
  const double t0 = NowSeconds();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (size_t i; !failed && (i = next++) < n;) {
        absl::Status s = work(i, t);
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

// The whole process's CPU time and context switches so far (server and client threads alike).
struct ProcessUsage {
  double cpu_seconds = 0;
  double switches = 0;
};

ProcessUsage UsageNow() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return {seconds(usage.ru_utime) + seconds(usage.ru_stime),
          static_cast<double>(usage.ru_nvcsw + usage.ru_nivcsw)};
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
  SHOAL_ASSIGN_OR_RETURN(double embedded_s, Parallel(batches, o.streams, [&](size_t b, int) {
                           const size_t first = b * o.ingest_batch;
                           return db.Upsert(
                               embedded.name,
                               records.subspan(first, std::min(o.ingest_batch, n - first)), {});
                         }));
  // One contiguous share of the records per stream.
  const size_t share = (n + o.streams - 1) / o.streams;
  std::atomic<uint64_t> retries{0};
  SHOAL_ASSIGN_OR_RETURN(double grpc_s, Parallel(o.streams, o.streams, [&](size_t s, int) {
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

// One way of answering the bench's searches, timed over every pass.
struct SearchPath {
  const char* label;
  const char* ratio_name = "";
  const char* ratio_note = "goal >= 0.70";
  // Answers one batch of queries on client thread `thread`.
  std::function<absl::StatusOr<std::vector<std::vector<Hit>>>(
      const std::string& collection, std::span<const float> queries, const SearchParams& params,
      int thread)>
      search;
  std::function<absl::Status(size_t batch, int thread)> run;  // search() of batch `batch`
  std::vector<std::vector<std::vector<Hit>>> answers;         // per batch
  double best_seconds = 1e300;
  ProcessUsage used;  // summed over the passes
  int passes = 0;
};

// Unary Search and SearchStream through `client` (`calls`: "unary", "stream" or "both"), over
// loopback TCP or a Unix socket.
void AddGrpcPaths(bool unix_socket, const std::string& calls, client::Client& client,
                  int client_threads, std::vector<SearchPath>& paths) {
  if (calls != "stream") {
    paths.push_back(
        {.label = unix_socket ? "gRPC Search, Unix socket     " : "gRPC Search (C++ SDK)        ",
         .ratio_name = unix_socket ? "gRPC/UDS" : "gRPC",
         .search = [&client](const std::string& collection, std::span<const float> q,
                             const SearchParams& params,
                             int) { return client.Search(collection, q, params); }});
  }
  if (calls == "unary") return;
  // One stream per client thread, kept open across passes as a real client would.
  auto sessions = std::make_shared<std::vector<std::unique_ptr<client::SearchSession>>>();
  for (int t = 0; t < client_threads; ++t) sessions->push_back(client.NewSearchSession());
  paths.push_back(
      {.label = unix_socket ? "gRPC SearchStream, Unix sock." : "gRPC SearchStream (C++ SDK)  ",
       .ratio_name = unix_socket ? "gRPC stream/UDS" : "gRPC stream",
       .search = [sessions](const std::string& collection, std::span<const float> q,
                            const SearchParams& params,
                            int t) { return (*sessions)[t]->Search(collection, q, params); }});
}

// The least any socket transport can cost on this machine: each client thread sends its queries
// over its own loopback TCP connection to a thread of its own that runs DB::Search and answers
// with a 4-byte word, the hits handed over in memory. No framing, parsing or serialization of the
// answer, so its ratio to in-process bounds what gRPC (or any protocol on sockets) can reach here.
class SocketFloor {
 public:
  static absl::StatusOr<std::unique_ptr<SocketFloor>> Start(DB& db, int threads) {
    auto floor = std::unique_ptr<SocketFloor>(new SocketFloor(db));
    const int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    const bool listening =
        listener >= 0 && bind(listener, reinterpret_cast<sockaddr*>(&address), length) == 0 &&
        listen(listener, threads) == 0 &&
        getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0;
    for (int t = 0; listening && t < threads; ++t) {
      auto conn = std::make_unique<Conn>();
      conn->client = socket(AF_INET, SOCK_STREAM, 0);
      if (conn->client < 0 ||
          connect(conn->client, reinterpret_cast<sockaddr*>(&address), length) != 0) {
        break;
      }
      conn->server = accept(listener, nullptr, nullptr);
      if (conn->server < 0) break;
      const int one = 1;
      setsockopt(conn->client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      setsockopt(conn->server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      conn->thread = std::thread([floor = floor.get(), c = conn.get()] { floor->Serve(*c); });
      floor->conns_.push_back(std::move(conn));
    }
    if (listener >= 0) close(listener);
    if (floor->conns_.size() != static_cast<size_t>(threads)) {
      return absl::InternalError("loopback sockets for the socket floor");
    }
    return floor;
  }

  ~SocketFloor() {
    for (auto& conn : conns_) shutdown(conn->client, SHUT_RDWR);  // its thread reads end of file
    for (auto& conn : conns_) {
      conn->thread.join();
      close(conn->client);
      close(conn->server);
    }
  }

  absl::StatusOr<std::vector<std::vector<Hit>>> Search(const std::string& collection,
                                                       std::span<const float> queries,
                                                       const SearchParams& params, int thread) {
    Conn& c = *conns_[thread];
    c.collection = collection;  // read by the server thread after the bytes below arrive
    c.params = params;
    const uint32_t floats = static_cast<uint32_t>(queries.size());
    uint32_t word = 0;
    if (!SendAll(c.client, &floats, sizeof(floats)) ||
        !SendAll(c.client, queries.data(), queries.size_bytes()) ||
        recv(c.client, &word, sizeof(word), MSG_WAITALL) != sizeof(word)) {
      return absl::InternalError("socket floor: connection lost");
    }
    return std::move(c.answer);
  }

 private:
  struct Conn {
    int client = -1, server = -1;
    std::thread thread;
    std::string collection;
    SearchParams params;
    absl::StatusOr<std::vector<std::vector<Hit>>> answer;
  };

  explicit SocketFloor(DB& db) : db_(db) {}

  static bool SendAll(int fd, const void* data, size_t bytes) {
    for (const char* p = static_cast<const char*>(data); bytes > 0;) {
      const ssize_t sent = send(fd, p, bytes, MSG_NOSIGNAL);
      if (sent <= 0) return false;
      p += sent;
      bytes -= static_cast<size_t>(sent);
    }
    return true;
  }

  void Serve(Conn& c) {
    std::vector<float> queries;
    for (uint32_t floats; recv(c.server, &floats, sizeof(floats), MSG_WAITALL) == sizeof(floats);) {
      queries.resize(floats);
      const ssize_t want = static_cast<ssize_t>(floats * sizeof(float));
      if (recv(c.server, queries.data(), want, MSG_WAITALL) != want) return;
      c.answer = db_.Search(c.collection, queries, c.params);
      const uint32_t word = 1;
      if (!SendAll(c.server, &word, sizeof(word))) return;
    }
  }

  DB& db_;
  std::vector<std::unique_ptr<Conn>> conns_;
};

absl::Status BenchSearch(const ServeBenchOptions& o, DB& db, std::vector<SearchPath>& paths,
                         const std::string& collection, const Matrix& queries, size_t nq) {
  const size_t dim = queries.cols;
  const size_t batches = (nq + o.batch - 1) / o.batch;
  const SearchParams params{.k = static_cast<uint32_t>(o.k)};
  paths.insert(paths.begin(),
               SearchPath{.label = "in-process DB::Search        ",
                          .search = [&db](const std::string& collection, std::span<const float> q,
                                          const SearchParams& params,
                                          int) { return db.Search(collection, q, params); }});
  for (SearchPath& path : paths) {
    path.answers.resize(batches);
    path.run = [&](size_t b, int t) -> absl::Status {
      const size_t first = b * o.batch;
      std::span<const float> q(queries.Row(first), std::min(o.batch, nq - first) * dim);
      SHOAL_ASSIGN_OR_RETURN(path.answers[b], path.search(collection, q, params, t));
      return absl::OkStatus();
    };
  }
  // Warm every path (caches, connection, streams) untimed. Then timed passes that rotate which
  // path goes first, best of each kept: a single pass of each favoured whichever ran later (the
  // first warmed the caches of full vectors for the same queries).
  for (SearchPath& path : paths) {
    path.answers.resize(batches);
    SHOAL_RETURN_IF_ERROR(Parallel(o.client_threads, o.client_threads, [&](size_t b, int t) {
                            return path.run(b % batches, t);
                          }).status());
  }
  for (int r = 0; r < o.runs; ++r) {
    for (size_t i = 0; i < paths.size(); ++i) {
      SearchPath& path = paths[(r + i) % paths.size()];
      const ProcessUsage before = UsageNow();
      SHOAL_ASSIGN_OR_RETURN(double s, Parallel(batches, o.client_threads, path.run));
      const ProcessUsage after = UsageNow();
      path.best_seconds = std::min(path.best_seconds, s);
      path.used.cpu_seconds += after.cpu_seconds - before.cpu_seconds;
      path.used.switches += after.switches - before.switches;
      ++path.passes;
    }
  }
  std::printf(
      "search %zu queries, k=%zu, batches of %zu, %d client threads, index %s, best of %d "
      "(CPU and context switches of the whole process, per call, over all passes):\n",
      nq, o.k, o.batch, o.client_threads, o.index.c_str(), o.runs);
  const double local_qps = nq / paths[0].best_seconds;
  for (const SearchPath& path : paths) {
    const double calls = static_cast<double>(batches) * path.passes;
    std::printf("  %s %9.1f QPS (%.2f s)  %7.1f us CPU/call  %5.2f switches/call\n", path.label,
                nq / path.best_seconds, path.best_seconds, 1e6 * path.used.cpu_seconds / calls,
                path.used.switches / calls);
  }
  for (size_t i = 1; i < paths.size(); ++i) {
    size_t differing = 0;
    for (size_t b = 0; b < batches; ++b) differing += paths[0].answers[b] != paths[i].answers[b];
    std::printf("  %s: batches with different answers: %zu of %zu\n", paths[i].label, differing,
                batches);
  }
  for (size_t i = 1; i < paths.size(); ++i) {
    std::printf("  ratio %s/in-process search QPS: %.3f (%s)\n", paths[i].ratio_name,
                nq / paths[i].best_seconds / local_qps, paths[i].ratio_note);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunServeBench(const ServeBenchOptions& o) {
  if (o.calls != "unary" && o.calls != "stream" && o.calls != "both") {
    return absl::InvalidArgumentError("--calls: unary, stream or both");
  }
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
  if (o.unix_socket) server_options.more_listen_addresses = {"unix:" + dir.path + "/shoald.sock"};
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
  // Searched over loopback TCP and, with --unix-socket, over a Unix socket too.
  std::vector<SearchPath> paths;
  AddGrpcPaths(/*unix_socket=*/false, o.calls, *client, o.client_threads, paths);
  std::unique_ptr<client::Client> local_client;
  if (server->addresses().size() > 1) {
    SHOAL_ASSIGN_OR_RETURN(
        local_client,
        client::Client::Connect(server->addresses()[1], {.timeout = absl::Minutes(30),
                                                         .max_message_bytes = kMessageBytes}));
    AddGrpcPaths(/*unix_socket=*/true, o.calls, *local_client, o.client_threads, paths);
  }
  // The same searches over bare loopback sockets: the bound on any transport's ratio here.
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<SocketFloor> floor,
                         SocketFloor::Start(*db, o.client_threads));
  paths.push_back({.label = "bare loopback TCP (floor)    ",
                   .ratio_name = "socket floor",
                   .ratio_note = "what gRPC or any socket transport could reach here",
                   .search = [&floor](const std::string& collection, std::span<const float> q,
                                      const SearchParams& params,
                                      int t) { return floor->Search(collection, q, params, t); }});
  SHOAL_RETURN_IF_ERROR(BenchSearch(o, *db, paths, "ingest_embedded", ds.test, nq));
  paths.clear();  // the sessions, before their clients
  floor.reset();
  local_client.reset();
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
  cmd->add_option("--calls", options->calls, "gRPC searches by unary calls, streams or both")
      ->check(CLI::IsMember({"unary", "stream", "both"}))
      ->capture_default_str();
  cmd->add_flag("--unix-socket", options->unix_socket,
                "also search over a Unix-domain socket (shoald's --listen unix:PATH)");
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

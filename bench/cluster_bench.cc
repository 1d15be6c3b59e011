#include "bench/cluster_bench.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <span>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "bench/recall.h"
#include "bench/report.h"
#include "cluster/shard_map.h"
#include "rpc/client/shoal_client.h"
#include "shoal/dataset.h"
#include "shoal/db.h"
#include "tests/e2e/cluster_services.h"
#include "tests/e2e/shoald_process.h"

namespace shoal::bench {
namespace {

constexpr int kMessageBytes = 64 << 20;
constexpr char kCollection[] = "bench";

// Runs work(0..n-1) on `threads` threads; the seconds it took, or the first error.
absl::StatusOr<double> Parallel(size_t n, int threads,
                                const std::function<absl::Status(size_t)>& work) {
  std::atomic<size_t> next{0};
  absl::Mutex mu;
  absl::Status first_error;
  const double t0 = NowSeconds();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < n;) {
        if (absl::Status s = work(i); !s.ok()) {
          absl::MutexLock lock(&mu);
          if (first_error.ok()) first_error = s;
          next = n;
        }
      }
    });
  }
  for (std::thread& thread : pool) thread.join();
  if (!first_error.ok()) return first_error;
  return NowSeconds() - t0;
}

// User + system CPU seconds of process `pid` so far, to the nanosecond (its CPU-time clock,
// which counts every thread, exited ones too; /proc/PID/stat counts in 10 ms clock ticks). 0
// when it cannot be read.
double ProcessCpuSeconds(pid_t pid) {
  clockid_t clock;
  timespec t{};
  if (clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &t) != 0) return 0;
  return t.tv_sec + t.tv_nsec / 1e9;
}

double SelfCpuSeconds() { return ProcessCpuSeconds(getpid()); }

// Minor page faults of process `pid` so far (/proc/PID/stat's 10th field); 0 when unreadable.
double MinorFaultsOf(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t end = stat.rfind(')');  // the command name may hold spaces
  if (end == std::string::npos) return 0;
  std::istringstream fields(stat.substr(end + 2));
  std::string field;
  for (int i = 3; i <= 10 && fields >> field; ++i) {
  }
  return std::atof(field.c_str());
}

struct Cluster {
  std::string dir;
  e2e::ClusterServices services;
  std::vector<std::unique_ptr<e2e::ShoaldProcess>> nodes;
  std::vector<std::unique_ptr<client::Client>> clients;

  // Minor page faults so far of each node.
  std::vector<double> Faults() const {
    std::vector<double> faults;
    for (const auto& node : nodes) faults.push_back(MinorFaultsOf(node->pid()));
    return faults;
  }

  // CPU seconds so far of each node, then of nats-server last.
  std::vector<double> Cpu() const {
    std::vector<double> cpu;
    for (const auto& node : nodes) cpu.push_back(ProcessCpuSeconds(node->pid()));
    cpu.push_back(ProcessCpuSeconds(services.nats_pid()));
    return cpu;
  }
};

absl::Status StartCluster(const ClusterBenchOptions& o, uint32_t n, Cluster& c) {
  if (std::string missing = c.services.Missing(); !missing.empty()) {
    return absl::FailedPreconditionError(missing);
  }
  c.dir = e2e::MakeTempDir();
  SHOAL_RETURN_IF_ERROR(c.services.Start(c.dir));
  for (uint32_t i = 0; i < n; ++i) {
    c.nodes.push_back(std::make_unique<e2e::ShoaldProcess>());
    SHOAL_RETURN_IF_ERROR(
        c.nodes.back()->Start(absl::StrCat(c.dir, "/node", i + 1),
                              {"--cluster-etcd", c.services.etcd_url(), "--cluster-nats",
                               c.services.nats_url(), "--node-id", absl::StrCat("n", i + 1)}));
    SHOAL_ASSIGN_OR_RETURN(
        std::unique_ptr<client::Client> client,
        client::Client::Connect(c.nodes.back()->address(),
                                {.timeout = absl::Minutes(5), .max_message_bytes = kMessageBytes}));
    c.clients.push_back(std::move(client));
  }
  return absl::OkStatus();
}

// Creates the sharded collection once every node has registered.
absl::Status CreateSharded(const ClusterBenchOptions& o, Cluster& c, const CollectionSpec& base) {
  CollectionSpec spec = base;
  spec.name = kCollection;
  spec.shards = o.shards;
  spec.replication = 1;
  absl::Status status;
  for (int attempt = 0; attempt < 300; ++attempt) {
    status = c.clients[0]->CreateCollection(spec).status();
    if (!absl::IsUnavailable(status) && !absl::IsFailedPrecondition(status)) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return status;
}

// Waits until every shard's replica has applied its stream (a read-your-writes Get of a key
// of each shard).
absl::Status WaitApplied(const ClusterBenchOptions& o, Cluster& c,
                         std::span<const Record> records) {
  std::vector<Key> keys(o.shards);
  std::vector<bool> found(o.shards);
  for (const Record& r : records) {
    const uint32_t shard = cluster::ShardOfKey(r.key, o.shards);
    if (!found[shard]) keys[shard] = r.key, found[shard] = true;
  }
  ReadOptions fresh;
  fresh.consistency.read_your_writes = true;
  absl::Status status;
  for (int attempt = 0; attempt < 600; ++attempt) {
    status = c.clients[0]->Get(kCollection, keys, fresh).status();
    if (!absl::IsUnavailable(status)) return status;
  }
  return status;
}

struct Phase {
  double seconds = 0;
  std::vector<double> cpu;     // per node, then nats-server
  std::vector<double> faults;  // minor page faults per node
};

std::vector<double> Minus(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return d;
}

// Each node gets one contiguous share of the records, written by o.streams threads.
absl::StatusOr<Phase> IngestCluster(const ClusterBenchOptions& o, Cluster& c,
                                    std::span<const Record> records) {
  const size_t n = records.size(), nodes = c.clients.size();
  const size_t batches = (n + o.ingest_batch - 1) / o.ingest_batch;
  const std::vector<double> cpu0 = c.Cpu(), faults0 = c.Faults();
  const double t0 = NowSeconds();
  SHOAL_RETURN_IF_ERROR(
      Parallel(batches, static_cast<int>(nodes) * o.streams, [&](size_t b) {
        const size_t first = b * o.ingest_batch;
        client::Client& node = *c.clients[b % nodes];  // every node writes from the start
        return node.Upsert(kCollection, records.subspan(first, std::min(o.ingest_batch, n - first)))
            .status();
      }).status());
  SHOAL_RETURN_IF_ERROR(WaitApplied(o, c, records));
  return Phase{NowSeconds() - t0, Minus(c.Cpu(), cpu0), Minus(c.Faults(), faults0)};
}

absl::StatusOr<Phase> SearchCluster(const ClusterBenchOptions& o, Cluster& c, const Matrix& queries,
                                    size_t nq,
                                    std::vector<std::vector<std::vector<Hit>>>& answers) {
  const size_t batches = (nq + o.batch - 1) / o.batch;
  answers.assign(batches, {});
  const SearchParams params{.k = static_cast<uint32_t>(o.k)};
  auto search = [&](size_t b) -> absl::Status {
    const size_t first = b * o.batch;
    std::span<const float> q(queries.Row(first), std::min(o.batch, nq - first) * queries.cols);
    SHOAL_ASSIGN_OR_RETURN(answers[b],
                           c.clients[b % c.clients.size()]->Search(kCollection, q, params));
    return absl::OkStatus();
  };
  for (size_t b = 0; b < std::min(batches, c.clients.size()); ++b) SHOAL_RETURN_IF_ERROR(search(b));
  const std::vector<double> cpu0 = c.Cpu();
  SHOAL_ASSIGN_OR_RETURN(double seconds, Parallel(batches, o.client_threads, search));
  return Phase{seconds, Minus(c.Cpu(), cpu0)};
}

std::string CpuList(const std::vector<double>& cpu, double per, const char* unit) {
  std::string out;
  for (size_t i = 0; i + 1 < cpu.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "" : " ", "n", i + 1, "=", absl::SixDigits(cpu[i] / per));
  }
  absl::StrAppend(&out, " nats=", absl::SixDigits(cpu.back() / per), " ", unit);
  return out;
}

double MaxNode(const std::vector<double>& cpu) {
  return *std::max_element(cpu.begin(), cpu.end() - 1);
}

struct Run {
  Phase ingest, search;
  std::vector<std::vector<std::vector<Hit>>> answers;
};

absl::StatusOr<Run> RunCluster(const ClusterBenchOptions& o, uint32_t n, const CollectionSpec& spec,
                               std::span<const Record> records, const Matrix& queries, size_t nq) {
  Cluster c;
  Run run;
  absl::Status status = StartCluster(o, n, c);
  if (status.ok()) status = CreateSharded(o, c, spec);
  if (status.ok()) {
    absl::StatusOr<Phase> ingest = IngestCluster(o, c, records);
    status = ingest.status();
    if (ingest.ok()) run.ingest = *ingest;
  }
  if (status.ok()) {
    absl::StatusOr<Phase> search = SearchCluster(o, c, queries, nq, run.answers);
    status = search.status();
    if (search.ok()) run.search = *search;
  }
  c.clients.clear();
  c.nodes.clear();
  std::error_code ec;
  std::filesystem::remove_all(c.dir, ec);
  if (!status.ok()) return status;
  const double rate = records.size() / run.ingest.seconds / n;
  std::printf("%u node(s), %u shards, replication 1:\n", n, o.shards);
  std::printf("  ingest  %9.0f records/s per node (%.2f s until applied); CPU %s\n", rate,
              run.ingest.seconds,
              CpuList(run.ingest.cpu, records.size() / 1e6, "us/record").c_str());
  std::string faults;
  for (double f : run.ingest.faults) absl::StrAppend(&faults, " ", f * 1000 / records.size());
  std::printf("  ingest  minor page faults per 1,000 records, per node:%s\n", faults.c_str());
  std::printf("  search  %9.1f QPS (%.2f s); CPU %s\n", nq / run.search.seconds, run.search.seconds,
              CpuList(run.search.cpu, nq / 1e3, "ms/query").c_str());
  std::fflush(stdout);
  return run;
}

struct Embedded {
  double rate = 0;        // records/s
  double cpu = 0;         // CPU seconds per record (the whole process: RocksDB's threads too)
  double system = 0;      // the part of `cpu` in the kernel
  long minor_faults = 0;  // per 1,000 records
};

rusage Usage() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage;
}

double Seconds(const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; }

// Embedded DB::Upsert of the records with o.streams threads, into a fresh DB.
absl::StatusOr<Embedded> IngestEmbedded(const ClusterBenchOptions& o, const CollectionSpec& spec,
                                        std::span<const Record> records) {
  const std::string dir = e2e::MakeTempDir();
  auto result = [&]() -> absl::StatusOr<Embedded> {
    SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<DB> db, DB::Open(dir, Options{}));
    CollectionSpec local = spec;
    local.name = kCollection;
    SHOAL_RETURN_IF_ERROR(db->CreateCollection(local));
    const size_t n = records.size(), batches = (n + o.ingest_batch - 1) / o.ingest_batch;
    const double cpu0 = SelfCpuSeconds();
    const rusage usage0 = Usage();
    SHOAL_ASSIGN_OR_RETURN(double seconds, Parallel(batches, o.streams, [&](size_t b) {
                             const size_t first = b * o.ingest_batch;
                             return db->Upsert(
                                 kCollection,
                                 records.subspan(first, std::min(o.ingest_batch, n - first)), {});
                           }));
    const rusage usage = Usage();
    return Embedded{
        .rate = n / seconds,
        .cpu = (SelfCpuSeconds() - cpu0) / n,
        .system = (Seconds(usage.ru_stime) - Seconds(usage0.ru_stime)) / n,
        .minor_faults = (usage.ru_minflt - usage0.ru_minflt) * 1000 / static_cast<long>(n)};
  }();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return result;
}

// o.embedded_runs embedded ingests, each printed and added to `runs` (unless a warm-up).
absl::Status MeasureEmbedded(const ClusterBenchOptions& o, const CollectionSpec& spec,
                             std::span<const Record> records, const char* when,
                             std::vector<Embedded>* runs) {
  for (int i = 0; i < (runs == nullptr ? 1 : o.embedded_runs); ++i) {
    SHOAL_ASSIGN_OR_RETURN(Embedded e, IngestEmbedded(o, spec, records));
    std::printf(
        "embedded DB::Upsert, %d threads, %s: %.0f records/s; CPU %.3f us/record (system "
        "%.3f); %ld minor faults per 1,000 records\n",
        o.streams, runs == nullptr ? "warm-up, not counted" : when, e.rate, e.cpu * 1e6,
        e.system * 1e6, e.minor_faults);
    std::fflush(stdout);
    if (runs != nullptr) runs->push_back(e);
  }
  return absl::OkStatus();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

void PrintRatios(const ClusterBenchOptions& o, size_t n, size_t nq,
                 const std::vector<Embedded>& runs, const Run& one, const Run& many) {
  std::vector<double> rates, cpus;
  for (const Embedded& e : runs) rates.push_back(e.rate), cpus.push_back(e.cpu);
  const double embedded_rate = Median(rates), embedded_cpu = Median(cpus);
  std::printf("embedded, median of %zu runs: %.0f records/s; CPU %.3f us/record (%.3f-%.3f)\n",
              runs.size(), embedded_rate, embedded_cpu * 1e6,
              *std::min_element(cpus.begin(), cpus.end()) * 1e6,
              *std::max_element(cpus.begin(), cpus.end()) * 1e6);
  const double nodes = o.nodes;
  const double qps1 = nq / one.search.seconds, qpsn = nq / many.search.seconds;
  const double ingest_n = n / many.ingest.seconds / nodes;
  size_t differing = 0;
  for (size_t b = 0; b < one.answers.size(); ++b) differing += one.answers[b] != many.answers[b];
  std::printf("search batches answered differently by 1 and %u nodes: %zu of %zu\n", o.nodes,
              differing, one.answers.size());
  std::printf("measured on this machine (%u cores shared by every process):\n",
              std::thread::hardware_concurrency());
  std::printf("  search QPS(%u) / (%u x QPS(1)):        %.3f (goal >= 0.80)\n", o.nodes, o.nodes,
              qpsn / (nodes * qps1));
  std::printf("  ingest per node (%u nodes) / embedded: %.3f (goal >= 0.50)\n", o.nodes,
              ingest_n / embedded_rate);
  // One machine per node: a node's throughput is bounded by its own CPU per unit of work.
  const double cpu_q1 = MaxNode(one.search.cpu) / nq, cpu_qn = MaxNode(many.search.cpu) / nq;
  const double cpu_r = MaxNode(many.ingest.cpu) / (n / nodes);
  std::printf(
      "projected with one machine per node (CPU-bound; the busiest node's CPU per unit):\n");
  std::printf("  search QPS(%u) / (%u x QPS(1)):        %.3f (%.3f vs %.3f ms CPU per query)\n",
              o.nodes, o.nodes, cpu_q1 / (nodes * cpu_qn), cpu_q1 * 1e3, cpu_qn * 1e3);
  std::printf(
      "  ingest per node / embedded:           %.3f (%.3f vs %.3f us CPU per record; "
      "NATS on its own machines)\n",
      embedded_cpu / cpu_r, cpu_r * 1e6, embedded_cpu * 1e6);
}

}  // namespace

absl::Status RunClusterBench(const ClusterBenchOptions& o) {
  if (o.nodes < 2 || o.shards < 1 || o.k == 0 || o.queries == 0 || o.client_threads < 1 ||
      o.batch == 0 || o.ingest_batch == 0 || o.streams < 1 || o.embedded_runs < 1) {
    return absl::InvalidArgumentError(
        "--nodes must be >= 2; --shards, --k, --queries, --client-threads, --batch, "
        "--ingest-batch, --streams and --embedded-runs >= 1");
  }
  if (std::getenv("SHOAL_BIN_DIR") == nullptr) {  // shoald beside shoal_bench
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").parent_path();
    setenv("SHOAL_BIN_DIR", self.c_str(), 0);
  }
  SHOAL_ASSIGN_OR_RETURN(AnnDataset ds, LoadDataset(o.dataset));
  SHOAL_ASSIGN_OR_RETURN(Metric metric, MetricOfDataset(ds));
  const size_t nq = std::min(o.queries, ds.test.rows), n = ds.train.rows;
  std::printf("dataset %s: %zu x %zu base, %zu queries (k=%zu, batches of %zu, %d callers)\n",
              ds.name.c_str(), n, ds.train.cols, nq, o.k, o.batch, o.client_threads);
  std::vector<Record> records(n);
  for (size_t i = 0; i < n; ++i) {
    records[i].key = uint64_t{i};
    records[i].vector.assign(ds.train.Row(i), ds.train.Row(i) + ds.train.cols);
  }
  const CollectionSpec spec{.dimension = static_cast<uint32_t>(ds.train.cols), .metric = metric};
  // The embedded ingest is short (~0.3 s of CPU at 100k x 128) and the load on a shared machine
  // drifts, so it is measured at three points, around both cluster runs, after a warm-up.
  std::vector<Embedded> embedded;
  SHOAL_RETURN_IF_ERROR(MeasureEmbedded(o, spec, records, "", nullptr));
  SHOAL_RETURN_IF_ERROR(MeasureEmbedded(o, spec, records, "before 1 node", &embedded));
  SHOAL_ASSIGN_OR_RETURN(Run one, RunCluster(o, 1, spec, records, ds.test, nq));
  SHOAL_RETURN_IF_ERROR(MeasureEmbedded(o, spec, records, "between", &embedded));
  SHOAL_ASSIGN_OR_RETURN(Run many, RunCluster(o, o.nodes, spec, records, ds.test, nq));
  SHOAL_RETURN_IF_ERROR(MeasureEmbedded(o, spec, records, "after", &embedded));
  PrintRatios(o, n, nq, embedded, one, many);
  return absl::OkStatus();
}

void RegisterClusterCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ClusterBenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "cluster", "1 vs N shoald nodes (etcd + NATS, loopback): search QPS and ingest per node");
  cmd->add_option("--dataset", options->dataset, "synthetic:... | fashion-mnist[:DIR] | PATH.hdf5")
      ->capture_default_str();
  cmd->add_option("--nodes", options->nodes, "nodes of the larger cluster")->capture_default_str();
  cmd->add_option("--shards", options->shards, "shards of the collection")->capture_default_str();
  cmd->add_option("--queries", options->queries, "test queries")->capture_default_str();
  cmd->add_option("--client-threads", options->client_threads, "search callers")
      ->capture_default_str();
  cmd->add_option("--k", options->k, "neighbours per query")->capture_default_str();
  cmd->add_option("--batch", options->batch, "queries per Search call")->capture_default_str();
  cmd->add_option("--ingest-batch", options->ingest_batch, "records per Upsert")
      ->capture_default_str();
  cmd->add_option("--embedded-runs", options->embedded_runs,
                  "embedded ingests before, between and after the cluster runs (each)")
      ->capture_default_str();
  cmd->add_option("--streams", options->streams, "ingest threads (embedded) / writers per node")
      ->capture_default_str();
  cmd->callback([options, exit_code] {
    absl::Status status = RunClusterBench(*options);
    if (!status.ok()) std::fprintf(stderr, "shoal_bench cluster: %s\n", status.ToString().c_str());
    *exit_code = status.ok() ? 0 : 1;
  });
}

}  // namespace shoal::bench

// Measurement and reporting shared by every shoal_bench subcommand: timing a search over a
// query matrix in batches, latency percentiles, and the CSV result rows (one schema for
// `flat`, `ann`, ... so results can be concatenated and plotted together).
//
//   SHOAL_ASSIGN_OR_RETURN(BatchTiming t, TimeBatches(nq, 100, [&](size_t first, size_t n) {
//     return index.Search(queries.Row(first), n, k, &results);
//   }));
//   CsvWriter csv;  SHOAL_RETURN_IF_ERROR(csv.Open("out.csv"));
//   csv.Write({.system = "faiss-flat", .threads = 1, .qps = t.Qps()});
//
// Thread safety: none (a bench drives these from one thread).
#ifndef SHOAL_BENCH_REPORT_H_
#define SHOAL_BENCH_REPORT_H_

#include <cstdio>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shoal::bench {

// Seconds on a monotonic clock.
double NowSeconds();
// CPU seconds of the calling thread (user and system): unlike wall time, not inflated by the
// time other processes hold the cores (a batch of milliseconds is preempted on a loaded host).
double ThreadCpuSeconds();

// Wall time of each Search call over a query matrix.
struct BatchTiming {
  size_t queries = 0;
  size_t batch = 0;
  double total_seconds = 0;
  // The client threads' CPU time over the pass, summed (ThreadCpuSeconds): for a system that
  // searches on the calling thread, the work without the time other processes held the core.
  double cpu_seconds = 0;
  std::vector<double> call_us;  // one per Search call of up to `batch` queries
  // Per call, the calling thread's CPU microseconds (only where asked for: a clock read costs
  // a system call).
  std::vector<double> call_cpu_us;

  double Qps() const { return total_seconds > 0 ? queries / total_seconds : 0; }
  // Queries per CPU-second of the client threads: steadier than Qps() on a shared host.
  double CpuQps() const { return cpu_seconds > 0 ? queries / cpu_seconds : 0; }
  // Wall time per query: a batch's time divided by its size (for batch 1 the true latency).
  double MeanUsPerQuery() const { return queries ? total_seconds * 1e6 / queries : 0; }
  // Percentile (0..100) of the Search call latencies.
  double CallPercentileUs(double p) const;
};

// Calls search(first, n) for consecutive batches of `batch` queries covering [0, queries),
// timing each call; stops at the first error.
absl::StatusOr<BatchTiming> TimeBatches(size_t queries, size_t batch,
                                        const std::function<absl::Status(size_t, size_t)>& search);

// ann-benchmarks' client protocol: `threads` client threads each take a contiguous slice of
// [0, queries) and issue search(thread, first, n) calls of up to `batch` queries one after
// another (batch 1: single queries), each call timed. on_thread_start(thread) runs first in
// each thread, untimed (e.g. to pin a library's own thread pool to 1). total_seconds is the
// wall time of the whole pass, so Qps() = queries / wall. Returns the first error any thread
// hit (the others stop at their next call). per_call_cpu: also fill call_cpu_us.
absl::StatusOr<BatchTiming> TimeClients(
    size_t queries, size_t batch, int threads, const std::function<void(int)>& on_thread_start,
    const std::function<absl::Status(int, size_t, size_t)>& search, bool per_call_cpu = false);

// One point of a parameter sweep.
struct RecallQps {
  double recall = 0;
  double qps = 0;
  double cpu_qps = 0;  // BatchTiming::CpuQps of the point's least-CPU run; 0: not measured
};

// ann-benchmarks' reading of a sweep at recall r: the best QPS among the points whose recall
// is at least r (the Pareto frontier's value there); nullopt when no point reaches r.
std::optional<double> QpsAtRecall(std::span<const RecallQps> points, double r);
// The same reading of the points' cpu_qps; nullopt also when no point reaching r measured one.
std::optional<double> CpuQpsAtRecall(std::span<const RecallQps> points, double r);

// One CSV result row; unset optionals are written as empty fields.
struct ResultRow {
  std::string system;  // e.g. "shoal-flat", "faiss-flat"
  std::string params;  // ';'-separated knobs, e.g. "dataset=fashion-mnist;k=10;batch=100"
  int threads = 1;
  std::optional<double> recall_at_10;
  double qps = 0;
  std::optional<double> p50_us;  // Search call latency percentiles
  std::optional<double> p99_us;
  std::optional<double> index_ram_bytes;
  std::optional<double> build_seconds;
  std::optional<double> bytes_read_per_query;
  // Full-precision vectors read per query to re-rank quantized candidates; unset for systems
  // without a re-rank step.
  std::optional<double> full_vector_reads_per_query;
};

// Appends rows to a CSV file, writing the header first when the file is new or empty.
class CsvWriter {
 public:
  CsvWriter() = default;
  ~CsvWriter();
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  static constexpr char kHeader[] =
      "system,params,threads,recall_at_10,qps,p50_us,p99_us,index_ram_bytes,build_seconds,"
      "bytes_read_per_query,full_vector_reads_per_query";

  // Internal error if the file cannot be opened for appending.
  absl::Status Open(const std::string& path);
  bool is_open() const { return file_ != nullptr; }
  // No-op when not open.
  absl::Status Write(const ResultRow& row);

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_REPORT_H_

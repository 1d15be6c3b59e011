#include "bench/report.h"

#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"

namespace shoal::bench {
namespace {

std::string Field(const std::optional<double>& v) {
  return v ? absl::StrFormat("%.6g", *v) : std::string();
}

// Quotes a CSV field that holds a comma or quote.
std::string Quoted(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + "\"";
}

// The largest `field` among the points whose recall reaches r and that measured it (> 0).
std::optional<double> BestAtRecall(std::span<const RecallQps> points, double r,
                                   double RecallQps::*field) {
  std::optional<double> best;
  for (const RecallQps& p : points) {
    if (p.recall >= r && p.*field > 0 && (!best || p.*field > *best)) best = p.*field;
  }
  return best;
}

}  // namespace

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double BatchTiming::CallPercentileUs(double p) const {
  if (call_us.empty()) return 0;
  std::vector<double> sorted = call_us;
  std::sort(sorted.begin(), sorted.end());
  // Nearest rank.
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * sorted.size()));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

absl::StatusOr<BatchTiming> TimeBatches(size_t queries, size_t batch,
                                        const std::function<absl::Status(size_t, size_t)>& search) {
  BatchTiming timing;
  timing.queries = queries;
  timing.batch = std::max<size_t>(batch, 1);
  const double start = NowSeconds(), cpu_start = ThreadCpuSeconds();
  for (size_t first = 0; first < queries; first += timing.batch) {
    const size_t n = std::min(timing.batch, queries - first);
    const double t0 = NowSeconds();
    absl::Status status = search(first, n);
    timing.call_us.push_back((NowSeconds() - t0) * 1e6);
    if (!status.ok()) return status;
  }
  timing.total_seconds = NowSeconds() - start;
  timing.cpu_seconds = ThreadCpuSeconds() - cpu_start;
  return timing;
}

absl::StatusOr<BatchTiming> TimeClients(
    size_t queries, size_t batch, int threads, const std::function<void(int)>& on_thread_start,
    const std::function<absl::Status(int, size_t, size_t)>& search, bool per_call_cpu) {
  BatchTiming timing;
  timing.queries = queries;
  timing.batch = std::max<size_t>(batch, 1);
  threads = std::max(threads, 1);
  std::vector<std::vector<double>> call_us(threads), call_cpu_us(threads);
  absl::Mutex mu;
  absl::Status first_error;
  std::atomic<bool> failed{false};
  auto client = [&](int t) {
    on_thread_start(t);
    const double cpu_start = ThreadCpuSeconds();
    const size_t begin = queries * t / threads, end = queries * (t + 1) / threads;
    for (size_t first = begin; first < end && !failed.load(); first += timing.batch) {
      const size_t n = std::min(timing.batch, end - first);
      const double t0 = NowSeconds(), c0 = per_call_cpu ? ThreadCpuSeconds() : 0;
      absl::Status status = search(t, first, n);
      call_us[t].push_back((NowSeconds() - t0) * 1e6);
      if (per_call_cpu) call_cpu_us[t].push_back((ThreadCpuSeconds() - c0) * 1e6);
      if (!status.ok()) {
        absl::MutexLock lock(&mu);
        if (first_error.ok()) first_error = status;
        failed = true;
      }
    }
    const double cpu = ThreadCpuSeconds() - cpu_start;
    absl::MutexLock lock(&mu);
    timing.cpu_seconds += cpu;
  };
  const double start = NowSeconds();
  if (threads == 1) {
    client(0);  // no thread hop: the caller's thread is the one client
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(client, t);
    for (std::thread& th : pool) th.join();
  }
  timing.total_seconds = NowSeconds() - start;
  if (!first_error.ok()) return first_error;
  for (int t = 0; t < threads; ++t) {
    timing.call_us.insert(timing.call_us.end(), call_us[t].begin(), call_us[t].end());
    timing.call_cpu_us.insert(timing.call_cpu_us.end(), call_cpu_us[t].begin(),
                              call_cpu_us[t].end());
  }
  return timing;
}

std::optional<double> QpsAtRecall(std::span<const RecallQps> points, double r) {
  return BestAtRecall(points, r, &RecallQps::qps);
}

std::optional<double> CpuQpsAtRecall(std::span<const RecallQps> points, double r) {
  return BestAtRecall(points, r, &RecallQps::cpu_qps);
}

CsvWriter::~CsvWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status CsvWriter::Open(const std::string& path) {
  struct stat st;
  const bool fresh = stat(path.c_str(), &st) != 0 || st.st_size == 0;
  file_ = std::fopen(path.c_str(), "a");
  if (file_ == nullptr) {
    return absl::InternalError(
        absl::StrCat(path, ": cannot open for appending: ", std::strerror(errno)));
  }
  path_ = path;
  if (fresh) std::fprintf(file_, "%s\n", kHeader);
  return absl::OkStatus();
}

absl::Status CsvWriter::Write(const ResultRow& row) {
  if (file_ == nullptr) return absl::OkStatus();
  std::string line = absl::StrCat(
      Quoted(row.system), ",", Quoted(row.params), ",", row.threads, ",", Field(row.recall_at_10),
      ",", absl::StrFormat("%.6g", row.qps), ",", Field(row.p50_us), ",", Field(row.p99_us), ",",
      Field(row.index_ram_bytes), ",", Field(row.build_seconds), ",",
      Field(row.bytes_read_per_query), ",", Field(row.full_vector_reads_per_query), "\n");
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0) {
    return absl::InternalError(absl::StrCat(path_, ": write failed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace shoal::bench

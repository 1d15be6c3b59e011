// `shoal_bench ann --suite`: the ann protocol over a fixed set of datasets, one table at the end
// (see ann_bench.h).
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "bench/ann_bench.h"

namespace shoal::bench {
namespace {

constexpr double kTargets[] = {0.90, 0.95, 0.99};

std::string LoadAverage() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return absl::StrCat(a, " ", b, " ", c);
}

std::string Cell(std::optional<double> qps) {
  return qps ? absl::StrFormat("%.0f", *qps) : std::string("n/a");
}

const SystemResult* Find(const DatasetResult& d, const std::string& name) {
  for (const SystemResult& s : d.systems) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// Markdown: per dataset a row per system and a row per Shoal / peer ratio.
void PrintTable(const std::vector<DatasetResult>& results) {
  std::printf(
      "\n| dataset | n x d | system | QPS@0.90 | QPS@0.95 | QPS@0.99 | RAM MiB | build s |\n");
  std::printf("|---|---|---|---:|---:|---:|---:|---:|\n");
  for (const DatasetResult& d : results) {
    const std::string shape = absl::StrCat(d.rows, " x ", d.dim, " ", d.distance);
    for (const SystemResult& s : d.systems) {
      std::printf("| %s | %s | %s |", d.name.c_str(), shape.c_str(), s.name.c_str());
      for (double r : kTargets) std::printf(" %s |", Cell(QpsAtRecall(s.curve, r)).c_str());
      std::printf(" %.1f | %.1f |\n", s.ram_bytes / (1 << 20), s.build_seconds);
    }
    const SystemResult* shoal = Find(d, "shoal");
    if (shoal == nullptr) continue;
    for (const SystemResult& s : d.systems) {
      if (&s == shoal) continue;
      std::printf("| %s | %s | **shoal / %s** |", d.name.c_str(), shape.c_str(), s.name.c_str());
      for (double r : kTargets) {
        std::optional<double> a = QpsAtRecall(shoal->curve, r), b = QpsAtRecall(s.curve, r);
        std::printf(" %s |", a && b ? absl::StrFormat("**%.2fx**", *a / *b).c_str() : "n/a");
      }
      std::printf(" %.2fx | %.2fx |\n", s.ram_bytes > 0 ? shoal->ram_bytes / s.ram_bytes : 0.0,
                  s.build_seconds > 0 ? shoal->build_seconds / s.build_seconds : 0.0);
      // The same ratio by the client thread's CPU time: what the host's other load leaves out.
      std::printf("| %s | %s | shoal / %s, CPU time |", d.name.c_str(), shape.c_str(),
                  s.name.c_str());
      for (double r : kTargets) {
        std::optional<double> a = CpuQpsAtRecall(shoal->curve, r), b = CpuQpsAtRecall(s.curve, r);
        std::printf(" %s |", a && b ? absl::StrFormat("%.2fx", *a / *b).c_str() : "n/a");
      }
      std::printf(" | |\n");
    }
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> SuiteDatasets(
    size_t n, const std::vector<std::string>& hdf5) {
  auto gen = [n](size_t d, const char* distance) {
    return absl::StrCat("embedding:n=", n, ",d=", d, ",q=1000,seed=1,distance=", distance);
  };
  std::vector<std::pair<std::string, std::string>> out = {
      {"fashion-mnist", "fashion-mnist"},           {"emb-100-angular", gen(100, "angular")},
      {"emb-128-euclidean", gen(128, "euclidean")}, {"emb-256-angular", gen(256, "angular")},
      {"emb-384-angular", gen(384, "angular")},     {"emb-768-angular", gen(768, "angular")},
      {"emb-960-euclidean", gen(960, "euclidean")}, {"emb-1536-angular", gen(1536, "angular")},
  };
  for (const std::string& path : hdf5) out.emplace_back(path, path);
  return out;
}

absl::Status RunAnnSuite(const AnnBenchOptions& options) {
  AnnBenchOptions o = options;
  if (o.systems == AnnBenchOptions().systems) o.systems = "shoal,hnswlib";
  std::vector<std::string> only = absl::StrSplit(o.suite_only, ',', absl::SkipEmpty());
  std::printf("suite start: load average %s\n", LoadAverage().c_str());
  std::vector<DatasetResult> results;
  for (const auto& [name, spec] : SuiteDatasets(o.suite_n, o.suite_hdf5)) {
    if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
    std::printf("\n######## suite dataset %s (%s), load average %s\n", name.c_str(), spec.c_str(),
                LoadAverage().c_str());
    std::fflush(stdout);
    SHOAL_ASSIGN_OR_RETURN(DatasetResult r, RunAnnDataset(o, spec));
    r.name = name;
    results.push_back(std::move(r));
    PrintTable(results);  // so far: a long run keeps what it measured
  }
  std::printf("\nsuite end: load average %s; %d client thread%s, batch %zu, %d run%s%s\n",
              LoadAverage().c_str(), o.threads, o.threads == 1 ? "" : "s", o.batch, o.runs,
              o.runs == 1 ? "" : "s", o.interleave ? " interleaved" : "");
  PrintTable(results);
  return absl::OkStatus();
}

}  // namespace shoal::bench

#include "bench/tenants_bench.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "bench/blas_env.h"
#include "bench/report.h"
#include "bench/sweep.h"
#include "bench/tenant_systems.h"

namespace shoal::bench {
namespace {

constexpr size_t kK = 10;
constexpr double kTargetRecall = 0.95;
constexpr char kFashionDir[] = "/usr/share/datasets/fashion-mnist";

struct Labelled {
  AnnDataset ds;
  std::vector<int32_t> labels, query_labels;
};

// The dataset (first n rows) and a class per base row and query: Fashion-MNIST's labels, else
// NearestSeedClasses.
absl::StatusOr<Labelled> LoadLabelled(const TenantsBenchOptions& o) {
  Labelled l;
  SHOAL_ASSIGN_OR_RETURN(l.ds, LoadDataset(o.dataset));
  if (o.n != 0 && o.n < l.ds.train.rows) {
    l.ds.train.rows = o.n;
    l.ds.train.data.resize(o.n * l.ds.train.cols);
  }
  if (o.dataset == "fashion-mnist" || absl::StartsWith(o.dataset, "fashion-mnist:")) {
    const std::string dir = o.dataset == "fashion-mnist" ? kFashionDir : o.dataset.substr(14);
    SHOAL_ASSIGN_OR_RETURN(IntMatrix train,
                           ReadIntVectors(dir + "/train-labels-idx1-ubyte.gz", l.ds.train.rows));
    SHOAL_ASSIGN_OR_RETURN(IntMatrix test, ReadIntVectors(dir + "/t10k-labels-idx1-ubyte.gz"));
    l.labels = std::move(train.data);
    l.query_labels = std::move(test.data);
  } else {
    l.labels = NearestSeedClasses(l.ds.train, l.ds.train, o.classes, o.workload.seed);
    l.query_labels = NearestSeedClasses(l.ds.train, l.ds.test, o.classes, o.workload.seed);
  }
  return l;
}

// `rows`: the base's (the shared FAISS indexes' IVF lists follow it).
absl::StatusOr<std::vector<std::unique_ptr<TenantSystem>>> MakeSystems(const TenantsBenchOptions& o,
                                                                       ShoalTenantIndex* shoal,
                                                                       size_t rows) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<double> efs, ParseNumberList(o.hnsw_ef, "--hnsw-ef"));
  SHOAL_ASSIGN_OR_RETURN(std::vector<GridPoint> nprobe,
                         ParseGrid(absl::StrCat("nprobe=", o.faiss_nprobe)));
  std::vector<std::unique_ptr<TenantSystem>> out;
  for (absl::string_view want : absl::StrSplit(o.systems, ',', absl::SkipWhitespace())) {
    if (want == "shoal-tenant") {
      out.push_back(shoal->TenantView());
    } else if (want == "shoal-filter") {
      out.push_back(shoal->FilterView());
    } else if (want == "hnswlib") {
      const std::vector<int> ef(efs.begin(), efs.end());
      out.push_back(MakePerTenantSystem(
          "hnswlib-per-tenant",
          absl::StrCat("M=", o.hnsw_m, ";ef_construction=", o.hnsw_ef_construction),
          [&o, ef](size_t) { return MakeHnswSystem(o.hnsw_m, o.hnsw_ef_construction, ef); }));
    } else if (want == "faiss-ivf") {
      // nlist: at most 4 sqrt(rows) and at least 39 training rows per list (FAISS's floor).
      out.push_back(MakePerTenantSystem(
          "faiss-ivf-per-tenant", "IVF{min(rows/39, 4 sqrt(rows))},Flat", [nprobe](size_t rows) {
            const size_t nlist = std::clamp<size_t>(
                std::min<size_t>(rows / 39, static_cast<size_t>(4 * std::sqrt(rows))), 1, 65536);
            return MakeFaissSystem("faiss-ivf", absl::StrCat("IVF", nlist, ",Flat"), 0, nprobe);
          }));
    } else if (want == "faiss-hnsw-filter") {
      SHOAL_ASSIGN_OR_RETURN(std::vector<GridPoint> ef,
                             ParseGrid(absl::StrCat("efSearch=", o.shared_hnsw_ef)));
      out.push_back(MakeSharedFaissSystem("faiss-hnsw-filter", absl::StrCat("HNSW", o.hnsw_m),
                                          {{"efConstruction", o.shared_hnsw_ef_construction}},
                                          std::move(ef)));
    } else if (want == "faiss-ivf-filter") {
      SHOAL_ASSIGN_OR_RETURN(std::vector<GridPoint> probes,
                             ParseGrid(absl::StrCat("nprobe=", o.shared_nprobe)));
      const size_t nlist = std::max<size_t>(1, static_cast<size_t>(4 * std::sqrt(rows)));
      out.push_back(MakeSharedFaissSystem("faiss-ivf-filter", absl::StrCat("IVF", nlist, ",Flat"),
                                          {}, std::move(probes)));
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--systems: unknown system '", want, "'"));
    }
  }
  return out;
}

// One sweep point of one system: its answers and the fastest timed pass.
struct Point {
  std::string name;
  Neighbors found;
  BatchTiming timing;     // the pass of least wall time
  BatchTiming least_cpu;  // with --cpu-time: the pass of least client-thread CPU time
  bool warm = false;
  TenantScore score;
  std::vector<uint32_t> postings;  // scanned per query, by row (empty: not counted)
};

// QPS and latency of the queries of small (large = false) or large tenants, from one pass.
struct Slice {
  double qps = 0, p50 = 0, p99 = 0;
};
// cpu: from the calls' CPU times instead of their wall times.
Slice SliceOf(const BatchTiming& t, const TenantWorkload& w, std::optional<bool> large,
              bool cpu = false) {
  const std::vector<double>& calls = cpu ? t.call_cpu_us : t.call_us;
  std::vector<double> us;
  for (size_t i = 0; i < calls.size() && i < w.queries.size(); ++i) {
    if (!large || w.IsLarge(w.queries[i].tenant) == *large) us.push_back(calls[i]);
  }
  if (us.empty()) return {};
  double sum = 0;
  for (double u : us) sum += u;
  BatchTiming only;
  only.call_us = std::move(us);
  return {only.call_us.size() * 1e6 / sum, only.CallPercentileUs(50), only.CallPercentileUs(99)};
}

absl::Status TimePass(TenantSystem& sys, const Labelled& l, const TenantWorkload& w, bool cpu_time,
                      Point* pt) {
  const size_t nq = w.queries.size();
  auto search = [&](int, size_t first, size_t n) {
    for (size_t i = first; i < first + n; ++i) {
      const auto& q = w.queries[i];
      SHOAL_RETURN_IF_ERROR(sys.Search(q.tenant, l.ds.test.Row(q.row), kK, &pt->found, i));
    }
    return absl::OkStatus();
  };
  auto prepare = [&](int) { sys.PrepareClientThread(); };
  if (!pt->warm) {
    SHOAL_RETURN_IF_ERROR(TimeClients(nq, 1, 1, prepare, search).status());
    pt->warm = true;
  }
  SHOAL_ASSIGN_OR_RETURN(BatchTiming t,
                         TimeClients(nq, 1, 1, prepare, search, /*per_call_cpu=*/cpu_time));
  if (cpu_time && (pt->least_cpu.cpu_seconds == 0 || t.cpu_seconds < pt->least_cpu.cpu_seconds)) {
    pt->least_cpu = t;
  }
  if (pt->timing.total_seconds == 0 || t.total_seconds < pt->timing.total_seconds) {
    pt->timing = std::move(t);
  }
  pt->postings = sys.PostingsPerQuery();
  return absl::OkStatus();
}

// The fastest point whose recall on the slice reaches kTargetRecall.
struct Best {
  const Point* point = nullptr;
  Slice slice;
  double max_recall = 0;
};
// cpu: by the least-CPU pass's CPU times instead of the fastest pass's wall times.
Best BestAt(const std::vector<Point>& points, const TenantWorkload& w, std::optional<bool> large,
            bool cpu = false) {
  Best b;
  for (const Point& p : points) {
    const double r = !large ? p.score.recall : *large ? p.score.recall_large : p.score.recall_small;
    b.max_recall = std::max(b.max_recall, r);
    if (r < kTargetRecall) continue;
    const Slice s = cpu ? SliceOf(p.least_cpu, w, large, true) : SliceOf(p.timing, w, large);
    if (b.point == nullptr || s.qps > b.slice.qps) b = {&p, s, b.max_recall};
  }
  return b;
}

std::string BestCell(const Best& b) {
  if (b.point == nullptr) return absl::StrFormat("(max recall %.3f)", b.max_recall);
  return absl::StrFormat("%.0f qps %.0f/%.0f us [%s]", b.slice.qps, b.slice.p50, b.slice.p99,
                         b.point->name);
}

double Percentile(std::vector<double> v, double p) {
  BatchTiming t;
  t.call_us = std::move(v);
  return t.CallPercentileUs(p);
}

// hnswlib's RAM for one index of `rows` vectors, from its layout (as HnswSystem::RamBytes counts
// it, with the expected 1 / (M - 1) upper levels per element).
double HnswLayoutBytes(size_t rows, size_t dim, int m) {
  const double level0 = (2.0 * m) * 4 + 4 + dim * 4.0 + 8;
  return rows * (level0 + 12 + (m * 4.0 + 4) / (m - 1));
}

absl::Status PrintScaling(const TenantsBenchOptions& o, const Labelled& l,
                          ShoalTenantIndex& shoal) {
  if (o.scale_tenants.empty()) return absl::OkStatus();
  SHOAL_ASSIGN_OR_RETURN(std::vector<double> counts,
                         ParseNumberList(o.scale_tenants, "--scale-tenants"));
  const double shared = shoal.load().shared_ram_bytes;
  std::printf(
      "\nRAM by tenant count (same base, sharing %.1f; shared index %.1f MiB when "
      "built; tenants' RAM measured against the index with the caches searches filled)\n",
      o.workload.sharing, shared / (1 << 20));
  std::printf("  %8s %12s %14s %16s %20s\n", "tenants", "memberships", "tenants MiB",
              "shoal total/shared", "hnswlib-per-tenant MiB");
  for (double c : counts) {
    TenantWorkloadOptions wo = o.workload;
    wo.tenants = static_cast<size_t>(c);
    SHOAL_ASSIGN_OR_RETURN(TenantWorkload w,
                           MakeTenantWorkload(l.labels, o.classes, l.query_labels, wo));
    SHOAL_ASSIGN_OR_RETURN(double tenant_ram, shoal.ReplaceTenants(w));
    double hnsw = 0;
    for (const auto& m : w.members) hnsw += HnswLayoutBytes(m.size(), l.ds.train.cols, o.hnsw_m);
    std::printf("  %8zu %12zu %14.2f %16.3fx %20.1f\n", wo.tenants, w.Memberships(),
                tenant_ram / (1 << 20), (shared + tenant_ram) / shared, hnsw / (1 << 20));
    std::fflush(stdout);
  }
  std::printf("  (hnswlib-per-tenant computed from its layout, not built)\n");
  return absl::OkStatus();
}

void PrintSummary(const std::vector<std::unique_ptr<TenantSystem>>& systems,
                  const std::vector<std::vector<Point>>& points, const std::vector<double>& build,
                  const TenantWorkload& w, const ShoalTenantLoad& load) {
  std::printf("\nAt recall@10 >= %.2f (fastest point reaching it; QPS p50/p99 of that slice)\n",
              kTargetRecall);
  std::printf("  %-22s %-40s %-40s %-40s\n", "system", "all", "small tenants", "large tenants");
  std::vector<std::array<Best, 3>> best(systems.size());
  for (size_t s = 0; s < systems.size(); ++s) {
    best[s] = {BestAt(points[s], w, std::nullopt), BestAt(points[s], w, false),
               BestAt(points[s], w, true)};
    std::printf("  %-22s %-40s %-40s %-40s\n", systems[s]->name().c_str(),
                BestCell(best[s][0]).c_str(), BestCell(best[s][1]).c_str(),
                BestCell(best[s][2]).c_str());
  }
  std::printf("\n  %-22s %12s %12s %10s %12s\n", "system", "RAM MiB", "SSD MiB", "build s",
              "violations");
  size_t tenant_sys = systems.size();
  for (size_t s = 0; s < systems.size(); ++s) {
    uint64_t violations = 0;
    for (const Point& p : points[s]) violations += p.score.violations;
    std::printf("  %-22s %12.1f %12.1f %10.2f %12llu\n", systems[s]->name().c_str(),
                systems[s]->RamBytes() / (1 << 20), systems[s]->SsdBytes() / (1 << 20), build[s],
                static_cast<unsigned long long>(violations));
    if (systems[s]->name() == "shoal-tenant") tenant_sys = s;
  }
  // Per vector: Shoal's call beside a bare RocksDB write of the same rows, interleaved.
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  std::printf(
      "\nGrants and revokes, us per vector: Shoal / a bare RocksDB WriteBatch of the same grant "
      "rows (WAL, no sync; its memtable holds the same %zu rows), timed after each call\n",
      w.Memberships());
  const double g50 = Percentile(load.grant_us, 50), r50 = Percentile(load.revoke_us, 50);
  const double bg50 = Percentile(load.bare_put_us, 50), br50 = Percentile(load.bare_delete_us, 50);
  std::printf(
      "  single key (%zu calls each): grant p50 %.2f / %.2f (%.2fx), p99 %.1f / %.1f; revoke "
      "p50 %.2f / %.2f (%.2fx), p99 %.1f / %.1f; bare with the old marker row: put %.2f, "
      "delete %.2f\n",
      load.grant_us.size(), g50, bg50, ratio(g50, bg50), Percentile(load.grant_us, 99),
      Percentile(load.bare_put_us, 99), r50, br50, ratio(r50, br50), Percentile(load.revoke_us, 99),
      Percentile(load.bare_delete_us, 99), Percentile(load.bare_put_marker_us, 50),
      Percentile(load.bare_delete_marker_us, 50));
  std::printf(
      "  batched (<= 10k keys a call; CPU time of the calling thread): first grant %.2f / %.2f "
      "(%.2fx; reads the record, finds "
      "its leaf); 100 tenants revoked %.2f / %.2f (%.2fx) and granted again %.2f / %.2f "
      "(%.2fx)\n",
      load.grant_batched_us, load.bare_grant_batched_us,
      ratio(load.grant_batched_us, load.bare_grant_batched_us), load.revoke_batched_us,
      load.bare_revoke_batched_us, ratio(load.revoke_batched_us, load.bare_revoke_batched_us),
      load.regrant_batched_us, load.bare_regrant_batched_us,
      ratio(load.regrant_batched_us, load.bare_regrant_batched_us));
  std::printf("Shoal RAM: shared index %.1f MiB + tenants %.1f MiB = %.3fx the shared index\n",
              load.shared_ram_bytes / (1 << 20), load.tenant_ram_bytes / (1 << 20),
              (load.shared_ram_bytes + load.tenant_ram_bytes) / load.shared_ram_bytes);
  if (tenant_sys == systems.size()) return;
  std::printf(
      "\nshoal-tenant / peer at recall@10 >= %.2f: QPS, and the peer's p50 / shoal-tenant's "
      "(each at its fastest point reaching the target); RAM\n",
      kTargetRecall);
  std::printf("  %-22s %10s %10s %10s %10s %10s %10s %10s\n", "peer", "QPS all", "small", "large",
              "p50 all", "small", "large", "RAM");
  const auto ratio_of = [](double a, double b) {
    return a > 0 && b > 0 ? absl::StrFormat("%.3fx", a / b) : std::string("n/a");
  };
  for (size_t s = 0; s < systems.size(); ++s) {
    if (s == tenant_sys) continue;
    std::printf("  %-22s", systems[s]->name().c_str());
    for (int c = 0; c < 3; ++c) {
      const Best &a = best[tenant_sys][c], &b = best[s][c];
      std::printf(" %10s", a.point && b.point ? ratio_of(a.slice.qps, b.slice.qps).c_str() : "n/a");
    }
    for (int c = 0; c < 3; ++c) {
      const Best &a = best[tenant_sys][c], &b = best[s][c];
      std::printf(" %10s", a.point && b.point ? ratio_of(b.slice.p50, a.slice.p50).c_str() : "n/a");
    }
    std::printf(" %9.3fx\n", systems[tenant_sys]->RamBytes() / systems[s]->RamBytes());
    // The same by the client thread's CPU time (the host's other load left out), with --cpu-time.
    if (points[tenant_sys].empty() || points[tenant_sys][0].least_cpu.call_cpu_us.empty()) continue;
    std::printf("  %-22s", "  by CPU time");
    for (int c = 0; c < 3; ++c) {
      const std::optional<bool> large = c == 0 ? std::nullopt : std::optional<bool>(c == 2);
      const Best a = BestAt(points[tenant_sys], w, large, true),
                 b = BestAt(points[s], w, large, true);
      std::printf(" %10s", a.point && b.point ? ratio_of(a.slice.qps, b.slice.qps).c_str() : "n/a");
    }
    std::printf("\n");
  }
}

// By their tenant's size (which class of tenant is slow, and why): the queries' mean and p50
// latency, their recall and, where the system counts them, the postings each scanned.
std::string SizeBands(const Point& p, const TenantWorkload& w) {
  constexpr size_t kBands[] = {128, 1000, 2048, 4096, SIZE_MAX};
  const BatchTiming& t = p.timing;
  std::string out = p.postings.empty()
                        ? "by tenant size (mean/p50 us, recall, queries):"
                        : "by tenant size (mean/p50 us, recall, postings/query, queries):";
  size_t low = 0;
  for (size_t high : kBands) {
    std::vector<double> us;
    double recall = 0, postings = 0;
    for (size_t i = 0; i < t.call_us.size() && i < w.queries.size(); ++i) {
      const size_t size = w.members[w.queries[i].tenant].size();
      if (size < low || size >= high) continue;
      us.push_back(t.call_us[i]);
      if (i < p.score.by_query.size()) recall += p.score.by_query[i];
      if (i < p.postings.size()) postings += p.postings[i];
    }
    if (!us.empty()) {
      double sum = 0;
      for (double u : us) sum += u;
      const double n = static_cast<double>(us.size());
      BatchTiming only;
      only.call_us = std::move(us);
      absl::StrAppendFormat(&out, " %s%zu: %.0f/%.0f %.3f", high == SIZE_MAX ? ">=" : "<",
                            high == SIZE_MAX ? low : high, sum / n, only.CallPercentileUs(50),
                            recall / n);
      if (!p.postings.empty()) absl::StrAppendFormat(&out, " %.1f", postings / n);
      absl::StrAppendFormat(&out, " (%zu)", only.call_us.size());
    }
    low = high;
  }
  return out;
}

// Scores every point, prints each system's table and appends the CSV rows.
absl::Status ReportPoints(const TenantsBenchOptions& o, const Labelled& l, const TenantWorkload& w,
                          const Neighbors& truth, Metric metric,
                          const std::vector<std::unique_ptr<TenantSystem>>& systems,
                          const std::vector<double>& build,
                          std::vector<std::vector<Point>>& points) {
  CsvWriter csv;
  if (!o.csv.empty()) SHOAL_RETURN_IF_ERROR(csv.Open(o.csv));
  for (size_t s = 0; s < systems.size(); ++s) {
    std::printf("\n== %s (%s), %d interleaved runs\n   %-22s %8s %8s %8s %10s %9s %9s %6s\n",
                systems[s]->name().c_str(), systems[s]->build_params().c_str(), o.runs, "params",
                "recall", "small", "large", "QPS", "p50 us", "p99 us", "viol");
    for (Point& p : points[s]) {
      p.score = ScoreTenantAnswers(l.ds.train, l.ds.test, w, truth, p.found, metric);
      const Slice all = SliceOf(p.timing, w, std::nullopt);
      std::printf("   %-22s %8.4f %8.4f %8.4f %10.1f %9.1f %9.1f %6llu\n", p.name.c_str(),
                  p.score.recall, p.score.recall_small, p.score.recall_large, all.qps, all.p50,
                  all.p99, static_cast<unsigned long long>(p.score.violations));
      std::printf("   %-22s %s\n", "", SizeBands(p, w).c_str());
      SHOAL_RETURN_IF_ERROR(
          csv.Write({.system = systems[s]->name(),
                     .params = absl::StrCat("dataset=", o.dataset, ";n=", l.ds.train.rows,
                                            ";tenants=", w.members.size(), ";", p.name),
                     .recall_at_10 = p.score.recall,
                     .qps = all.qps,
                     .p50_us = all.p50,
                     .p99_us = all.p99,
                     .index_ram_bytes = systems[s]->RamBytes(),
                     .build_seconds = build[s]}));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunTenantsBench(const TenantsBenchOptions& o) {
  if (o.runs < 1) return absl::InvalidArgumentError("--runs: must be at least 1");
  SHOAL_ASSIGN_OR_RETURN(std::vector<double> recalls,
                         ParseNumberList(o.shoal_recalls, "--shoal-recalls"));
  double t0 = NowSeconds();
  SHOAL_ASSIGN_OR_RETURN(Labelled l, LoadLabelled(o));
  SHOAL_ASSIGN_OR_RETURN(Metric metric, MetricOfDataset(l.ds));
  SHOAL_ASSIGN_OR_RETURN(TenantWorkload w,
                         MakeTenantWorkload(l.labels, o.classes, l.query_labels, o.workload));
  size_t large = 0;
  for (size_t t = 0; t < w.members.size(); ++t) large += w.IsLarge(static_cast<uint32_t>(t));
  std::printf(
      "dataset %s: %zu x %zu base, %zu tenants (%zu large: >= %zu vectors; sizes %zu..%zu)"
      ", %zu memberships, %.2f tenants per held vector, %zu queries (%.2f s)\n",
      l.ds.name.c_str(), l.ds.train.rows, l.ds.train.cols, w.members.size(), large,
      w.large_threshold, w.members.back().size(), w.members.front().size(), w.Memberships(),
      w.MeanSharing(), w.queries.size(), NowSeconds() - t0);
  std::printf("openblas: %s\n", BlasDescription().c_str());
  t0 = NowSeconds();
  const Neighbors truth = ExactTenantSearch(l.ds.train, l.ds.test, w, metric, kK);
  std::printf("exact per-tenant oracle: %.2f s\n", NowSeconds() - t0);
  SHOAL_ASSIGN_OR_RETURN(auto shoal, ShoalTenantIndex::Create(o.shoal_spec, recalls));
  SHOAL_ASSIGN_OR_RETURN(ShoalTenantLoad load, shoal->Load(l.ds.train, w, metric, o.grant_samples));
  std::printf("shoal: load %.2f s, build %.2f s (%s)\n", load.load_seconds, load.build_seconds,
              o.shoal_spec.c_str());
  SHOAL_ASSIGN_OR_RETURN(auto systems, MakeSystems(o, shoal.get(), l.ds.train.rows));
  std::vector<double> build(systems.size());
  std::vector<std::vector<Point>> points(systems.size());
  for (size_t s = 0; s < systems.size(); ++s) {
    SHOAL_ASSIGN_OR_RETURN(BuildInfo b, systems[s]->Build(l.ds.train, w, metric, o.build_threads));
    build[s] = b.build_seconds;
    std::printf("built %s (%s): %.2f s, RAM %.1f MiB\n", systems[s]->name().c_str(),
                systems[s]->build_params().c_str(), b.build_seconds,
                systems[s]->RamBytes() / (1 << 20));
    std::fflush(stdout);
    for (const std::string& p : systems[s]->points()) {
      points[s].push_back({p, Neighbors(w.queries.size(), kK)});
    }
  }
  for (int run = 0; run < o.runs; ++run) {  // interleaved: run r of every system, then r + 1
    for (size_t s = 0; s < systems.size(); ++s) {
      for (size_t p = 0; p < points[s].size(); ++p) {
        SHOAL_RETURN_IF_ERROR(systems[s]->SetParams(p));
        SHOAL_RETURN_IF_ERROR(TimePass(*systems[s], l, w, o.cpu_time, &points[s][p]));
      }
    }
  }
  SHOAL_RETURN_IF_ERROR(ReportPoints(o, l, w, truth, metric, systems, build, points));
  PrintSummary(systems, points, build, w, load);
  // Searches add each searched tenant's ids by leaf (tenants/tenant_tree.h) to the tenants' RAM.
  std::printf(
      "Shoal RAM after the timed passes: shared index %.1f MiB + tenants %.1f MiB (their "
      "ids by leaf included) = %.3fx the shared index\n",
      load.shared_ram_bytes / (1 << 20), shoal->TenantRamBytes() / (1 << 20),
      (load.shared_ram_bytes + shoal->TenantRamBytes()) / load.shared_ram_bytes);
  systems.clear();  // the per-tenant peers' RAM back before the scaling runs
  std::fflush(stdout);
  return PrintScaling(o, l, *shoal);
}

void RegisterTenantsCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<TenantsBenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tenants",
      "multi-tenant search: Shoal's tenant sub-trees vs per-tenant hnswlib / FAISS IVF "
      "and the shared index plus a tenant filter");
  cmd->add_option("--dataset", o->dataset, "fashion-mnist[:DIR] | synthetic:... | PATH.hdf5")
      ->capture_default_str();
  cmd->add_option("--n", o->n, "use the first n base rows (0 = all)")->capture_default_str();
  cmd->add_option("--classes", o->classes, "classes of an unlabelled set")->capture_default_str();
  cmd->add_option("--tenants", o->workload.tenants, "tenants")->capture_default_str();
  cmd->add_option("--zipf", o->workload.zipf_s, "Zipf exponent of tenant sizes")
      ->capture_default_str();
  cmd->add_option("--min-size", o->workload.min_size, "smallest tenant")->capture_default_str();
  cmd->add_option("--max-size", o->workload.max_size, "largest tenant (0 = rows/8)")
      ->capture_default_str();
  cmd->add_option("--sharing", o->workload.sharing, "mean tenants per vector")
      ->capture_default_str();
  cmd->add_option("--home-fraction", o->workload.home_fraction, "vectors from home classes")
      ->capture_default_str();
  cmd->add_option("--queries", o->workload.queries, "(tenant, query) pairs")->capture_default_str();
  cmd->add_option("--large", o->workload.large_threshold, "vectors of a large tenant")
      ->capture_default_str();
  cmd->add_option("--seed", o->workload.seed, "workload seed")->capture_default_str();
  cmd->add_option("--systems", o->systems,
                  "shoal-tenant,shoal-filter,hnswlib,faiss-ivf,faiss-hnsw-filter,faiss-ivf-filter")
      ->capture_default_str();
  cmd->add_option("--runs", o->runs, "interleaved timed passes per point")->capture_default_str();
  cmd->add_option("--build-threads", o->build_threads, "peer build threads")->capture_default_str();
  cmd->add_option("--shoal-spec", o->shoal_spec, "DB::BuildIndex spec")->capture_default_str();
  cmd->add_option("--shoal-recalls", o->shoal_recalls, "target_recall sweep")
      ->capture_default_str();
  cmd->add_flag("--cpu-time", o->cpu_time,
                "also time each call's CPU and print ratios by CPU time (two clock reads a call)");
  cmd->add_option("--hnsw-m", o->hnsw_m, "hnswlib M")->capture_default_str();
  cmd->add_option("--hnsw-ef-construction", o->hnsw_ef_construction, "hnswlib ef_construction")
      ->capture_default_str();
  cmd->add_option("--hnsw-ef", o->hnsw_ef, "hnswlib ef sweep")->capture_default_str();
  cmd->add_option("--faiss-nprobe", o->faiss_nprobe, "FAISS nprobe sweep")->capture_default_str();
  cmd->add_option("--shared-hnsw-ef-construction", o->shared_hnsw_ef_construction,
                  "faiss-hnsw-filter's efConstruction")
      ->capture_default_str();
  cmd->add_option("--shared-hnsw-ef", o->shared_hnsw_ef, "faiss-hnsw-filter's efSearch sweep")
      ->capture_default_str();
  cmd->add_option("--shared-nprobe", o->shared_nprobe, "faiss-ivf-filter's nprobe sweep")
      ->capture_default_str();
  cmd->add_option("--grant-samples", o->grant_samples, "single-key grants/revokes timed")
      ->capture_default_str();
  cmd->add_option("--scale-tenants", o->scale_tenants, "tenant counts for the RAM table")
      ->capture_default_str();
  cmd->add_option("--csv", o->csv, "append one row per sweep point");
  cmd->callback([o, exit_code] {
    absl::Status status = RunTenantsBench(*o);
    if (!status.ok()) std::fprintf(stderr, "shoal_bench tenants: %s\n", status.ToString().c_str());
    *exit_code = status.ok() ? 0 : 1;
  });
}

}  // namespace shoal::bench

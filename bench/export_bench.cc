#include "bench/export_bench.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench/dataset_export.h"
#include "bench/ground_truth.h"
#include "bench/recall.h"
#include "bench/report.h"

namespace shoal::bench {

absl::Status RunExport(const ExportOptions& o) {
  if (o.dataset.empty()) return absl::InvalidArgumentError("--dataset: empty");
  if (o.out.empty()) return absl::InvalidArgumentError("--out: empty");
  if (o.k == 0) return absl::InvalidArgumentError("--k: must be at least 1");
  const double t0 = NowSeconds();
  SHOAL_ASSIGN_OR_RETURN(AnnDataset ds, LoadDataset(o.dataset));
  SHOAL_ASSIGN_OR_RETURN(Metric metric, MetricOfDataset(ds));
  const size_t nq = o.queries == 0 ? ds.test.rows : std::min(o.queries, ds.test.rows);
  if (nq == 0) return absl::InvalidArgumentError(absl::StrCat(ds.name, ": no test queries"));
  if (o.warmup_queries > ds.test.rows - nq) {
    return absl::InvalidArgumentError(absl::StrCat("--warmup-queries ", o.warmup_queries, ": ",
                                                   ds.name, " has ", ds.test.rows - nq,
                                                   " test queries after the first ", nq));
  }
  std::printf("dataset %s: %zu x %zu base, %zu queries, %s (loaded in %.2f s)\n", ds.name.c_str(),
              ds.train.rows, ds.train.cols, nq, ds.distance.c_str(), NowSeconds() - t0);
  const double t1 = NowSeconds();
  SHOAL_ASSIGN_OR_RETURN(GroundTruth gt,
                         LoadGroundTruth(ds, o.dataset, nq, metric, o.k,
                                         o.cache_dir.empty() ? DefaultCacheDir() : o.cache_dir));
  std::printf("ground truth: %s (%.2f s)\n", gt.source.c_str(), NowSeconds() - t1);
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  if (ec) return absl::InternalError(absl::StrCat(o.out, ": ", ec.message()));
  SHOAL_RETURN_IF_ERROR(WriteFbin(o.out + "/base.fbin", ds.train));
  SHOAL_RETURN_IF_ERROR(WriteFbinRows(o.out + "/query.fbin", ds.test, nq));
  SHOAL_RETURN_IF_ERROR(WriteIbin(o.out + "/truth.ibin", gt.neighbors));
  if (o.warmup_queries > 0) {  // the queries `ann --warmup-queries W` warms the caches with
    SHOAL_RETURN_IF_ERROR(WriteFbinRows(o.out + "/warmup.fbin", ds.test, o.warmup_queries, nq));
  }
  std::printf("wrote %s/{base.fbin,query.fbin,truth.ibin}: %zu x %zu, %zu queries, k=%zu, %s\n",
              o.out.c_str(), ds.train.rows, ds.train.cols, nq, o.k, ds.distance.c_str());
  return absl::OkStatus();
}

void RegisterExportCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export", "write a dataset's base, queries and exact neighbours as .fbin/.ibin for peers");
  cmd->add_option("--dataset", o->dataset, "any `ann --dataset` spec")->required();
  cmd->add_option("--out", o->out, "output directory")->required();
  cmd->add_option("--queries", o->queries, "first N test queries (0 = all)")->capture_default_str();
  cmd->add_option("--warmup-queries", o->warmup_queries,
                  "also write warmup.fbin: the W test queries after the first N (as `ann`'s)")
      ->capture_default_str();
  cmd->add_option("--k", o->k, "ground-truth neighbours per query")->capture_default_str();
  cmd->add_option("--cache-dir", o->cache_dir, "ground-truth cache (default ~/.cache/shoal_bench)");
  cmd->callback([o, exit_code] {
    absl::Status status = RunExport(*o);
    if (!status.ok()) std::fprintf(stderr, "shoal_bench export: %s\n", status.ToString().c_str());
    *exit_code = status.ok() ? 0 : 1;
  });
}

}  // namespace shoal::bench

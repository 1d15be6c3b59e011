// Pictures of a bench run: recall@10 vs QPS, one curve per system, QPS on a log axis (as
// ann-benchmarks draws them). The drawing is bench/plot_recall_qps.py, run with Debian's
// /usr/bin/python3 and python3-matplotlib; this file hands it the run's rows as a CSV.
//
//   SHOAL_RETURN_IF_ERROR(CheckPlotter());                       // before a long run
//   ...
//   SHOAL_RETURN_IF_ERROR(PlotRecallQps(rows, "ann.png", "fashion-mnist, 1 thread"));
//
// Thread safety: none needed (each call works on its own temporary file).
#ifndef SHOAL_BENCH_PLOT_H_
#define SHOAL_BENCH_PLOT_H_

#include <span>
#include <string>

#include "absl/status/status.h"
#include "bench/report.h"

namespace shoal::bench {

// FailedPrecondition when the plot cannot be drawn here (no python3, no matplotlib, no script),
// so that a run asked to plot fails before it measures anything.
absl::Status CheckPlotter();

// Writes `rows` to a temporary CSV and draws them into `png_path` (rows without recall_at_10
// are left out). Internal when the script fails (its output goes to stderr).
absl::Status PlotRecallQps(std::span<const ResultRow> rows, const std::string& png_path,
                           const std::string& title);

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_PLOT_H_
